//! Issue 10, at the hook level: the tools each turn used as the guard
//! recorded them (the no-progress breaker without transcript timing),
//! duplicate Stops, SessionStart re-injection, the `/clear` hand-over,
//! StopFailure pauses and budgets. Each test feeds the binaries the JSON the
//! client sends (docs/client-measurements.md).

use crate::support::*;
use serde_json::{Value, json};

const TOOLS: &str = ".claude/ralph-loop.turn-tools";

/// A transcript whose last turn wrote a file and said `text`: what a
/// lagging transcript still shows at the next Stop.
fn write_turn(text: &str) -> String {
    [
        json!({"type":"user","message":{"role":"user","content":"feed"}}),
        json!({"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant",
            "content":[{"type":"tool_use","id":"t","name":"Write","input":{}}]}}),
        json!({"type":"user","message":{"role":"user",
            "content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}),
        json!({"type":"assistant","uuid":"a2","message":{"id":"m2","role":"assistant",
            "content":[{"type":"text","text":text}]}}),
    ]
    .iter()
    .map(|l| l.to_string() + "\n")
    .collect()
}

/// The guard, for `session`'s `tool` call with `input`.
fn guard(p: &Project, session: &str, tool: &str, input: Value) -> Option<Value> {
    let call = json!({"session_id": session, "cwd": p.root, "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1"});
    run_json(GUARD, &[], &p.root, &call.to_string())
}

fn stalls(p: &Project) -> String {
    let state = p.state().expect("a running loop");
    let line = state.lines().find(|l| l.starts_with("stalls:"));
    line.unwrap_or_default().to_string()
}

#[test]
fn the_guards_record_judges_the_turn_whatever_the_transcript_shows() {
    let p = Project::new("record");
    p.git_init();
    p.loop_state("\"s1\"", 1, 10, None, "max_stalls: 2\n", "Task");
    p.write(TOOLS, "");
    // Turn 1 writes a file (the guard sees it before it runs); its
    // transcript is not written yet when the Stop comes.
    let target = p.path("design.md");
    let write = json!({"file_path": target, "content": "# Design\n"});
    assert_eq!(guard(&p, "s1", "Write", write), None, "allowed");
    assert_eq!(p.read(TOOLS).unwrap(), "s1\tWrite\n");
    p.write("design.md", "# Design\n");
    assert!(is_block(p.stop("s1", Some("Wrote design.md.")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 0");
    assert_eq!(p.read(TOOLS).unwrap(), "", "emptied for the next turn");
    // Turn 2 only talks, and its transcript lags: it still shows turn 1's
    // Write. The record says no tool was called: a stall.
    p.write("transcript.jsonl", write_turn("Wrote design.md."));
    assert!(is_block(p.stop("s1", Some("Still thinking.")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 1");
    // Turn 3 tries to delete the loop's state: denied, so not recorded;
    // another session's call in the project is not this loop's either.
    let rm = json!({"command": "rm .claude/ralph-loop.local.md", "description": "x"});
    let denied = guard(&p, "s1", "Bash", rm).expect("a denial");
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    let other = json!({"file_path": p.path("other.md"), "content": "x"});
    assert_eq!(guard(&p, "s2", "Write", other), None);
    let out = p.stop("s1", Some("Nothing more to change."));
    assert!(!is_block(out.as_ref()), "the breaker stops the loop");
    assert!(message(out.as_ref()).contains("no-progress breaker"));
    assert!(p.read(TOOLS).is_none(), "removed with the loop");
}

#[test]
fn a_bash_turn_asks_the_tree_and_no_record_falls_back_to_the_transcript() {
    let p = Project::new("record-bash");
    p.git_init();
    p.loop_state("\"s1\"", 1, 10, None, "max_stalls: 3\n", "Task");
    p.write(TOOLS, "s1\tBash\n");
    // Bash changed nothing the tree shows... yet: the first look is the baseline.
    assert!(is_block(p.stop("s1", Some("ran it")).as_ref()));
    p.write(TOOLS, "s1\tBash\n");
    assert!(is_block(p.stop("s1", Some("ran it again")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 1", "same tree after Bash");
    p.write(TOOLS, "s1\tBash\n");
    p.write("made-by-bash.txt", "x");
    assert!(is_block(p.stop("s1", Some("made a file")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 0", "the tree changed");
    // No record at all (a loop the official plugin started): the transcript
    // is read as before, and a fresh one showing a Write is progress.
    std::fs::remove_file(p.path(TOOLS)).unwrap();
    p.write("transcript.jsonl", write_turn("edited"));
    assert!(is_block(p.stop("s1", Some("edited")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 0");
}

/// The Stop hook with the input the client sends, fields added by `extra`.
fn stop(p: &Project, session: &str, said: &str, extra: Value) -> Option<Value> {
    let mut input = json!({"session_id": session, "transcript_path": p.path("transcript.jsonl"),
        "cwd": p.root, "prompt_id": "p-1", "permission_mode": "bypassPermissions",
        "effort": {"level": "medium"}, "hook_event_name": "Stop", "stop_hook_active": true,
        "last_assistant_message": said, "background_tasks": [], "session_crons": []});
    if let (Some(obj), Value::Object(more)) = (input.as_object_mut(), extra) {
        obj.extend(more);
    }
    run_json(STOP, &[], &p.root, &input.to_string())
}

fn iteration(p: &Project) -> String {
    let state = p.state().expect("a running loop");
    let line = state.lines().find(|l| l.starts_with("iteration:"));
    line.unwrap_or_default().to_string()
}

#[test]
fn a_stop_delivered_twice_for_one_turn_counts_once() {
    let p = Project::new("duplicate");
    p.loop_state("\"s1\"", 1, 10, Some("DONE"), "max_stalls: 0\n", "Task");
    // An older client: no transcript, the turn is known by its words.
    let old_client = || json!({"transcript_path": null});
    let first = stop(&p, "s1", "Working on it.", old_client());
    assert_eq!(iteration(&p), "iteration: 2");
    // The same Stop again (a second copy of the hook, a retry): the same
    // answer, nothing advanced.
    let again = stop(&p, "s1", "Working on it.", old_client());
    assert_eq!(reason(again.as_ref()), reason(first.as_ref()));
    assert!(reason(first.as_ref()).contains("iteration 2/10"));
    assert!(message(again.as_ref()).contains("answered again, not counted"));
    assert_eq!(iteration(&p), "iteration: 2");
    let log = p.log();
    assert_eq!(log.last().unwrap()["decision"], "repeat");
    assert_eq!(log.last().unwrap()["reason"], "duplicate_stop");
    // The next turn says other words: it counts.
    assert!(is_block(
        stop(&p, "s1", "More work.", old_client()).as_ref()
    ));
    assert_eq!(iteration(&p), "iteration: 3");
}

#[test]
fn two_turns_with_the_same_words_are_told_apart_by_their_transcript_lines() {
    let p = Project::new("same-words");
    p.loop_state("\"s1\"", 1, 10, None, "max_stalls: 0\n", "Task");
    let said = "Done.";
    let turn = |uuid: &str| {
        [
            json!({"type":"user","message":{"role":"user","content":"feed"}}),
            json!({"type":"assistant","uuid":uuid,"message":{"id":uuid,"role":"assistant",
                "content":[{"type":"text","text":said}]}}),
        ]
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect::<String>()
    };
    p.write("transcript.jsonl", turn("u1"));
    assert!(is_block(stop(&p, "s1", said, json!({})).as_ref()));
    p.write("transcript.jsonl", turn("u2"));
    assert!(is_block(stop(&p, "s1", said, json!({})).as_ref()));
    assert_eq!(iteration(&p), "iteration: 3", "two turns, two iterations");
    // The second turn's Stop delivered again: not counted.
    assert!(is_block(stop(&p, "s1", said, json!({})).as_ref()));
    assert_eq!(iteration(&p), "iteration: 3");
    // A new user prompt is another turn, whatever it says.
    let other = json!({"prompt_id": "p-2"});
    assert!(is_block(stop(&p, "s1", said, other).as_ref()));
    assert_eq!(iteration(&p), "iteration: 4");
}
