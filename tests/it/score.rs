//! The loop's measure through the real binaries: a score at each Stop that
//! changed the tree (read from the check's own words), once per tree, the
//! regressions named with what changed since, the best tree kept as a ref,
//! the plateau rule, and the score in status, the status line and the report.

use crate::support::*;

/// The check: prints `results.txt` (pytest's words, written by the test as
/// the agent would change the code) and fails while a test fails. Each run
/// is counted in `.git/score-runs` (outside the working tree).
const CHECK: &str = "echo run >> .git/score-runs\ncat results.txt\n! grep -q FAILED results.txt\n";

/// pytest -v's lines for tests `a` and `b`, and its summary.
fn results(a: bool, b: bool) -> String {
    let word = |ok: bool| if ok { "PASSED" } else { "FAILED" };
    let passed = u32::from(a) + u32::from(b);
    let failed = 2 - passed;
    let mut summary = Vec::new();
    if failed > 0 {
        summary.push(format!("{failed} failed"));
    }
    if passed > 0 {
        summary.push(format!("{passed} passed"));
    }
    format!(
        "tests/test_x.py::a {} [ 50%]\ntests/test_x.py::b {} [100%]\n===== {} in 0.01s =====\n",
        word(a),
        word(b),
        summary.join(", ")
    )
}

