//! `--fresh` at hook level: the start and every feed hand the story to a
//! `ralph:ralph-worker`; the guard refuses the main thread's writes and lets
//! the worker's through; a Stop waits for a worker still running in the
//! background; `SubagentStop` holds a worker to its story's check.

use serde_json::{Value, json};

use crate::support::*;

const PRD: &str = r#"{"project": "demo", "userStories": [
  {"id": "US-1", "title": "One", "priority": 1, "passes": false, "verify": "grep -q one one.txt || { echo 'one.txt lacks one' >&2; exit 4; }"},
  {"id": "US-2", "title": "Two", "priority": 2, "passes": false}
]}
"#;

const WORKER: &str = "ralph:ralph-worker";

fn fresh_prd_loop(tag: &str) -> Project {
    let p = Project::with_claude_dir(tag);
    p.write("prd.json", PRD);
    p.prompt(
        "s1",
        "/ralph:ralph-loop --prd-file prd.json --fresh --max-story-attempts 2",
    );
    // What the skill shows the model as its first task.
    let (_, told) = p.setup(&["show"]);
    assert!(told.contains(WORKER), "the first task dispatches: {told}");
    assert!(told.contains("do no work yourself"), "{told}");
    assert!(
        told.contains("Fresh context (--fresh): each story"),
        "{told}"
    );
    assert!(p.state().unwrap().contains("\nfresh: true\n"));
    p
}

fn guard(p: &Project, tool: &str, input: Value, agent: bool) -> Option<Value> {
    guard_as(p, tool, input, agent.then_some(WORKER))
}

fn guard_as(p: &Project, tool: &str, input: Value, agent_type: Option<&str>) -> Option<Value> {
    let mut v = json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input,
    });
    if let Some(t) = agent_type {
        v["agent_id"] = json!("a1");
        v["agent_type"] = json!(t);
    }
    run_json(GUARD, &[], &p.root, &v.to_string())
}

fn subagent_stop(p: &Project, agent_type: &str, said: &str) -> Option<Value> {
    let v = json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "SubagentStop",
        "agent_id": "a1", "agent_type": agent_type, "stop_hook_active": false,
        "last_assistant_message": said, "background_tasks": [],
    });
    run_json(STOP, &[], &p.root, &v.to_string())
}

fn stop_with_tasks(p: &Project, tasks: Value) -> Option<Value> {
    let v = json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "Stop",
        "transcript_path": p.transcript(), "stop_hook_active": false,
        "last_assistant_message": "dispatched", "background_tasks": tasks,
    });
    run_json(STOP, &[], &p.root, &v.to_string())
}

fn mark_us1_passing(p: &Project) {
    let prd = p.read("prd.json").unwrap();
    p.write(
        "prd.json",
        prd.replacen(
            "\"priority\": 1, \"passes\": false",
            "\"priority\": 1, \"passes\": true",
            1,
        ),
    );
}

#[test]
fn the_main_thread_may_read_but_not_write_and_the_worker_may_write() {
    let p = fresh_prd_loop("fresh-guard");
    let write = json!({"file_path": p.path("a.txt"), "content": "x"});
    let why = denied(guard(&p, "Write", write.clone(), false));
    assert!(why.contains("--fresh") && why.contains(WORKER), "{why}");
    let why = denied(guard(
        &p,
        "Bash",
        json!({"command": "echo x > a.txt"}),
        false,
    ));
    assert!(why.contains("a Bash command that writes files"), "{why}");
    assert!(allowed(guard(
        &p,
        "Bash",
        json!({"command": "cat prd.json && git log -3"}),
        false
    )));
    assert!(allowed(guard(&p, "Write", write.clone(), true)));
    // Another subagent would write past the worker's SubagentStop gate.
    let why = denied(guard_as(
        &p,
        "Write",
        write.clone(),
        Some("general-purpose"),
    ));
    assert!(why.contains(WORKER), "{why}");
    assert!(allowed(guard(
        &p,
        "Bash",
        json!({"command": "echo x > a.txt"}),
        true
    )));
    // The loop's own files stay protected from the worker too.
    let state = json!({"file_path": p.path(".claude/ralph-loop.local.md"), "content": "x"});
    assert!(!allowed(guard(&p, "Write", state, true)));
}

