//! Issue 24: what the agent can no longer set or run to end a loop. The
//! hooks read who started them from their ancestors' initial environments
//! (`ralph_core::ancestry`), which `env -u` cannot reach.

use crate::support::*;

/// `SCRIPT` run as the client runs a Bash call: a shell whose own initial
/// environment says `AI_AGENT=…_agent`, the command inside a longer script.
fn as_agent(p: &Project, script: &str) -> Outcome {
    // Not the last command of `bash -c`, which bash would exec in its place.
    let mut c = command("bash", p, &["-c", &format!("{script}\nexit $?")]);
    c.env("AI_AGENT", "claude-code_2-1-328_agent");
    run(c, Stdin::Bytes(b""))
}

#[test]
fn a_hook_run_by_the_agent_with_its_markers_unset_does_nothing() {
    let p = Project::new("ancestry-stop");
    p.prompt(SESSION, "/ralph:ralph-loop task --completion-promise DONE --max-iterations 9");
    let before = p.state();
    p.write(
        "in.json",
        String::from_utf8(stop_input(&p.root, "<promise>DONE</promise>")).unwrap(),
    );
    let o = as_agent(&p, &format!("env -u AI_AGENT {STOP} < in.json"));
    assert_eq!(o.stdout.trim(), "", "{o:?}");
    assert_eq!(p.state(), before, "the loop is untouched");
    // A copy under another name, an empty environment: the same.
    let o = as_agent(&p, &format!("cp {STOP} ./rsh && env -i PATH=$PATH ./rsh < in.json"));
    assert_eq!(o.stdout.trim(), "", "{o:?}");
    assert_eq!(p.state(), before);
    // A forged /clear hand-over through the session hooks.
    let end = r#"{"session_id":"hardening-session-1","hook_event_name":"SessionEnd","reason":"clear"}"#;
    let o = as_agent(&p, &format!("echo '{end}' | env -u AI_AGENT {SETUP} hook-event"));
    assert_eq!(o.stdout.trim(), "", "{o:?}");
    assert!(!p.loop_paths().handover.exists(), "no hand-over recorded");
    // The report onto the loop's state.
    let state = p.loop_paths().state;
    let o = as_agent(&p, &format!("env -u AI_AGENT {SETUP} report --html {}", state.display()));
    assert_ne!(o.code, Some(0), "{o:?}");
    assert_eq!(p.state(), before);
    // The same hook run as the user's terminal does: it works.
    let o = run(command(STOP, &p, &[]), Stdin::Bytes(&stop_input(&p.root, "<promise>DONE</promise>")));
    assert!(!o.is_block(), "{o:?}");
    assert!(p.state().is_none(), "the promise ended the loop");
}