fn scoring_loop(tag: &str, args: &str) -> Project {
    let p = Project::new(tag);
    p.git_init();
    p.write("check.sh", CHECK);
    p.write("results.txt", results(false, false));
    let out = p.prompt(
        "s1",
        &format!("/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" {args}"),
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    p
}

/// The agent changes the code (through a guarded tool), then its turn ends.
fn edit_and_stop(p: &Project, a: bool, b: bool) -> Option<serde_json::Value> {
    p.write("results.txt", results(a, b));
    p.guard_saw("s1", "Write");
    p.stop("s1", Some("changed it"))
}

fn runs(p: &Project) -> usize {
    p.read(".git/score-runs").map_or(0, |r| r.lines().count())
}

#[test]
fn each_changed_tree_is_scored_once_and_a_regression_is_named_with_what_changed() {
    let p = scoring_loop("score-regress", "--max-iterations 20");
    let out = edit_and_stop(&p, true, false);
    let r = reason(out.as_ref());
    assert!(r.contains("Score (`sh check.sh`): tests 1/2."), "{r}");
    assert!(message(out.as_ref()).ends_with(" · tests 1/2"), "{out:?}");
    let last = p.log().last().cloned().unwrap();
    assert_eq!(last["score"]["text"], "tests 1/2", "{last}");
    assert_eq!(last["score"]["best"], true, "{last}");
    assert_eq!(runs(&p), 1);
    // A turn that only talked: nothing runs.
    let out = p.stop("s1", Some("thinking"));
    assert!(!reason(out.as_ref()).contains("Score"), "{out:?}");
    assert_eq!(runs(&p), 1);
    // The best tree is kept where git can go back to it.
    let best = git(&p.root, &["rev-parse", "refs/ralph/best"]);
    let kept = git(&p.root, &["show", &format!("{}:results.txt", best.trim())]);
    assert_eq!(kept.trim_end(), results(true, false).trim_end());
    // b passes now, a fails again: a is named, with the file changed since.
    p.write("notes.txt", "tried a new parser\n");
    let out = edit_and_stop(&p, false, true);
    let r = reason(out.as_ref());
    assert!(
        r.contains("- tests/test_x.py::a passed at iteration 1 and fails now; since then you changed notes.txt, results.txt."),
        "{r}"
    );
    assert!(r.contains("tests 1/2 (= since iteration 1)"), "{r}");
    assert_eq!(p.log().last().unwrap()["score"]["regressions"], 1);
    // Run again once before the regression was named (it failed again: not flaky).
    assert_eq!(runs(&p), 3);
    // Status shows the score, its trend and the best; so does its JSON.
    let (_, status) = p.ralph(&["status"]);
    assert!(
        status.contains("score:     tests 1/2 = (sh check.sh)"),
        "{status}"
    );
    assert!(
        status.contains(
            "best:      tests 1/2 at iteration 1, 1 scored since (stops at 5: --max-plateau)"
        ),
        "{status}"
    );
    let (_, json) = p.ralph(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["score"]["now"], "tests 1/2", "{json}");
    assert_eq!(v["score"]["best_iteration"], 1, "{json}");
    assert_eq!(v["score"]["since_best"], 1, "{json}");
}

#[test]
fn a_claim_on_a_scored_tree_reuses_the_score_and_completes() {
    let p = scoring_loop(
        "score-claim",
        "--completion-promise DONE --max-iterations 20",
    );
    edit_and_stop(&p, true, true);
    assert_eq!(runs(&p), 1);
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(message(out.as_ref()).contains("complete"), "{out:?}");
    assert_eq!(runs(&p), 1, "the check ran once for this tree");
    // Edited and claimed in the same turn: one run, scored and judged.
    let p = scoring_loop(
        "score-claim-same-turn",
        "--completion-promise DONE --max-iterations 20",
    );
    p.write("results.txt", results(true, true));
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("all pass <promise>DONE</promise>"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert_eq!(runs(&p), 1, "one run scores and judges the claim");
    assert_eq!(p.log().last().unwrap()["score"]["text"], "tests 2/2");
}

#[test]
fn a_loop_that_edits_without_gaining_stops_at_the_plateau_and_names_the_best() {
    let p = scoring_loop("score-plateau", "--max-plateau 2 --max-iterations 20");
    assert!(is_block(edit_and_stop(&p, true, false).as_ref()));
    p.write("notes.txt", "one\n");
    assert!(is_block(edit_and_stop(&p, true, false).as_ref()));
    p.write("notes.txt", "two\n");
    let out = edit_and_stop(&p, false, true);
    assert!(!is_block(out.as_ref()), "{out:?}");
    let m = message(out.as_ref());
    assert!(
        m.contains("2 iterations in a row changed the code without beating the best score, tests 1/2 at iteration 1 (plateau rule, --max-plateau 2)"),
        "{m}"
    );
    let best = git(&p.root, &["rev-parse", "refs/ralph/best"]);
    assert!(
        m.contains(&format!("git restore --source={} -- .", &best.trim()[..12])),
        "{m}"
    );
    assert_eq!(p.log().last().unwrap()["reason"], "plateau");
    assert!(p.state().is_none());
    // The report draws the curve.
    let (_, report) = p.ralph(&["report"]);
    assert!(report.contains("score:    ▄▄▄ tests 1/2 now; best tests 1/2 at iteration 1, nothing gained after it (2 iterations"), "{report}");
    let page = p.path("report.html");
    let (code, _) = p.ralph(&["report", "--html", page.to_str().unwrap()]);
    assert_eq!(code, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg id=\"score\""), "{html}");
    assert_eq!(html.matches("class=\"best\"").count(), 1, "{html}");
    assert_eq!(html.matches("class=\"regression\"").count(), 1, "{html}");
    looks_drawn(&p, &page);
}

/// The page in a headless browser: the screenshot shows the best ringed in
/// green and the regression in red (the curve's own colours).
fn looks_drawn(p: &Project, page: &std::path::Path) {
    let Some(browser) = crate::browser::browser() else {
        eprintln!(
            "SKIPPED: no headless Chromium (apt-get install chromium) to draw the score curve"
        );
        return;
    };
    let shot = p.path("score.png");
    // circle.best: #2a2; circle.regression: #c22.
    let found = crate::browser::colours_in_screenshot(
        &browser,
        page,
        &shot,
        &[[0x22, 0xaa, 0x22], [0xcc, 0x22, 0x22]],
    )
    .unwrap();
    assert!(found[0] > 20, "no green best ring in the screenshot");
    assert!(found[1] > 20, "no red regression in the screenshot");
    if let Ok(keep) = std::env::var("RALPH_KEEP_SCORE_SHOT") {
        let _ = std::fs::copy(&shot, keep);
    }
}

#[test]
fn a_loop_that_gains_is_not_stopped_and_the_status_line_shows_the_trend() {
    let p = scoring_loop("score-gains", "--max-plateau 1 --max-iterations 20");
    assert!(is_block(edit_and_stop(&p, false, false).as_ref()));
    assert!(is_block(edit_and_stop(&p, true, false).as_ref()));
    let line = crate::statusline::plain_line(&p);
    assert!(line.contains("tests 1/2 ↑1"), "{line}");
    let out = edit_and_stop(&p, true, true);
    assert!(
        is_block(out.as_ref()),
        "no promise: the loop goes on ({out:?})"
    );
    assert!(
        message(out.as_ref()).ends_with(" · tests 2/2 ↑1"),
        "{out:?}"
    );
}

#[test]
fn a_promise_is_not_done_while_a_test_that_passed_fails_now() {
    // No check: the promise decides, measured by --score.
    let p = Project::new("score-promise");
    p.git_init();
    p.write("check.sh", CHECK);
    p.write("results.txt", results(false, false));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --completion-promise DONE --score \"sh check.sh\" --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    edit_and_stop(&p, true, false);
    p.write("results.txt", results(false, true));
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("b passes now <promise>DONE</promise>"));
    let r = reason(out.as_ref());
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(
        r.contains("1 test that passed at an earlier iteration fails now: tests/test_x.py::a."),
        "{r}"
    );
    assert_eq!(p.log().last().unwrap()["reason"], "verify_failed");
    p.write("results.txt", results(true, true));
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("both pass <promise>DONE</promise>"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(p.state().is_none());
}

/// A turn of `said` whose messages used `tokens`, as the client writes it.
fn turn_used(p: &Project, said: &str, tokens: u64) {
    use std::io::Write;
    let line = serde_json::json!({"type": "assistant", "uuid": format!("u-{tokens}"),
        "message": {"id": format!("m-{tokens}"), "role": "assistant",
            "content": [{"type": "text", "text": said}],
            "usage": {"input_tokens": tokens, "output_tokens": 0}}});
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p.transcript())
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

#[test]
fn a_measured_loop_counts_its_tokens_per_point_without_a_budget() {
    let p = scoring_loop("score-tokens", "--max-iterations 20");
    p.write("results.txt", results(true, false));
    p.guard_saw("s1", "Write");
    turn_used(&p, "fixed a", 1000);
    p.stop("s1", Some("fixed a"));
    p.write("results.txt", results(true, true));
    p.guard_saw("s1", "Write");
    turn_used(&p, "fixed b", 3000);
    p.stop("s1", Some("fixed b"));
    let last = p.log().last().cloned().unwrap();
    assert_eq!(last["tokens"], 4000, "{last}");
    let (_, status) = p.ralph(&["status"]);
    assert!(status.contains("3k tokens a point"), "{status}");
}

#[test]
fn the_score_commands_files_are_pinned_like_a_checks() {
    let p = Project::new("score-pinned");
    p.git_init();
    p.write("check.sh", CHECK);
    p.write("results.txt", results(false, false));
    p.write("score.sh", "echo 3\n");
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" --score \"sh score.sh\" --max-plateau 2 --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    let state = p.state().unwrap();
    assert!(state.contains(r#""score.sh":"sh score.sh""#), "{state}");
    // Rewritten anyway (an interpreter's write): put back before the score runs.
    p.write("results.txt", results(true, false));
    p.write("score.sh", "echo 0\n");
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("changed it"));
    let r = reason(out.as_ref());
    assert!(
        r.contains("ralph put back the pinned file(s) score.sh"),
        "{r}"
    );
    assert!(r.contains("Score (`sh score.sh`): score 3."), "{r}");
    assert_eq!(p.read("score.sh").as_deref(), Some("echo 3\n"));
}

#[test]
fn the_score_history_deleted_or_put_back_mid_loop_is_named_and_the_user_decides() {
    let p = scoring_loop("score-memory", "--max-iterations 20");
    let paths = p.loop_paths();
    let seal = |f: &std::path::Path| ralph_core::seal::seal_path(f);
    edit_and_stop(&p, true, false);
    // The agent keeps a copy of the history as it is now...
    let older = std::fs::read(&paths.scores).unwrap();
    let older_seal = std::fs::read(seal(&paths.scores)).unwrap();
    edit_and_stop(&p, false, true);
    // ...deletes the history with its seal: no regression, no plateau.
    std::fs::remove_file(&paths.scores).unwrap();
    std::fs::remove_file(seal(&paths.scores)).unwrap();
    let out = p.stop("s1", Some("went on"));
    let m = message(out.as_ref());
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(
        m.contains("scores.json (the score of each iteration) was deleted outside ralph"),
        "{m}"
    );
    assert_eq!(
        p.log().last().unwrap()["decision"],
        "tamper",
        "{:?}",
        p.log()
    );
    // The user accepts the folder as it is: the loop goes on from there.
    let (code, said) = p.ralph(&["resume"]);
    assert_eq!(code, 0, "{said}");
    let out = edit_and_stop(&p, true, true);
    assert!(is_block(out.as_ref()), "{out:?}");
    // The older copy, with its own older seal, put back: named too.
    let scored = edit_and_stop(&p, true, false);
    assert!(is_block(scored.as_ref()), "{scored:?}");
    std::fs::write(&paths.scores, &older).unwrap();
    std::fs::write(seal(&paths.scores), &older_seal).unwrap();
    let out = p.stop("s1", Some("went on"));
    let m = message(out.as_ref());
    assert!(
        m.contains("scores.json (the score of each iteration) was put back from an older copy"),
        "{m}"
    );
}

#[test]
fn a_claim_the_turn_after_a_regression_on_a_tree_not_changed_since_is_refused() {
    let p = Project::new("score-claim-after");
    p.git_init();
    p.write("check.sh", CHECK);
    p.write("results.txt", results(false, false));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --completion-promise DONE --score \"sh check.sh\" --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    edit_and_stop(&p, true, false);
    // a regresses: named at this Stop.
    let out = edit_and_stop(&p, false, true);
    assert!(reason(out.as_ref()).contains("tests/test_x.py::a passed at iteration 1"));
    assert_eq!(runs(&p), 3, "run again before the regression is named");
    // The next turn changes nothing and claims: the tree is not scored
    // again, and it is still the tree that regressed.
    let out = p.stop("s1", Some("All done. <promise>DONE</promise>"));
    assert!(is_block(out.as_ref()), "{out:?}");
    let r = reason(out.as_ref());
    assert!(
        r.contains("1 test that passed at an earlier iteration fails now: tests/test_x.py::a."),
        "{r}"
    );
    assert_eq!(runs(&p), 3, "an unchanged tree is not scored again");
    assert!(p.state().is_some());
}

/// What ralph adds to a check it knows, as the loop's start shows it, and a
/// score's cases as the suite's inventory reads them (issue 43).
#[test]
fn a_known_runner_writes_its_report_and_a_score_names_its_tests() {
    use ralph_core::score::{Outcome, Reading, Score, TestCase, launch};
    assert_eq!(
        launch::shown("pytest -q"),
        "pytest --junitxml=<ralph's report>.xml -o junit_family=xunit1 -q"
    );
    assert_eq!(launch::shown("cargo test"), "cargo test");
    let json = r#"{"reader":"pytest","passed":1,"failed":0}"#;
    let mut s: Score = serde_json::from_str(json).unwrap();
    assert_eq!((s.skipped, s.reading), (0, Reading::Text));
    assert!(!s.names_every_test(), "counted, not named");
    s.cases.push(TestCase {
        id: "t.py::a".into(),
        outcome: Outcome::Passed,
        file: Some("t.py".into()),
    });
    assert!(s.names_every_test());
}

#[test]
fn a_test_that_flips_on_the_same_tree_is_flaky_not_a_regression_and_not_a_best() {
    // The check fails test a every other run (a counter outside the tree).
    let p = Project::new("score-flaky");
    p.git_init();
    let flip = "n=$(cat .git/flip 2>/dev/null || echo 0); echo $((n+1)) > .git/flip\n\
        if [ $((n % 2)) = 1 ]; then cat flipped.txt; else cat results.txt; fi\n";
    p.write("check.sh", flip);
    p.write("results.txt", results(false, false));
    p.write("flipped.txt", results(false, true));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --score \"sh check.sh\" --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    // Run 1 (n=0): a passes. Iteration 1 scores a passing.
    std::fs::write(p.root.join(".git/flip"), "0").unwrap();
    edit_and_stop(&p, true, false);
    // Iteration 2: the first run (n=1) fails a, the run again (n=2) passes it.
    let out = edit_and_stop(&p, true, true);
    let r = reason(out.as_ref());
    assert!(!r.contains("Passed before, fails now"), "{r}");
    assert!(
        r.contains("Flaky (failed, then passed when ralph ran the check again on the same tree"),
        "{r}"
    );
    assert!(r.contains("tests/test_x.py::a"), "{r}");
    let scores = std::fs::read_to_string(p.loop_paths().scores).unwrap();
    assert!(
        scores.contains("\"flaky\":[\"tests/test_x.py::a\"]"),
        "{scores}"
    );
}

#[test]
fn a_summary_a_test_printed_is_no_count_and_never_the_best() {
    // The first scored iteration no count: not a best either.
    let p = scoring_loop("score-unread-first", "--max-iterations 20");
    let twice = "tests/test_x.py::a FAILED [ 50%]\n===== 2 passed in 0.01s =====\ntests/test_x.py::b FAILED [100%]\n===== 2 failed in 0.01s =====\n";
    p.write("results.txt", twice);
    p.guard_saw("s1", "Write");
    p.stop("s1", Some("changed it"));
    let last = p.log().last().cloned().unwrap();
    assert!(last["score"].get("best").is_none(), "{last}");
    assert!(edit_and_stop(&p, true, false).is_some());
    let last = p.log().last().cloned().unwrap();
    assert_eq!(last["score"]["best"], true, "{last}");

    let p = scoring_loop("score-unread", "--max-plateau 2 --max-iterations 20");
    assert!(is_block(edit_and_stop(&p, true, false).as_ref()));
    let best = git(&p.root, &["rev-parse", "refs/ralph/best"]);
    // The check passes now, but a test printed pytest's summary before
    // the runner's own: two closing lines, no count. Not a best, though
    // the check passed.
    let twice = "tests/test_x.py::a PASSED [ 50%]\n===== 2 passed in 0.01s =====\ntests/test_x.py::b PASSED [100%]\n===== 2 passed in 0.01s =====\n";
    p.write("results.txt", twice);
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("changed it"));
    assert!(is_block(out.as_ref()), "{out:?}");
    let last = p.log().last().cloned().unwrap();
    assert_eq!(
        last["score"]["text"], "no count (the runner's words do not add up)",
        "{last}"
    );
    assert!(last["score"].get("best").is_none(), "{last}");
    assert_eq!(git(&p.root, &["rev-parse", "refs/ralph/best"]), best);
    // Once more: the plateau stops the loop at the best real count.
    p.write("notes.txt", "again\n");
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("changed it"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    let m = message(out.as_ref());
    assert!(
        m.contains("2 iterations in a row changed the code without beating the best score, tests 1/2 at iteration 1"),
        "{m}"
    );
}