#[test]
fn without_fresh_the_main_thread_writes_as_before() {
    let p = Project::with_claude_dir("fresh-off");
    p.write("prd.json", PRD);
    p.prompt("s1", "/ralph:ralph-loop --prd-file prd.json");
    assert!(!p.state().unwrap().contains("fresh:"));
    let write = json!({"file_path": p.path("a.txt"), "content": "x"});
    assert!(allowed(guard(&p, "Write", write, false)));
}

#[test]
fn a_stop_waits_for_a_worker_running_in_the_background() {
    let p = fresh_prd_loop("fresh-wait");
    let before = p.state().unwrap();
    let running = json!([{"id": "a1", "type": "subagent", "status": "running", "description": "story US-1", "agent_type": WORKER}]);
    assert_eq!(stop_with_tasks(&p, running), None, "the session may stop");
    assert_eq!(p.state().unwrap(), before, "nothing advanced");
    let last = p.log().last().cloned().unwrap();
    assert_eq!(last["decision"], "wait");
    assert_eq!(last["reason"], "worker_running");
    // Another agent running in the background is not waited for.
    let other = json!([{"id": "b", "type": "subagent", "status": "running", "agent_type": "x:y"}]);
    let out = stop_with_tasks(&p, other);
    assert!(
        reason(out.as_ref()).contains(WORKER),
        "fed again, as a dispatch"
    );
}

#[test]
fn a_worker_claiming_a_story_whose_check_fails_is_kept_working() {
    let p = fresh_prd_loop("fresh-substop");
    mark_us1_passing(&p);
    let out = subagent_stop(&p, WORKER, "done\nSTORY DONE: US-1");
    let why = reason(out.as_ref());
    let (_, status) = p.setup(&["status"]);
    assert!(
        status.contains("fresh:     each iteration runs in a fresh ralph:ralph-worker"),
        "{status}"
    );
    assert!(
        status.contains("worker:    US-1: check_failed (blocked 1 time)"),
        "{status}"
    );
    assert!(status.contains("fresh worker: check_failed"), "{status}");
    assert!(why.contains("story US-1 is not done"), "{why}");
    assert!(
        why.contains("one.txt lacks one") && why.contains("exit 4"),
        "{why}"
    );
    // Fixed: allowed, and the main Stop feeds US-2 as a dispatch, logging
    // the worker's outcome on its line.
    p.write("one.txt", "one\n");
    assert_eq!(subagent_stop(&p, WORKER, "fixed\nSTORY DONE: US-1"), None);
    let out = stop_with_tasks(&p, json!([]));
    let feed = reason(out.as_ref());
    assert!(
        feed.contains("story US-2") && feed.contains(WORKER),
        "{feed}"
    );
    let log = p.log();
    let reasons: Vec<&str> = log.iter().filter_map(|e| e["reason"].as_str()).collect();
    assert!(
        reasons.ends_with(&["worker_check_failed", "worker_passed", "story"]),
        "{reasons:?}"
    );
    assert_eq!(log.last().unwrap()["worker"], "passed");
}

#[test]
fn a_worker_claiming_an_unmarked_story_is_blocked_and_gives_up_after_the_attempts() {
    let p = fresh_prd_loop("fresh-giveup");
    for _ in 0..2 {
        let why = reason(subagent_stop(&p, WORKER, "STORY DONE: US-1").as_ref());
        assert!(why.contains("\"passes\" is not true"), "{why}");
    }
    // --max-story-attempts 2: the third claim is let go; the main loop's
    // own count of feeds takes over.
    assert_eq!(subagent_stop(&p, WORKER, "STORY DONE: US-1"), None);
    assert_eq!(p.log().last().unwrap()["reason"], "worker_gave_up");
    // A report that claims nothing is let go at once.
    let p = fresh_prd_loop("fresh-noclaim");
    assert_eq!(
        subagent_stop(&p, WORKER, "I could not finish: the API is down."),
        None
    );
    assert_eq!(p.log().last().unwrap()["reason"], "worker_no_claim");
}

#[test]
fn other_subagents_are_not_judged() {
    let p = fresh_prd_loop("fresh-other");
    mark_us1_passing(&p);
    assert_eq!(subagent_stop(&p, "", "compaction summary"), None);
    assert_eq!(subagent_stop(&p, "other:agent", "STORY DONE: US-1"), None);
    assert!(p.log().iter().all(|e| e["decision"] != "worker"));
}
