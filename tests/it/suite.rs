//! The suite is the user's (issue 43), through the real binaries: the
//! baseline taken at the loop's start in ralph's own worktree while the
//! first turn goes on, a claim refused while a test from it is gone
//! (deleted, renamed, skipped), a moved or added test welcome, and the
//! user's acceptance of a removal.

use crate::support::*;

/// The check: prints `results.txt` (pytest -v's words, which the test
/// rewrites as the agent would change the suite) and fails while a test fails.
const CHECK: &str = "cat results.txt\n! grep -q FAILED results.txt\n";

/// pytest -v's lines for `tests` (id, outcome word) and its summary.
fn results(tests: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let n = tests.len();
    for (i, (id, word)) in tests.iter().enumerate() {
        out.push_str(&format!("{id} {word} [{:>3}%]\n", (i + 1) * 100 / n));
    }
    let count = |w: &str| tests.iter().filter(|t| t.1 == w).count();
    let mut summary = Vec::new();
    for (w, name) in [
        ("FAILED", "failed"),
        ("PASSED", "passed"),
        ("SKIPPED", "skipped"),
    ] {
        if count(w) > 0 {
            summary.push(format!("{} {name}", count(w)));
        }
    }
    out.push_str(&format!("===== {} in 0.01s =====\n", summary.join(", ")));
    out
}

const A: &str = "tests/test_x.py::test_a";
const B: &str = "tests/test_x.py::test_b";

fn suite_loop(tag: &str) -> Project {
    let p = Project::new(tag);
    p.git_init();
    p.write("check.sh", CHECK);
    p.write("results.txt", results(&[(A, "PASSED"), (B, "FAILED")]));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" --completion-promise DONE --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    p
}

/// The agent's turn: the suite as `tests`, then the promise.
fn claim(p: &Project, tests: &[(&str, &str)]) -> Option<serde_json::Value> {
    p.write("results.txt", results(tests));
    p.guard_saw("s1", "Write");
    p.stop("s1", Some("All pass now. <promise>DONE</promise>"))
}

/// The suite's record once its baseline is no longer pending (the
/// process the start left running takes it), within `secs`.
fn baseline_taken(p: &Project, secs: u64) -> Option<String> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        let suite = std::fs::read_to_string(&p.loop_paths().suite).unwrap_or_default();
        if suite.contains("\"state\":\"done\"") || suite.contains("\"state\":\"failed\"") {
            return Some(suite);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

#[test]
fn a_failing_test_deleted_does_not_complete_the_loop_until_the_user_accepts_it() {
    let p = suite_loop("suite-deleted");
    // No Stop yet: the process the start left behind takes the baseline.
    let suite = baseline_taken(&p, 30).expect("the baseline was taken in the background");
    assert!(
        suite.contains(&format!("\"{B}\":{{\"outcome\":\"failed\"")),
        "{suite}"
    );
    let out = claim(&p, &[(A, "PASSED")]);
    assert!(is_block(out.as_ref()), "{out:?}");
    let r = reason(out.as_ref());
    assert!(
        r.contains(&format!("- `{B}` existed at the start and is gone now")),
        "{r}"
    );
    assert!(r.contains(&format!("/ralph-accept {B}")), "{r}");
    assert!(
        message(out.as_ref()).contains("completion refused, tests of the suite are gone"),
        "{out:?}"
    );
    assert_eq!(p.log().last().unwrap()["reason"], "tests_gone");
    // The baseline was taken in ralph's worktree, which is gone again.
    let suite = std::fs::read_to_string(&p.loop_paths().suite).unwrap();
    assert!(suite.contains("\"state\":\"done\""), "{suite}");
    assert!(!p.loop_paths().baseline_trees.join("x").exists());
    assert!(!git(&p.root, &["worktree", "list"]).contains("baseline"));
    // Status says where the suite started and what is gone.
    let (_, status) = p.ralph(&["status"]);
    assert!(
        status.contains("  baseline:  2 tests at the start (1 failing, 0 skipped), from its words (`sh check.sh`)"),
        "{status}"
    );
    assert!(
        status.contains(&format!("  gone:      {B} (missing)")),
        "{status}"
    );
    let (_, json) = p.ralph(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["suite"]["baselines"][0]["state"], "done", "{json}");
    assert_eq!(v["suite"]["baselines"][0]["reading"], "text", "{json}");
    assert_eq!(v["suite"]["gone"][0], format!("{B} (missing)"), "{json}");
    // The user accepts it: the claim stands.
    let (code, said) = p.ralph(&["accept", B]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("Accepted the removal of"), "{said}");
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(p.state().is_none(), "complete");
    // The report, after the end, tells the same.
    let (_, report) = p.ralph(&["report"]);
    assert!(report.contains("refusals: 1"), "{report}");
    assert!(
        report.contains("baseline: 2 tests at the start"),
        "{report}"
    );
    assert!(
        report.contains(&format!("accepted: {B} (at iteration")),
        "{report}"
    );
}

#[test]
fn a_test_skipped_or_renamed_is_gone_and_one_moved_or_added_is_not() {
    let p = suite_loop("suite-skipped");
    let out = claim(&p, &[(A, "SKIPPED"), (B, "PASSED")]);
    let r = reason(out.as_ref());
    assert!(
        r.contains(&format!("- `{A}` existed at the start and is skipped now")),
        "{r}"
    );
    let renamed = "tests/test_x.py::test_b_fixed";
    let out = claim(&p, &[(A, "PASSED"), (renamed, "PASSED")]);
    let r = reason(out.as_ref());
    assert!(
        r.contains(&format!("`{B}` existed at the start and is gone now")),
        "{r}"
    );
    // Moved to a new file with the same name, and a new test added (the
    // renamed one passed at an iteration: it is part of the suite now).
    let moved = "tests/dates/test_y.py::test_b";
    let new = "tests/test_x.py::test_c";
    let all = [
        (A, "PASSED"),
        (moved, "PASSED"),
        (new, "PASSED"),
        (renamed, "PASSED"),
    ];
    let out = claim(&p, &all);
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(p.state().is_none(), "complete");
}

#[test]
fn the_agent_cannot_accept_a_removal_and_an_unknown_test_is_not_accepted() {
    let p = suite_loop("suite-accept");
    let out = claim(&p, &[(A, "PASSED")]);
    assert!(is_block(out.as_ref()));
    // Below the agent's shell (its mark in the environment): refused.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ralph"))
        .args(["accept", B])
        .current_dir(&p.root)
        .env("CLAUDE_PROJECT_DIR", &p.root)
        .env("RALPH_DATA_DIR", p.data_dir())
        .env("AI_AGENT", "claude-code_2-1-328_agent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was run by the agent"));
    let (code, said) = p.ralph(&["accept", "tests/nope.py::test_z"]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("Not a test of this loop's suite"), "{said}");
    // The claim is still refused.
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert!(is_block(out.as_ref()), "{out:?}");
}

