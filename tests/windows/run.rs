//! `ralph run` on Windows: a run whose client cannot start, and a run with a
//! stand-in client (a `.cmd` script, run by cmd.exe as Rust runs a batch
//! file) that prints a turn in the client's stream-json and writes it to the
//! session's transcript.

use crate::support::{WinProject, run_with};
use std::process::Output;

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_client_that_cannot_start_ends_the_run_after_three_tries() {
    let p = WinProject::new("run-none");
    let mut c = p.command(
        "ralph",
        &["run", "Task.", "--max-iterations", "1", "--no-sandbox"],
    );
    c.env("RALPH_CLAUDE", p.root.join("no-such-claude.exe"));
    let out = run_with(c, "");
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("failed 3 times in a row") && t.contains("no-such-claude.exe"),
        "{t}"
    );
}

#[test]
fn a_run_ends_on_the_promise_its_client_printed() {
    let p = WinProject::new("run-done");
    let session = "stand-in-1";
    let said = "Fixed. <promise>DONE</promise>";
    let stream = [
        serde_json::json!({"type": "system", "subtype": "init", "cwd": p.root,
            "session_id": session, "tools": [], "model": "m"}),
        serde_json::json!({"type": "assistant", "session_id": session, "message": {
            "id": "msg_1", "model": "m", "role": "assistant",
            "content": [{"type": "text", "text": said}],
            "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false,
            "num_turns": 1, "result": said, "session_id": session,
            "usage": {"input_tokens": 3, "output_tokens": 2}}),
    ];
    let lines: String = stream.iter().map(|l| format!("{l}\r\n")).collect();
    p.write("stand-in/stream.jsonl", &lines);
    let turn = serde_json::json!({"type": "assistant", "uuid": "u-1", "message": {
        "id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": said}]}});
    p.write("stand-in/turn.jsonl", &format!("{turn}\r\n"));
    let transcript = p
        .home
        .join(".claude")
        .join("projects")
        .join("C--Users-me-proj")
        .join(format!("{session}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let dir = p.path("stand-in");
    let script = format!(
        "@echo off\r\ntype \"{}\" >> \"{}\"\r\ntype \"{}\"\r\n",
        dir.join("turn.jsonl").display(),
        transcript.display(),
        dir.join("stream.jsonl").display()
    );
    p.write("stand-in/claude.cmd", &script);
    let mut c = p.command(
        "ralph",
        &[
            "run",
            "Fix it.",
            "--completion-promise",
            "DONE",
            "--max-iterations",
            "3",
            "--no-sandbox",
        ],
    );
    c.env("RALPH_CLAUDE", dir.join("claude.cmd"));
    let out = run_with(c, "");
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("complete"), "{t}");
    assert!(p.state().is_none(), "the loop is over: {t}");
}
