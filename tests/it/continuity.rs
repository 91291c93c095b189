//! Issue 10, at the hook level: the tools each turn used as the guard
//! recorded them (the no-progress breaker without transcript timing),
//! duplicate Stops, SessionStart re-injection, the `/clear` hand-over,
//! StopFailure pauses and budgets. Each test feeds the binaries the JSON the
//! client sends (docs/client-measurements.md).

use crate::support::*;
use serde_json::{Value, json};

/// The guard's record of this turn's tools, in the loop's folder.
fn tools(p: &Project) -> Option<String> {
    std::fs::read_to_string(p.loop_paths().turn_tools).ok()
}

fn set_tools(p: &Project, text: &str) {
    let path = p.loop_paths().turn_tools;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The `/clear` hand-over note, in the loop's folder.
fn handover(p: &Project) -> Option<String> {
    std::fs::read_to_string(p.loop_paths().handover).ok()
}

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
    set_tools(&p, "");
    // Turn 1 writes a file (the guard sees it before it runs); its
    // transcript is not written yet when the Stop comes.
    let target = p.path("design.md");
    let write = json!({"file_path": target, "content": "# Design\n"});
    assert_eq!(guard(&p, "s1", "Write", write), None, "allowed");
    assert_eq!(tools(&p).unwrap(), "s1\tWrite\n");
    p.write("design.md", "# Design\n");
    assert!(is_block(p.stop("s1", Some("Wrote design.md.")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 0");
    assert_eq!(tools(&p).unwrap(), "", "emptied for the next turn");
    // Turn 2 only talks, and its transcript lags: it still shows turn 1's
    // Write. The record says no tool was called: a stall.
    p.write_transcript(write_turn("Wrote design.md."));
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
    assert!(tools(&p).is_none(), "removed with the loop");
}

#[test]
fn a_bash_turn_asks_the_tree_and_no_record_falls_back_to_the_transcript() {
    let p = Project::new("record-bash");
    p.git_init();
    p.loop_state("\"s1\"", 1, 10, None, "max_stalls: 3\n", "Task");
    set_tools(&p, "s1\tBash\n");
    // Bash changed nothing the tree shows... yet: the first look is the baseline.
    assert!(is_block(p.stop("s1", Some("ran it")).as_ref()));
    set_tools(&p, "s1\tBash\n");
    assert!(is_block(p.stop("s1", Some("ran it again")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 1", "same tree after Bash");
    set_tools(&p, "s1\tBash\n");
    p.write("made-by-bash.txt", "x");
    assert!(is_block(p.stop("s1", Some("made a file")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 0", "the tree changed");
    // No record at all (a loop the official plugin started): the transcript
    // is read as before, and a fresh one showing a Write is progress.
    std::fs::remove_file(p.loop_paths().turn_tools).unwrap();
    p.write_transcript(write_turn("edited"));
    assert!(is_block(p.stop("s1", Some("edited")).as_ref()));
    assert_eq!(stalls(&p), "stalls: 0");
}

/// The Stop hook with the input the client sends, fields added by `extra`.
fn stop(p: &Project, session: &str, said: &str, extra: Value) -> Option<Value> {
    let mut input = json!({"session_id": session, "transcript_path": p.transcript(),
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
    p.write_transcript(turn("u1"));
    assert!(is_block(stop(&p, "s1", said, json!({})).as_ref()));
    p.write_transcript(turn("u2"));
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

#[test]
fn a_turn_with_the_last_turns_words_is_waited_for_until_the_client_writes_it() {
    // 2.1.328 writes a turn after its Stop hooks start. When the turn ends
    // with the words of the turn before ("Waiting for the workers."), the
    // transcript's newest text already matches: the Stop must not take the
    // turn before for this one (a duplicate, read as the last turn's tools
    // and words).
    let p = Project::new("same-words-late");
    p.loop_state("\"s1\"", 1, 10, Some("DONE"), "max_stalls: 0\n", "Task");
    let said = "Noted; waiting.";
    let line = |v: Value| v.to_string() + "\n";
    let text = |uuid: &str, t: &str| {
        line(
            json!({"type":"assistant","uuid":uuid,"message":{"id":uuid,"role":"assistant",
            "content":[{"type":"text","text":t}]}}),
        )
    };
    let feed = line(json!({"type":"user","message":{"role":"user","content":"feed"}}));
    p.write_transcript(format!("{feed}{}", text("u1", said)));
    assert!(is_block(stop(&p, "s1", said, json!({})).as_ref()));
    assert_eq!(iteration(&p), "iteration: 2");
    // The next turn printed the promise, called a tool and said the same
    // last words; the client writes it 150 ms after the Stop starts.
    let transcript = p.transcript();
    let next_turn = [
        feed.clone(),
        text("u2", "<promise>DONE</promise>"),
        line(
            json!({"type":"assistant","uuid":"u3","message":{"id":"u2","role":"assistant",
            "content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]}}),
        ),
        line(json!({"type":"user","message":{"role":"user",
            "content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}})),
        text("u4", said),
    ]
    .concat();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(150));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(transcript)
            .unwrap();
        std::io::Write::write_all(&mut f, next_turn.as_bytes()).unwrap();
    });
    let out = stop(&p, "s1", said, json!({}));
    writer.join().unwrap();
    assert!(
        !is_block(out.as_ref()),
        "the promise of the new turn ends the loop: {out:?}"
    );
    let log = p.log();
    assert_eq!(log.last().unwrap()["reason"], "complete", "{log:?}");
    assert!(
        !log.iter().any(|e| e["reason"] == "duplicate_stop"),
        "{log:?}"
    );
}

/// An assistant line of `message` with its usage, as the client writes it.
fn usage_line(uuid: &str, message: &str, text: &str, input: u64, output: u64) -> String {
    json!({"type":"assistant","uuid":uuid,"message":{"id":message,"model":"claude-opus-5-5",
        "role":"assistant","content":[{"type":"text","text":text}],
        "usage":{"input_tokens":input,"output_tokens":output,
            "cache_creation_input_tokens":0,"cache_read_input_tokens":0}}})
    .to_string()
        + "\n"
}

#[test]
fn a_token_budget_counts_each_message_once_and_ends_the_loop() {
    let p = Project::new("tokens");
    let (code, out) = p.ralph(&["start", "--session", "s1", "Work", "--max-tokens", "1000"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Budget: the loop stops after 1000 tokens (--max-tokens)."),
        "{out}"
    );
    let feed = json!({"type":"user","message":{"role":"user","content":"feed"}}).to_string() + "\n";
    // One message written as two lines (same id): counted once, 400 tokens.
    let turn1 = feed.clone()
        + &usage_line("u1", "m1", "part one", 300, 100)
        + &usage_line("u2", "m1", "Working.", 300, 100);
    p.write_transcript(&turn1);
    assert!(is_block(stop(&p, "s1", "Working.", json!({})).as_ref()));
    assert!(p.state().unwrap().contains("\ntokens_used: 400\n"));
    let turn2 = feed + &usage_line("u3", "m2", "More.", 500, 150);
    p.write_transcript(&turn2);
    let out = stop(&p, "s1", "More.", json!({}));
    assert!(!is_block(out.as_ref()), "spent: 1050 of 1000");
    let msg = message(out.as_ref());
    assert!(
        msg.contains("the token budget is spent (1,050 of 1,000 tokens)"),
        "{msg}"
    );
    assert!(msg.contains("--max-tokens"), "{msg}");
    assert_eq!(p.log().last().unwrap()["reason"], "token_budget");
}

/// `ralph-setup hook-prompt` with a HOME of its own and no ANTHROPIC_MODEL,
/// so that nothing of this machine's settings names a model.
fn prompt_hook(p: &Project, input: &Value) -> Option<Value> {
    use std::io::Write as _;
    let mut child = std::process::Command::new(SETUP)
        .arg("hook-prompt")
        .current_dir(&p.root)
        .env("CLAUDE_PROJECT_DIR", &p.root)
        .env("RALPH_DATA_DIR", p.data_dir())
        .env("HOME", p.path("home"))
        .env_remove("ANTHROPIC_MODEL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    // A hook may leave without reading its input (no loop): a broken pipe is normal.
    let _ = { stdin }.write_all(input.to_string().as_bytes());
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
}

#[test]
fn a_cost_budget_needs_a_model_with_a_price() {
    let p = Project::new("cost");
    let input = |transcript: bool| {
        let mut v = json!({"session_id": "s1", "cwd": p.root, "hook_event_name": "UserPromptSubmit",
            "prompt": "/ralph-loop Work --max-cost 5"});
        if transcript {
            v["transcript_path"] = json!(p.transcript());
        }
        v
    };
    let refused = prompt_hook(&p, &input(false));
    let why = reason(refused.as_ref());
    assert!(
        why.starts_with("ralph: --max-cost needs the price of the model"),
        "{why}"
    );
    assert!(!why.contains('\n'), "one line: {why}");
    assert!(p.state().is_none(), "no loop started");
    // The session's model, from its transcript: one the table does not know.
    let transcript = usage_line("u1", "m1", "hi", 1, 1).replace("claude-opus-5-5", "claude-foo-1");
    p.write_transcript(&transcript);
    let refused = prompt_hook(&p, &input(true));
    let why = reason(refused.as_ref());
    assert!(
        why.contains("no price for the model `claude-foo-1`"),
        "{why}"
    );
    // A priced one: the loop starts and says at which prices.
    p.write_transcript(usage_line("u1", "m1", "hi", 1, 1));
    let started = prompt_hook(&p, &input(true));
    let msg = message(started.as_ref());
    assert!(
        msg.contains("$5.00 (--max-cost, at claude-opus-5-5's prices as of 2026-12-01)"),
        "{msg}"
    );
    let state = p.state().unwrap();
    assert!(state.contains("\nmax_cost_usd: \"5.000000\"\n"), "{state}");
    assert!(state.contains("\nmodel: \"claude-opus-5-5\"\n"), "{state}");
    // Or the project's `model` setting, when the session has not replied yet.
    std::fs::remove_file(p.path(STATE_FILE)).unwrap();
    p.write(".claude/settings.json", r#"{"model":"claude-sonnet-4-5"}"#);
    let started = prompt_hook(&p, &input(false));
    assert!(message(started.as_ref()).contains("at claude-sonnet-4-5's prices"));
}

/// `ralph-setup hook-event` with `input`, in a client whose process id is `pid`.
fn event(p: &Project, input: Value, pid: Option<u32>) -> Option<Value> {
    use std::io::Write as _;
    let mut cmd = std::process::Command::new(SETUP);
    cmd.arg("hook-event")
        .current_dir(&p.root)
        .env("CLAUDE_PROJECT_DIR", &p.root)
        .env("RALPH_DATA_DIR", p.data_dir())
        .env_remove("CLAUDE_PID")
        .env_remove("AI_AGENT")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    if let Some(pid) = pid {
        cmd.env("CLAUDE_PID", pid.to_string());
    }
    let mut child = cmd.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    // A hook may leave without reading its input (no loop): a broken pipe is normal.
    let _ = { stdin }.write_all(input.to_string().as_bytes());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    (!text.trim().is_empty()).then(|| serde_json::from_str(text.trim()).unwrap())
}

/// `SessionStart` as the client sends it (2.1.328).
fn session_start(p: &Project, session: &str, source: &str) -> Value {
    json!({"session_id": session, "transcript_path": p.path(&format!("{session}.jsonl")),
        "cwd": p.root, "hook_event_name": "SessionStart", "source": source})
}

/// `SessionEnd` as the client sends it.
fn session_end(p: &Project, session: &str, reason: &str) -> Value {
    json!({"session_id": session, "transcript_path": p.path(&format!("{session}.jsonl")),
        "cwd": p.root, "prompt_id": "p-1", "hook_event_name": "SessionEnd", "reason": reason})
}

fn context(out: Option<&Value>) -> String {
    let v = out.expect("a SessionStart answer");
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "SessionStart",
        "{v}"
    );
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn after_a_compaction_or_resume_the_owner_is_reminded_of_its_loop() {
    let p = Project::new("remind");
    assert_eq!(
        event(&p, session_start(&p, "s1", "compact"), None),
        None,
        "no loop"
    );
    p.loop_state("\"s1\"", 3, 10, Some("DONE"), "", "Fix the parser.\n");
    for source in ["compact", "resume"] {
        let text = context(event(&p, session_start(&p, "s1", source), None).as_ref());
        for part in [
            "at iteration 3/10",
            "<promise>DONE</promise>",
            "Rules:",
            "Fix the parser.",
        ] {
            assert!(text.contains(part), "{source}: {part}: {text}");
        }
    }
    // A fresh start, another session (a fork of the owner's), a cancelled loop: nothing.
    assert_eq!(event(&p, session_start(&p, "s1", "startup"), None), None);
    assert_eq!(event(&p, session_start(&p, "fork", "resume"), None), None);
    let before = p.state();
    assert_eq!(
        stop(&p, "fork", "forked words", json!({})),
        None,
        "a fork never drives it"
    );
    assert_eq!(p.state(), before);
    p.loop_state("\"s1\"", 3, 10, Some("DONE"), "active: false\n", "x");
    assert_eq!(event(&p, session_start(&p, "s1", "compact"), None), None);
}

#[test]
fn clear_hands_the_loop_to_the_next_session_of_the_same_client() {
    let p = Project::new("clear");
    p.loop_state("\"old\"", 2, 10, None, "", "Keep going.\n");
    // Another session's /clear hands nothing over.
    assert_eq!(event(&p, session_end(&p, "other", "clear"), Some(42)), None);
    assert!(handover(&p).is_none());
    // The owner's /clear, then the new session of the same client.
    assert_eq!(event(&p, session_end(&p, "old", "clear"), Some(42)), None);
    assert!(handover(&p).unwrap().starts_with("old "));
    // A session of another client process cannot take it.
    assert_eq!(
        event(&p, session_start(&p, "thief", "clear"), Some(99)),
        None
    );
    let out = event(&p, session_start(&p, "new", "clear"), Some(42));
    let text = context(out.as_ref());
    assert!(text.contains("the conversation was cleared and this session took the loop over"));
    assert!(text.contains("Keep going."), "{text}");
    assert!(
        out.unwrap()["systemMessage"]
            .as_str()
            .unwrap()
            .contains("took over the loop")
    );
    assert!(p.state().unwrap().contains("session_id: \"new\"\n"));
    assert!(handover(&p).is_none(), "used once");
    let last = p.log().last().cloned().unwrap();
    assert_eq!(
        (last["decision"].as_str(), last["reason"].as_str()),
        (Some("rebind"), Some("clear"))
    );
    // The new session drives the loop; the old one no longer does.
    assert!(is_block(stop(&p, "new", "working", json!({})).as_ref()));
    assert_eq!(stop(&p, "old", "late words", json!({})), None);
    // Any other end, or a clear long after the hand-over, takes nothing.
    assert_eq!(event(&p, session_end(&p, "new", "other"), Some(42)), None);
    assert!(handover(&p).is_none());
    std::fs::write(p.loop_paths().handover, "new 1000 42\n").unwrap();
    assert_eq!(
        event(&p, session_start(&p, "later", "clear"), Some(42)),
        None,
        "stale"
    );
    assert!(p.state().unwrap().contains("session_id: \"new\"\n"));
}

/// The owner's next prompt resumes a loop paused on `rate_limit`: it is
/// told, and the log holds the pause and the resume. The log.
fn prompt_resumes(p: &Project) -> Vec<Value> {
    let resumed = p.prompt("s1", "go on");
    assert!(message(resumed.as_ref()).contains("resumed (it was paused on rate_limit"));
    let log = p.log();
    let decisions: Vec<_> = log
        .iter()
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["pause", "resume"]);
    log
}

#[test]
fn an_api_error_pauses_the_loop_and_the_next_prompt_resumes_it() {
    let p = Project::new("pause");
    p.loop_state("\"s1\"", 2, 10, None, "", "Task\n");
    // As measured: StopFailure instead of Stop, no reset time with an API key.
    let failure = json!({"session_id": "s1", "transcript_path": p.path("t.jsonl"), "cwd": p.root,
        "prompt_id": "p-1", "hook_event_name": "StopFailure", "error": "rate_limit",
        "last_assistant_message": "API Error: Request rejected (429) · rate limited"});
    let out = event(&p, failure.clone(), None);
    let msg = out.unwrap()["systemMessage"].as_str().unwrap().to_string();
    assert!(
        msg.contains("paused at iteration 2/10") && msg.contains("rate_limit"),
        "{msg}"
    );
    let state = p.state().unwrap();
    assert!(
        state.contains("\napi_error_pause: \"rate_limit\"\n"),
        "{state}"
    );
    assert!(
        state.contains("iteration: 2\n"),
        "not an iteration: {state}"
    );
    let (_, status) = p.setup(&["status"]);
    assert!(status.contains("paused:    since "), "{status}");
    // Another session's failure does not touch it.
    let other = json!({"session_id": "s2", "cwd": p.root, "hook_event_name": "StopFailure", "error": "server_error"});
    assert_eq!(event(&p, other, None), None);
    // The next prompt of the owner resumes it.
    prompt_resumes(&p);
    assert!(p.state().unwrap().contains("\napi_error_pause: null\n"));
    // Paused again, with a reset time; this time the next Stop resumes it.
    let mut limited = failure;
    limited["error_details"] = json!({"resets_at": "2026-12-01T05:00:00Z"});
    event(&p, limited, None);
    assert!(
        p.state()
            .unwrap()
            .contains("\nresets_at: \"2026-12-01T05:00:00Z\"\n")
    );
    let out = stop(&p, "s1", "back at work", json!({}));
    assert!(
        message(out.as_ref()).starts_with("▶ Ralph loop resumed"),
        "{out:?}"
    );
    assert!(
        p.state().unwrap().contains("iteration: 3\n"),
        "one iteration: the turn after the pause"
    );
    assert_eq!(p.log()[3]["decision"], "resume");
}

#[test]
fn a_pause_the_exiting_client_lost_is_recorded_at_the_owners_resume() {
    // `claude -p` exits at once on an API error and ends its hooks: the
    // StopFailure never paused the loop. The resumed session's transcript
    // ends with the client's message for the error.
    let p = Project::new("pause-lost");
    p.loop_state("\"s1\"", 2, 10, None, "", "Task\n");
    let line = |v: Value| v.to_string() + "\n";
    let worked = line(json!({"type":"assistant","uuid":"a1","message":{"id":"m1",
        "role":"assistant","content":[{"type":"text","text":"Working."}]}}));
    let failed = line(
        json!({"type":"assistant","uuid":"a2","isApiErrorMessage":true,
        "error":"rate_limit","apiErrorStatus":429,"message":{"id":"m2","model":"<synthetic>",
        "role":"assistant","content":[{"type":"text","text":"API Error: Request rejected (429)"}]}}),
    );
    let after = line(json!({"type":"attachment","attachment":{"type":"hook_success"}}));
    // A last turn that ended well: nothing to record.
    std::fs::write(p.path("s1.jsonl"), &worked).unwrap();
    let not_paused = |p: &Project| !p.state().unwrap().contains("\napi_error_pause: \"");
    event(&p, session_start(&p, "s1", "resume"), None);
    assert!(not_paused(&p));
    // Another session's resume never pauses the owner's loop.
    std::fs::write(p.path("s2.jsonl"), format!("{worked}{failed}")).unwrap();
    event(&p, session_start(&p, "s2", "resume"), None);
    assert!(not_paused(&p));
    // The owner's last turn ended on the error: paused now, and said.
    std::fs::write(p.path("s1.jsonl"), format!("{worked}{failed}{after}")).unwrap();
    let out = event(&p, session_start(&p, "s1", "resume"), None);
    assert!(
        out.as_ref().unwrap()["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("paused at iteration 2/10")),
        "{out:?}"
    );
    let state = p.state().unwrap();
    assert!(
        state.contains("\napi_error_pause: \"rate_limit\"\n"),
        "{state}"
    );
    let (_, status) = p.setup(&["status"]);
    assert!(status.contains("paused:    since "), "{status}");
    // Resumed again before a prompt: one pause, not two.
    event(&p, session_start(&p, "s1", "resume"), None);
    let log = prompt_resumes(&p);
    assert!(
        log[0]["message"]
            .as_str()
            .unwrap()
            .contains("recorded at the session's resume")
    );
}

#[test]
fn a_message_the_transcript_had_not_caught_up_with_is_counted_at_the_next_stop() {
    let p = Project::new("tokens-lag");
    let (code, out) = p.ralph(&["start", "--session", "s1", "Work", "--max-tokens", "100000"]);
    assert_eq!(code, 0, "{out}");
    let feed = json!({"type":"user","message":{"role":"user","content":"feed"}}).to_string() + "\n";
    let tool = usage_line("u1", "m1", "looking", 1000, 10);
    // Stop 1: the transcript has the turn's first message, not its last.
    p.write_transcript(feed.clone() + &tool);
    assert!(is_block(
        stop(&p, "s1", "Done looking.", json!({})).as_ref()
    ));
    assert!(p.state().unwrap().contains("\ntokens_used: 1010\n"));
    // Stop 2: the late message, Stop 1's feed, and turn 2.
    let late = usage_line("u2", "m2", "Done looking.", 2000, 20);
    let turn2 = usage_line("u3", "m3", "Next.", 3000, 30);
    p.write_transcript(feed.clone() + &tool + &late + &feed + &turn2);
    assert!(is_block(stop(&p, "s1", "Next.", json!({})).as_ref()));
    let state = p.state().unwrap();
    assert!(
        state.contains("\ntokens_used: 6060\n"),
        "1010 + 2020 + 3030: {state}"
    );
    assert!(state.contains("\nusage_seen: \"m3\"\n"), "{state}");
}

#[test]
fn a_pause_is_written_whole_though_the_exiting_client_sends_sigterm() {
    use std::io::Write as _;
    let p = Project::new("pause-term");
    p.loop_state("\"s1\"", 2, 10, None, "", "Task\n");
    let failure = json!({"session_id": "s1", "cwd": p.root, "hook_event_name": "StopFailure",
        "error": "rate_limit"});
    let mut child = std::process::Command::new(SETUP)
        .arg("hook-event")
        .current_dir(&p.root)
        .env("CLAUDE_PROJECT_DIR", &p.root)
        .env("RALPH_DATA_DIR", p.data_dir())
        .env_remove("AI_AGENT")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The client exits and ends its hooks (measured: SIGTERM ~60 ms in),
    // here while the hook still waits for its input.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(failure.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        p.state()
            .unwrap()
            .contains("\napi_error_pause: \"rate_limit\"\n")
    );
    let log = p.log();
    assert_eq!(log.last().unwrap()["decision"], "pause", "{log:?}");
}