#[test]
fn a_failing_test_changed_to_pass_is_named_with_its_file_at_the_end() {
    let p = Project::new("suite-turned");
    p.git_init();
    // The test file is the work's: the agent may change it.
    p.write(
        "tests/test_x.py",
        "def test_b():\n    assert parse('2024-02-29')\n",
    );
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "tests"]);
    p.write("check.sh", CHECK);
    let file_of = |id: &str| id.split("::").next().unwrap().to_string();
    assert_eq!(file_of(B), "tests/test_x.py");
    p.write("results.txt", results(&[(A, "PASSED"), (B, "FAILED")]));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" --completion-promise DONE --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    // The test's body emptied: it passes now.
    p.write("tests/test_x.py", "def test_b():\n    pass\n");
    let out = claim(&p, &[(A, "PASSED"), (B, "PASSED")]);
    assert!(!is_block(out.as_ref()), "{out:?}");
    let m = message(out.as_ref());
    assert!(
        m.contains(
            "they failed at the loop's start and pass now, and the file that holds each was changed"
        ),
        "{m}"
    );
    assert!(m.contains(&format!("{B} (tests/test_x.py: +1 −1)")), "{m}");
    let (_, report) = p.ralph(&["report"]);
    assert!(report.contains("look at:  Look at these"), "{report}");
    // An honest fix elsewhere (the test file untouched) is not named.
    let p = suite_loop("suite-honest");
    p.write("src.py", "def parse(d):\n    return True\n");
    let out = claim(&p, &[(A, "PASSED"), (B, "PASSED")]);
    assert!(!message(out.as_ref()).contains("Look at these"), "{out:?}");
}

/// A loop on a fresh repository (nothing committed, nothing added) whose
/// test file holds B, which fails at the start.
fn untracked_loop(tag: &str) -> Project {
    let p = Project::new(tag);
    p.git_init();
    p.write(
        "tests/test_x.py",
        "def test_b():\n    assert parse('2024-02-29')\n",
    );
    p.write("check.sh", CHECK);
    p.write("results.txt", results(&[(A, "PASSED"), (B, "FAILED")]));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" --completion-promise DONE --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    baseline_taken(&p, 30).expect("the baseline was taken");
    p
}

