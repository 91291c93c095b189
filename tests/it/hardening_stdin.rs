//! The stdin matrix: whatever arrives on stdin, a hook exits 0, prints
//! nothing or one JSON object, and (when a loop exists) says what was wrong
//! in `systemMessage` without touching the state. Valid input with unknown
//! fields, missing fields or huge strings is processed normally.

use crate::support::*;
use ralph_core::state::LoopState;

/// How the Stop hook must answer a case, with a loop present.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    /// Processed: blocked, iteration advanced by one.
    Block,
    /// Fail open: a systemMessage containing the text, state untouched.
    Message(&'static str),
    /// Nothing printed, state untouched (not this session's loop).
    Silent,
}

fn cases(root: &std::path::Path) -> Vec<(&'static str, Vec<u8>, Want)> {
    let ok = String::from_utf8(stop_input(root, "still working")).expect("utf8");
    let mut huge_value = ok.trim_end_matches('}').to_string();
    huge_value.push_str(&format!(",\"padding\":\"{}\"}}", "x".repeat(10 << 20)));
    let mut huge_message = serde_json::from_str::<serde_json::Value>(&ok).expect("json");
    huge_message["last_assistant_message"] = "y".repeat(10 << 20).into();
    let deep = format!(
        "{{\"session_id\":\"{SESSION}\",\"x\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let invalid_utf8 = {
        let mut v = ok.clone().into_bytes();
        let at = ok.find("still working").expect("message");
        v[at] = 0xff;
        v[at + 1] = 0xfe;
        v
    };
    let unknown = ok.replace(
        "\"hook_event_name\"",
        "\"future_field\":{\"nested\":[1,2,{\"a\":null}]},\"effort\":{\"level\":\"max\"},\"hook_event_name\"",
    );
    vec![
        ("empty", Vec::new(), Want::Message("no hook input")),
        (
            "whitespace only",
            b" \n\t\n".to_vec(),
            Want::Message("no hook input"),
        ),
        (
            "not JSON",
            b"hello, hook".to_vec(),
            Want::Message("not JSON"),
        ),
        (
            "truncated JSON",
            ok.as_bytes()[..ok.len() / 2].to_vec(),
            Want::Message("not JSON"),
        ),
        (
            "JSON array",
            format!("[{ok}]").into_bytes(),
            Want::Message("not a JSON object"),
        ),
        (
            "JSON string",
            b"\"Stop\"".to_vec(),
            Want::Message("not a JSON object"),
        ),
        (
            "JSON null",
            b"null".to_vec(),
            Want::Message("not a JSON object"),
        ),
        ("10 MB JSON value", huge_value.into_bytes(), Want::Block),
        (
            "10 MB last_assistant_message",
            huge_message.to_string().into_bytes(),
            Want::Block,
        ),
        (
            "object then 10 MB of garbage",
            [ok.as_bytes(), &vec![b'#'; 10 << 20]].concat(),
            Want::Block,
        ),
        (
            "100000-deep nesting",
            deep.into_bytes(),
            Want::Message("not JSON"),
        ),
        (
            "invalid UTF-8 in a string",
            invalid_utf8,
            Want::Message("not JSON"),
        ),
        (
            "lone surrogate escape",
            ok.replace("still working", "\\ud800").into_bytes(),
            Want::Message("not JSON"),
        ),
        ("NUL bytes", b"\0\0\0{}".to_vec(), Want::Message("not JSON")),
        ("unknown fields", unknown.into_bytes(), Want::Block),
        (
            "missing everything but the session",
            format!("{{\"session_id\":\"{SESSION}\"}}").into_bytes(),
            Want::Block,
        ),
        ("empty object (no session)", b"{}".to_vec(), Want::Silent),
        (
            "session of the wrong type",
            format!(
                "{{\"session_id\":5,\"cwd\":{:?}}}",
                root.display().to_string()
            )
            .into_bytes(),
            Want::Silent,
        ),
        (
            "another session",
            ok.replace(SESSION, "someone-else").into_bytes(),
            Want::Silent,
        ),
        (
            "stop_hook_active and message of wrong types",
            ok.replace("\"stop_hook_active\":true", "\"stop_hook_active\":\"yes\"")
                .replace("\"still working\"", "[1,2]")
                .into_bytes(),
            Want::Block,
        ),
        (
            "cwd elsewhere (CLAUDE_PROJECT_DIR wins)",
            ok.replace(&root.display().to_string(), "/nonexistent/elsewhere")
                .into_bytes(),
            Want::Block,
        ),
        (
            "transcript_path that does not exist",
            ok.replace(
                "\"transcript_path\":\"\"",
                "\"transcript_path\":\"/nonexistent/t.jsonl\"",
            )
            .into_bytes(),
            Want::Block,
        ),
        (
            "transcript_path that is a folder",
            ok.replace("\"transcript_path\":\"\"", "\"transcript_path\":\"/\"")
                .into_bytes(),
            Want::Block,
        ),
        (
            "transcript_path /dev/zero",
            ok.replace(
                "\"transcript_path\":\"\"",
                "\"transcript_path\":\"/dev/zero\"",
            )
            .into_bytes(),
            Want::Block,
        ),
    ]
}

