//! Verified completion and the no-progress breaker, through the real binaries.

use crate::support::*;

fn start(p: &Project, args: &str) {
    let out = p.prompt("s1", &format!("/ralph:ralph-loop {args}"));
    assert!(
        out.as_ref().is_some_and(|v| v.get("decision").is_none()),
        "{out:?}"
    );
}

#[test]
fn failing_check_refuses_the_promise_with_its_output_then_passing_completes() {
    let p = Project::new("vfail");
    p.git_init();
    p.write(
        "check.sh",
        "echo checking; test -f fixed || { echo 'assertion failed: fixed missing' >&2; exit 7; }\n",
    );
    start(
        &p,
        "Make the check pass --completion-promise DONE --verify \"sh check.sh\" --max-iterations 10",
    );
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    let r = reason(out.as_ref());
    assert!(r.contains("Completion refused"), "{r}");
    assert!(
        r.contains("`sh check.sh` failed (exit 7)")
            && r.contains("assertion failed: fixed missing"),
        "{r}"
    );
    assert!(message(out.as_ref()).contains("check failed (exit 7)"));
    assert_eq!(p.log().last().unwrap()["reason"], "verify_failed");
    let (_, status) = p.setup(&["status"]);
    assert!(
        status.contains("check:     loop: `sh check.sh` FAILED (exit 7)"),
        "{status}"
    );

    p.write("fixed", "yes");
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert!(!is_block(out.as_ref()));
    assert!(
        message(out.as_ref()).contains("verified (`sh check.sh` exited 0)"),
        "{out:?}"
    );
    assert!(p.state().is_none());
}

#[test]
fn a_check_that_hangs_is_reported_as_a_timeout() {
    let p = Project::new("vtimeout");
    p.git_init();
    start(
        &p,
        "x --completion-promise DONE --verify \"sleep 30\" --verify-timeout 1",
    );
    let t = std::time::Instant::now();
    let r = reason(p.stop("s1", Some("<promise>DONE</promise>")).as_ref());
    assert!(t.elapsed().as_secs() < 20);
    assert!(r.contains("timed out after 1 s"), "{r}");
}

#[test]
fn without_a_claim_no_check_runs() {
    let p = Project::new("vnoclaim");
    p.git_init();
    start(&p, "x --completion-promise DONE --verify \"touch ran\"");
    assert!(is_block(p.stop("s1", Some("still working")).as_ref()));
    assert!(!p.path("ran").exists());
}

#[test]
fn story_with_failing_check_is_fed_again_and_not_rerun_on_the_same_tree() {
    let p = Project::new("vstory");
    p.git_init();
    p.write(
        "prd.json",
        r#"{"userStories":[
          {"id":"US-1","title":"Greeting","passes":false,"verify":"echo run >> runs.log; grep -q hello out.txt"},
          {"id":"US-2","title":"Farewell","passes":false,"dependsOn":["US-1"]}]}"#,
    );
    p.write(".gitignore", "runs.log\n.claude/\n");
    start(&p, "--prd-file prd.json --max-iterations 20 --max-stalls 0");
    // The model claims US-1 without doing it.
    let claimed = p
        .read("prd.json")
        .unwrap()
        .replacen("\"passes\":false", "\"passes\":true", 1);
    p.write("prd.json", &claimed);
    let out = p.stop("s1", None);
    let r = reason(out.as_ref());
    assert!(
        r.contains("claim that US-1 passes was refused") && r.contains("exit 2"),
        "{r}"
    );
    assert!(r.contains("story US-1"));
    assert_eq!(p.read("runs.log").unwrap().lines().count(), 1);
    // Same tree: the failed result is reused, not re-run.
    reason(p.stop("s1", None).as_ref());
    assert_eq!(p.read("runs.log").unwrap().lines().count(), 1);
    // Fixed: the check runs again, passes, and the next story is fed.
    p.write("out.txt", "hello\n");
    let r = reason(p.stop("s1", None).as_ref());
    assert!(r.contains("story US-2"), "{r}");
    assert_eq!(p.read("runs.log").unwrap().lines().count(), 2);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.loop_paths().verify).unwrap()).unwrap();
    assert_eq!(v["stories"]["US-1"]["exit"], 0);
}