#[test]
fn a_test_file_git_does_not_track_yet_is_read_as_it_is_not_as_deleted() {
    // The code fixed, the test file untouched: nothing to look at.
    let p = untracked_loop("suite-untracked-honest");
    p.write("src.py", "def parse(d):\n    return True\n");
    let out = claim(&p, &[(A, "PASSED"), (B, "PASSED")]);
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(!message(out.as_ref()).contains("Look at these"), "{out:?}");
    // Its body emptied: named with the lines that changed, not as a file
    // deleted.
    let p = untracked_loop("suite-untracked-emptied");
    p.write("tests/test_x.py", "def test_b():\n    pass\n");
    let out = claim(&p, &[(A, "PASSED"), (B, "PASSED")]);
    assert!(!is_block(out.as_ref()), "{out:?}");
    let m = message(out.as_ref());
    assert!(m.contains(&format!("{B} (tests/test_x.py: +1 −1)")), "{m}");
}

/// libtest's words (`cargo test`) for `tests` (name, `ok` or `FAILED`),
/// with `printed` where a test printed it under `--nocapture`.
fn libtest(tests: &[(&str, &str)], printed: &str) -> String {
    let mut out = format!("\nrunning {} tests\n{printed}", tests.len());
    for (name, word) in tests {
        out.push_str(&format!("test {name} ... {word}\n"));
    }
    let failed = tests.iter().filter(|t| t.1 == "FAILED").count();
    let (verdict, passed) = (
        if failed > 0 { "FAILED" } else { "ok" },
        tests.len() - failed,
    );
    out.push_str(&format!(
        "\ntest result: {verdict}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
    ));
    out
}

#[test]
fn a_run_whose_words_do_not_add_up_cannot_hide_a_test_gone() {
    let p = Project::new("suite-unread");
    p.git_init();
    p.write("check.sh", CHECK);
    let start = [("tests::a", "ok"), ("tests::b", "FAILED")];
    p.write("results.txt", libtest(&start, ""));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" --completion-promise DONE --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    let suite = baseline_taken(&p, 30).expect("the baseline was taken");
    assert!(
        suite.contains("\"tests::b\":{\"outcome\":\"failed\""),
        "{suite}"
    );
    // b deleted, and a test prints the summary of a run that passed whole:
    // the check passes, and its words count nothing.
    let fake = "\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    p.write(
        "results.txt",
        libtest(&[("tests::a", "ok"), ("tests::summary", "ok")], fake),
    );
    p.guard_saw("s1", "Write");
    let out = p.stop("s1", Some("All pass now. <promise>DONE</promise>"));
    assert!(is_block(out.as_ref()), "{out:?}");
    let r = reason(out.as_ref());
    assert!(
        r.contains("`sh check.sh` had 2 tests in the suite, and its output counts none now"),
        "{r}"
    );
    assert!(r.contains("/ralph-accept --all"), "{r}");
    assert_eq!(p.log().last().unwrap()["reason"], "tests_gone");
    // The next turn claims again on the same tree: still refused.
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert!(is_block(out.as_ref()), "{out:?}");
    let (_, status) = p.ralph(&["status"]);
    assert!(
        status.contains("gone:      `sh check.sh`: its output counts no test, 2 in the suite"),
        "{status}"
    );
    // The user accepts it: the claim stands.
    let (code, said) = p.ralph(&["accept", "--all"]);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("an output of `sh check.sh` that counts no test"),
        "{said}"
    );
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(p.state().is_none(), "complete");
}

#[test]
fn the_baseline_runs_in_a_folder_whose_path_a_path_list_can_hold() {
    // cargo puts its target folder in `LD_LIBRARY_PATH` and stops ("failed
    // to join paths") when that folder's path holds a `:`, as any tool that
    // lists folders by `:` does (and Windows refuses such a name at all):
    // every `cargo test` baseline failed so (found in the real client).
    let p = Project::new("suite-path-list");
    p.git_init();
    let check = format!(
        "case \"$(pwd)\" in *:*) echo 'error: failed to join paths' >&2; exit 101;; esac\n{CHECK}"
    );
    p.write("check.sh", &check);
    p.write("results.txt", results(&[(A, "PASSED"), (B, "FAILED")]));
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the tests pass --verify \"sh check.sh\" --completion-promise DONE --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    let suite = baseline_taken(&p, 30).expect("the baseline was taken");
    assert!(suite.contains("\"state\":\"done\""), "{suite}");
    assert!(
        suite.contains(&format!("\"{B}\":{{\"outcome\":\"failed\"")),
        "{suite}"
    );
}
