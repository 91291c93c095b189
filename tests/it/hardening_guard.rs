//! The guard binary on awkward commands, with a loop active: it must never
//! fall back to "internal error; allowed unchecked" (a panic inside the guard
//! is a way round the loop-file protection), and a command that removes the
//! loop state stays denied whatever bytes trail it.

use crate::support::*;

fn guard_bash(p: &Project, command_line: &str) -> Outcome {
    run(
        command(GUARD, p, &[]),
        Stdin::Bytes(&bash_input(&p.root, command_line)),
    )
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
    let p = Project::with_claude_dir("guard-tails");
    p.write(STATE_FILE, state_text(2, 0));
    let mut failures = Vec::new();
    for tail in TAILS {
        let cmd = format!("rm -rf .claude{tail}");
        let o = guard_bash(&p, &cmd);
        o.assert_fail_open(&cmd);
        if o.system_message().contains("internal error") || !o.is_denied() {
            failures.push(format!("{cmd:?}: {}", o.stdout.trim()));
        }
    }
    assert!(p.state().is_some());
    assert!(failures.is_empty(), "not denied: {failures:#?}");
}