#[test]
fn stop_hook_stdin_matrix() {
    let probe = Project::with_claude_dir("stdin-cases");
    let all = cases(&probe.root);
    let mut report = Vec::new();
    for (name, bytes, want) in all {
        let p = Project::with_claude_dir("stdin");
        let before = state_text(3, 0);
        p.write(STATE_FILE, &before);
        // The hook reads cwd from stdin; cases were built for the probe root.
        let bytes = String::from_utf8(bytes.clone())
            .map(|s| {
                s.replace(
                    &probe.root.display().to_string(),
                    &p.root.display().to_string(),
                )
                .into_bytes()
            })
            .unwrap_or(bytes);
        let o = run(command(STOP, &p, &[]), Stdin::Bytes(&bytes));
        o.assert_fail_open(name);
        let after = p.state().expect("state kept");
        match want {
            Want::Block => {
                assert!(o.is_block(), "{name}: expected a block, got {o:?}");
                let s = LoopState::parse(&after).expect("parses");
                assert_eq!(s.iteration, 4, "{name}");
                assert_eq!(s.prompt, PROMPT, "{name}");
            }
            Want::Message(text) => {
                let msg = o.system_message();
                assert!(msg.contains(text), "{name}: message {msg:?} lacks {text:?}");
                assert!(!o.is_block(), "{name}: blocked");
                assert_eq!(after, before, "{name}: state changed");
            }
            Want::Silent => {
                assert_eq!(o.json(), None, "{name}: printed {}", o.stdout);
                assert_eq!(after, before, "{name}: state changed");
            }
        }
        assert!(p.corrupt_copies().is_empty(), "{name}: state moved aside");
        report.push(format!("{name}: {want:?} in {:?}", o.elapsed));
    }
    eprintln!("{}", report.join("\n"));
}

/// With no loop, every case is silent: nothing printed, nothing created.
#[test]
fn stop_hook_without_a_loop_is_silent_for_every_input() {
    let probe = Project::with_claude_dir("stdin-noloop-cases");
    for (name, bytes, _) in cases(&probe.root) {
        let p = Project::with_claude_dir("stdin-noloop");
        let o = run(command(STOP, &p, &[]), Stdin::Bytes(&bytes));
        o.assert_fail_open(name);
        assert_eq!(o.json(), None, "{name}: printed {}", o.stdout);
        assert!(p.state().is_none(), "{name}");
        assert_eq!(
            p.claude_files(),
            Vec::<String>::new(),
            "{name}: files created"
        );
    }
}

/// The guard and the UserPromptSubmit hook take the same inputs without
/// crashing, hanging or printing anything but one JSON object.
#[test]
fn guard_and_prompt_hook_take_every_input() {
    let probe = Project::with_claude_dir("stdin-others-cases");
    for (name, bytes, _) in cases(&probe.root) {
        let p = Project::with_claude_dir("stdin-others");
        p.write(STATE_FILE, state_text(3, 0));
        let o = run(command(GUARD, &p, &[]), Stdin::Bytes(&bytes));
        o.assert_fail_open(&format!("guard: {name}"));
        let o = run(command(SETUP, &p, &["hook-prompt"]), Stdin::Bytes(&bytes));
        o.assert_fail_open(&format!("hook-prompt: {name}"));
        assert_eq!(
            p.state().as_deref(),
            Some(state_text(3, 0).as_str()),
            "{name}"
        );
    }
}

/// The client may keep the pipe open after the JSON: the hook must answer
/// from the first value without waiting for the pipe to close (if it waited,
/// it would hit its stdin deadline and answer with a timeout message).
#[test]
fn pipe_kept_open_after_one_object() {
    let p = Project::with_claude_dir("stdin-open");
    p.write(STATE_FILE, state_text(3, 0));
    let input = stop_input(&p.root, "still working");
    let o = run(command(STOP, &p, &[]), Stdin::KeepOpen(&input));
    o.assert_fail_open("pipe kept open");
    assert!(o.is_block(), "answered from the first value: {o:?}");
    assert_eq!(
        LoopState::parse(&p.state().expect("state"))
            .expect("parses")
            .iteration,
        4
    );

    // Same for the guard and the prompt hook.
    let guard_in = bash_input(&p.root, "rm -rf .claude");
    let o = run(command(GUARD, &p, &[]), Stdin::KeepOpen(&guard_in));
    o.assert_fail_open("guard, pipe kept open");
    assert!(o.stdout.contains("deny"), "guard answered: {o:?}");
    let prompt_in = prompt_input(&p.root, "hello");
    let o = run(
        command(SETUP, &p, &["hook-prompt"]),
        Stdin::KeepOpen(&prompt_in),
    );
    o.assert_fail_open("hook-prompt, pipe kept open");
}

