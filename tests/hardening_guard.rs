//! The guard binary on awkward commands, with a loop active: it must never
//! fall back to "internal error; allowed unchecked" (a panic inside the guard
//! is a way round the loop-file protection), and a command that removes the
//! loop state stays denied whatever bytes trail it.

mod hardening_support;

use hardening_support::*;

fn guard_bash(p: &Project, command_line: &str) -> Outcome {
    let input = serde_json::json!({"session_id": SESSION, "cwd": p.root,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command_line, "description": "x"}})
    .to_string();
    run(command(GUARD, p, &[]), Stdin::Bytes(input.as_bytes()))
}

fn denied(o: &Outcome) -> bool {
    o.json()
        .is_some_and(|v| v["hookSpecificOutput"]["permissionDecision"] == "deny")
}

/// Tails appended to `rm -rf .claude`: quoting, escapes, multi-byte text.
const TAILS: &[&str] = &[
    "",
    " # comment",
    " ; true",
    " && echo ok",
    " \"ü\"",
    " 'ü'",
    " é",
    " \\é",
    " \\қ",
    " `\\ܙ`",
    " $(\\қ)",
    " <(x\\қ)",
    " \\\u{1F600}",
    " \\",
    " \"unterminated",
    " 'unterminated",
    " $(unterminated",
];

#[test]
fn guard_denies_removing_the_state_whatever_trails_it() {
    let p = Project::new("guard-tails");
    p.write(STATE, state_text(2, 0));
    let mut failures = Vec::new();
    for tail in TAILS {
        let cmd = format!("rm -rf .claude{tail}");
        let o = guard_bash(&p, &cmd);
        o.assert_fail_open(&cmd);
        if o.system_message().contains("internal error") || !denied(&o) {
            failures.push(format!("{cmd:?}: {}", o.stdout.trim()));
        }
    }
    assert!(p.state().is_some());
    assert!(failures.is_empty(), "not denied: {failures:#?}");
}
