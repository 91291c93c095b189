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
    p.prompt(
        SESSION,
        "/ralph:ralph-loop task --completion-promise DONE --max-iterations 9",
    );
    let before = p.state();
    p.write(
        "in.json",
        String::from_utf8(stop_input(&p.root, "<promise>DONE</promise>")).unwrap(),
    );
    let o = as_agent(&p, &format!("env -u AI_AGENT {STOP} < in.json"));
    assert_eq!(o.stdout.trim(), "", "{o:?}");
    assert_eq!(p.state(), before, "the loop is untouched");
    // A copy under another name, an empty environment: the same.
    let o = as_agent(
        &p,
        &format!("cp {STOP} ./rsh && env -i PATH=$PATH ./rsh < in.json"),
    );
    assert_eq!(o.stdout.trim(), "", "{o:?}");
    assert_eq!(p.state(), before);
    // A forged /clear hand-over through the session hooks.
    let end =
        r#"{"session_id":"hardening-session-1","hook_event_name":"SessionEnd","reason":"clear"}"#;
    let o = as_agent(
        &p,
        &format!("echo '{end}' | env -u AI_AGENT {SETUP} hook-event"),
    );
    assert_eq!(o.stdout.trim(), "", "{o:?}");
    assert!(!p.loop_paths().handover.exists(), "no hand-over recorded");
    // The report onto the loop's state.
    let state = p.loop_paths().state;
    let o = as_agent(
        &p,
        &format!("env -u AI_AGENT {RALPH} report --html {}", state.display()),
    );
    assert_ne!(o.code, Some(0), "{o:?}");
    assert_eq!(p.state(), before);
    // The same hook run as the user's terminal does: it works.
    let o = run(
        command(STOP, &p, &[]),
        Stdin::Bytes(&stop_input(&p.root, "<promise>DONE</promise>")),
    );
    assert!(!o.is_block(), "{o:?}");
    assert!(p.state().is_none(), "the promise ended the loop");
}

/// The loop's state rewritten in the data folder (by an interpreter: the
/// guard keeps the folder from the agent's tools): the loop pauses and says
/// what changed; the project's copy is not rewritten from it; the owner's
/// Stop is not silenced by a forged session; the user's resume accepts it.
#[test]
fn a_state_changed_outside_ralph_pauses_the_loop_and_says_what_changed() {
    let p = Project::new("tamper-state");
    p.prompt(
        SESSION,
        "/ralph:ralph-loop task --max-iterations 9 --max-stalls 0",
    );
    assert!(is_block(p.stop(SESSION, Some("one")).as_ref()));
    assert!(is_block(p.stop(SESSION, Some("two")).as_ref()));
    let paths = p.loop_paths();
    let ralphs = std::fs::read_to_string(&paths.state).unwrap();
    assert!(ralphs.contains("iteration: 3"), "{ralphs}");
    let forged = ralphs
        .replace("iteration: 3", "iteration: 1")
        .replace(&format!("\"{SESSION}\""), "\"thief\"");
    std::fs::write(&paths.state, &forged).unwrap();
    for _ in 0..2 {
        let out = p.stop(SESSION, Some("three")).expect("the user is told");
        assert!(!is_block(Some(&out)), "{out}");
        let msg = out["systemMessage"].as_str().unwrap_or_default();
        assert!(msg.contains("iteration: 3 -> 1"), "{msg}");
        assert!(msg.contains("session_id"), "{msg}");
    }
    assert_eq!(std::fs::read_to_string(&paths.state).unwrap(), forged);
    // The copy is ralph's last write, without the seal line kept inside
    // the state.
    let body = |t: &str| ralph_core::seal::split_inline(t).0.to_string();
    assert_eq!(p.mirror(), Some(body(&ralphs)), "the copy is ralph's");
    let tampers = p.log().iter().filter(|e| e["decision"] == "tamper").count();
    assert_eq!(tampers, 1, "logged once");
    // No other hook acts on it (and seals it again): a forged /clear
    // hand-over through the session hooks, as the client would run them.
    let end = serde_json::json!({"session_id": SESSION, "cwd": p.root,
        "hook_event_name": "SessionEnd", "reason": "clear"});
    let o = run(
        command(SETUP, &p, &["hook-event"]),
        Stdin::Bytes(end.to_string().as_bytes()),
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(!paths.handover.exists());
    assert_eq!(std::fs::read_to_string(&paths.state).unwrap(), forged);
    let o = run(command(SETUP, &p, &["status"]), Stdin::Bytes(b""));
    assert!(
        o.stdout.contains("changed outside ralph") || o.stderr.contains("changed outside ralph"),
        "{o:?}"
    );
    // Status says it is paused, why, and how to go on (issue 34: it said
    // only `"active": false`).
    let o = run(command(RALPH, &p, &["status", "--json"]), Stdin::Bytes(b""));
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("status JSON");
    assert_eq!(v["active"], true, "{v}");
    assert_eq!(v["iteration"], 3, "{v}");
    assert_eq!(v["paused"]["reason"], "tampered", "{v}");
    let changes = v["paused"]["changes"].to_string();
    assert!(changes.contains("iteration: 3 -> 1"), "{v}");
    let resume = v["paused"]["resume"].as_str().unwrap_or_default();
    assert!(
        resume.contains("ralph resume") && resume.contains("ralph cancel"),
        "{v}"
    );
    let o = run(command(RALPH, &p, &["status"]), Stdin::Bytes(b""));
    assert!(o.stdout.starts_with("Ralph loop paused in"), "{o:?}");
    // Another session's Stop: not its loop (by ralph's record).
    assert_eq!(p.stop("thief", Some("x")), None);
    // The user accepts it.
    let o = run(command(RALPH, &p, &["resume"]), Stdin::Bytes(b""));
    assert!(o.stdout.contains("as they are now"), "{o:?}");
    assert_eq!(p.mirror(), Some(body(&forged)));
    assert!(is_block(p.stop("thief", Some("four")).as_ref()));
}

/// A check result ralph did not write: the loop pauses, naming the file.
#[test]
fn a_result_file_ralph_did_not_write_pauses_the_loop() {
    let p = Project::new("tamper-verify");
    p.prompt(
        SESSION,
        "/ralph:ralph-loop task --max-iterations 9 --max-stalls 0 --verify false",
    );
    assert!(is_block(p.stop(SESSION, Some("one")).as_ref()));
    let paths = p.loop_paths();
    std::fs::write(&paths.verify, "{\"forged\": true}").unwrap();
    std::fs::write(ralph_core::seal::seal_path(&paths.verify), "0 0\n").unwrap();
    let out = p.stop(SESSION, Some("two")).expect("told");
    let msg = out["systemMessage"].as_str().unwrap_or_default();
    assert!(msg.contains("verify.json"), "{msg}");
    assert!(!is_block(Some(&out)));
}