/// A pipe that sends nothing and stays open: with a loop, the Stop hook gives
/// up at its stdin deadline (10 s) and fails open with a message; the state
/// is untouched. With `CLAUDE_PROJECT_DIR` set and no loop it never reads.
#[test]
fn silent_pipe_that_stays_open() {
    let p = Project::with_claude_dir("stdin-silent");
    p.write(STATE_FILE, state_text(3, 0));
    let o = run(command(STOP, &p, &[]), Stdin::KeepOpen(b""));
    o.assert_fail_open("silent open pipe");
    let msg = o.system_message();
    assert!(
        !msg.is_empty() && !o.is_block(),
        "fails open with a message: {o:?}"
    );
    assert_eq!(p.state().as_deref(), Some(state_text(3, 0).as_str()));
    eprintln!("silent pipe with a loop: {:?}, {msg}", o.elapsed);

    let q = Project::with_claude_dir("stdin-silent-noloop");
    let o = run(command(STOP, &q, &[]), Stdin::KeepOpen(b""));
    o.assert_fail_open("silent open pipe, no loop");
    assert_eq!(o.json(), None);
    eprintln!("silent pipe, no loop: {:?}", o.elapsed);
}

/// The guard and the UserPromptSubmit hook on a silent pipe that stays open,
/// with a loop: they must give up on their own like the Stop hook (30 s is
/// three times the Stop hook's deadline). Fixed in 4fbe3eb.
#[test]
fn silent_pipe_guard_and_prompt_hook() {
    let p = Project::with_claude_dir("stdin-silent-others");
    p.write(STATE_FILE, state_text(3, 0));
    for (bin, args) in [(GUARD, &[][..]), (SETUP, &["hook-prompt"][..])] {
        let (exited, o) = exits_within(command(bin, &p, args), Stdin::KeepOpen(b""), 30);
        assert!(exited, "{bin} {args:?} still waiting on stdin after 30 s");
        o.assert_fail_open(bin);
    }
}

/// A runner may connect a hook's stdin by a socket (a socketpair) rather
/// than a pipe: the guard reads it on its own thread with the deadline as
/// the socket's timeout, whether the runner closes it, keeps it open after
/// the value, or sends nothing (then it fails open at the deadline).
#[test]
fn the_guard_reads_a_socket_as_it_reads_a_pipe() {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let p = Project::with_claude_dir("stdin-socket");
    p.write(STATE_FILE, state_text(3, 0));
    let guard_in = bash_input(&p.root, "rm -rf .claude");
    for (close, send) in [(true, true), (false, true), (false, false)] {
        let (mut ours, theirs) = UnixStream::pair().unwrap();
        let mut cmd = command(GUARD, &p, &[]);
        cmd.stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )));
        let started = std::time::Instant::now();
        let child = cmd.spawn().expect("spawn guard");
        if send {
            ours.write_all(&guard_in).unwrap();
        }
        if close {
            drop(ours);
            ours = UnixStream::pair().unwrap().0;
        }
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{out:?}");
        if send {
            assert!(stdout.contains("deny"), "close {close}: {stdout}");
            assert!(started.elapsed() < std::time::Duration::from_secs(5));
        } else {
            assert!(!stdout.contains("deny"), "nothing sent: allowed: {stdout}");
            assert!(started.elapsed() >= std::time::Duration::from_secs(9));
        }
        drop(ours);
    }
}

/// Input written in two parts with a pause between: what the guard read
/// without blocking is kept, and the rest is waited for.
#[test]
fn the_guard_waits_for_the_rest_of_an_input_written_in_parts() {
    use std::io::Write;
    let p = Project::with_claude_dir("stdin-parts");
    p.write(STATE_FILE, state_text(3, 0));
    let guard_in = bash_input(&p.root, "rm -rf .claude");
    let (head, tail) = guard_in.split_at(guard_in.len() / 2);
    let mut child = command(GUARD, &p, &[]).spawn().expect("spawn guard");
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(head).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    pipe.write_all(tail).unwrap();
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("deny"),
        "{out:?}"
    );
}