#[test]
fn stalled_loop_stops_at_n() {
    let p = Project::new("stall");
    p.git_init();
    p.write(".gitignore", ".claude/\n");
    start(&p, "x --max-stalls 2");
    // Iteration 1 changes a file: progress.
    p.guard_saw("s1", "Write");
    p.write("a.txt", "1");
    assert!(is_block(p.stop("s1", Some("x")).as_ref()));
    // Two unchanged iterations in a row stop the loop.
    assert!(is_block(p.stop("s1", Some("x")).as_ref()));
    let out = p.stop("s1", Some("x"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(
        message(out.as_ref()).contains("did not change for 2 iterations"),
        "{}",
        message(out.as_ref())
    );
    assert_eq!(p.log().last().unwrap()["reason"], "stalled");
}

#[test]
fn ralphs_own_files_do_not_count_as_progress_when_claude_dir_is_not_ignored() {
    let p = Project::new("stallnoignore");
    p.git_init();
    // No .gitignore: .claude/ralph-loop.* show up as untracked and change every Stop.
    start(&p, "x --max-stalls 2");
    assert!(is_block(p.stop("s1", Some("x")).as_ref()));
    let out = p.stop("s1", Some("x"));
    assert_eq!(p.log().last().unwrap()["reason"], "stalled", "{out:?}");
}

#[test]
fn editing_an_already_modified_file_counts_as_progress() {
    let p = Project::new("stall2");
    p.git_init();
    p.write(".gitignore", ".claude/\n");
    start(&p, "x --max-stalls 1");
    for i in 0..3 {
        p.guard_saw("s1", "Bash");
        p.write("a.txt", "x".repeat(i + 1));
        assert!(
            is_block(p.stop("s1", Some("x")).as_ref()),
            "edit {i} is progress"
        );
    }
    assert!(!is_block(p.stop("s1", Some("x")).as_ref()));
}

#[test]
fn policy_full_gate_is_the_default_check() {
    let p = Project::new("gate");
    p.git_init();
    p.write(".ralph/command-policy", "[gates]\nfull | exit 3\n");
    let msg = message(
        p.prompt("s1", "/ralph:ralph-loop x --completion-promise DONE")
            .as_ref(),
    );
    assert!(
        msg.contains("[gates] full row of .ralph/command-policy"),
        "{msg}"
    );
    let r = reason(p.stop("s1", Some("<promise>DONE</promise>")).as_ref());
    assert!(r.contains("`exit 3` failed (exit 3)"), "{r}");
}

#[test]
fn a_turn_that_called_a_file_tool_is_progress_without_asking_git() {
    let p = Project::new("stalltools");
    p.git_init();
    p.write(".gitignore", ".claude/\ntranscript.jsonl\n");
    start(&p, "x --max-stalls 2");
    let edit_turn = [
        r#"{"type":"user","message":{"role":"user","content":"Stop hook feedback:\nx"}}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Edit","input":{}}]}}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"edited"}]}}"#,
    ];
    p.write_transcript(&(edit_turn.join("\n") + "\n"));
    // The tree never changes, but each turn edited: no stall.
    for _ in 0..3 {
        p.guard_saw("s1", "Edit");
        assert!(is_block(p.stop("s1", Some("edited")).as_ref()));
    }
    let talk_turn = [
        r#"{"type":"user","message":{"role":"user","content":"Stop hook feedback:\nx"}}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"just talking"}]}}"#,
    ];
    p.write_transcript(&(talk_turn.join("\n") + "\n"));
    // Edits reset the count; two talking turns on an unchanged tree stop the loop.
    assert!(is_block(p.stop("s1", Some("just talking")).as_ref()));
    // (Other words: the same words on the same transcript would be the same
    // Stop delivered twice.)
    let out = p.stop("s1", Some("still just talking"));
    assert_eq!(p.log().last().unwrap()["reason"], "stalled", "{out:?}");
}

/// Issue 17: a story's check is fixed when the loop starts. An Edit that
/// weakens it is denied by the guard, and an edit that gets through anyway
/// (a shell script, an editor) changes nothing: the recorded check runs.
#[test]
fn a_story_check_is_fixed_at_start() {
    let p = Project::new("vfixed");
    p.git_init();
    let prd = r#"{"userStories":[
      {"id":"US-1","title":"Greeting","passes":false,"verify":"echo run >> runs.log; grep -q hello out.txt"}]}"#;
    p.write("prd.json", prd);
    p.write(".gitignore", "runs.log\n.claude/\n");
    start(&p, "--prd-file prd.json --max-iterations 20 --max-stalls 0");
    assert!(
        p.state()
            .unwrap()
            .contains(r#"story_checks: {"US-1":"echo run >> runs.log; grep -q hello out.txt"}"#),
        "{:?}",
        p.state()
    );

    // The guard denies the Edit that would weaken it, and says why.
    let edit = serde_json::json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": p.path("prd.json"),
            "old_string": "echo run >> runs.log; grep -q hello out.txt", "new_string": "true"},
    });
    let o = run(
        command(GUARD, &p, &[]),
        Stdin::Bytes(edit.to_string().as_bytes()),
    );
    assert!(o.is_denied(), "{o:?}");
    assert!(o.stdout.contains("US-1"), "{}", o.stdout);

    // Written anyway, past the guard, with the story claimed: the recorded check runs.
    p.write(
        "prd.json",
        prd.replace("echo run >> runs.log; grep -q hello out.txt", "true")
            .replace("\"passes\":false", "\"passes\":true"),
    );
    let r = reason(p.stop("s1", None).as_ref());
    assert!(r.contains("claim that US-1 passes was refused"), "{r}");
    assert_eq!(p.read("runs.log").unwrap().lines().count(), 1);

    // A story added mid-loop has its check recorded when first seen.
    let added = p.read("prd.json").unwrap().replace(
        "}]}",
        r#"},{"id":"US-2","title":"Farewell","passes":false,"verify":"test -f bye"}]}"#,
    );
    p.write("prd.json", added);
    reason(p.stop("s1", None).as_ref());
    assert!(
        p.state().unwrap().contains(r#""US-2":"test -f bye""#),
        "{:?}",
        p.state()
    );
}
