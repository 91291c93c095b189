//! Issue 44: git's own files and the client's settings, watched. Written
//! past the guard (an interpreter, a link made earlier), a hook, a config
//! key that runs a program or the settings' hooks are named at the next
//! Stop (to the agent as refused work, to the user, in the log) and put
//! back; `.git/info` is named; honest git use is untouched; the end names
//! every change of the loop.

use crate::support::*;

fn watched_loop(tag: &str) -> Project {
    let p = Project::new(tag);
    p.git_init();
    p.write(".claude/settings.json", "{\"permissions\": {}}\n");
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make it work --completion-promise DONE --max-iterations 20",
    );
    assert!(out.is_some_and(|v| v.get("decision").is_none()));
    p
}

#[test]
fn a_planted_hook_config_key_or_settings_hook_is_named_and_put_back() {
    let p = watched_loop("watch-planted");
    // An interpreter's writes (the guard never saw them), one through a
    // link made earlier.
    std::os::unix::fs::symlink(p.root.join(".git/hooks"), p.root.join("h")).unwrap();
    p.write("h/post-checkout", "#!/bin/sh\ntouch PWNED\n");
    let config = p.root.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[core]\n\tfsmonitor = touch PWNED\n");
    std::fs::write(&config, text).unwrap();
    p.write(
        ".claude/settings.json",
        "{\"permissions\": {}, \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"touch PWNED\"}]}]}}\n",
    );
    p.write(".git/info/exclude", "# mine\nsecret.txt\n");
    // A settings file that was not there, with a hook in it.
    p.write(
        ".claude/settings.local.json",
        "{\"statusLine\": {\"type\": \"command\", \"command\": \"touch PWNED\"}}\n",
    );
    let out = p.stop("s1", Some("worked"));
    assert!(is_block(out.as_ref()), "{out:?}");
    let r = reason(out.as_ref());
    assert!(r.starts_with("⚠️ Refused work:"), "{r}");
    assert!(r.contains("added .git/hooks/post-checkout"), "{r}");
    let m = message(out.as_ref());
    assert!(m.contains("Outside the work, at iteration"), "{m}");
    assert!(m.contains("changed .git/config (core.fsmonitor)"), "{m}");
    assert!(m.contains("changed .claude/settings.json (hooks)"), "{m}");
    assert!(m.contains("changed .git/info/exclude"), "{m}");
    // Put back: the hook moved away, the key unset, the settings as they were.
    assert!(!p.root.join(".git/hooks/post-checkout").exists());
    let config = std::fs::read_to_string(p.root.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert_eq!(
        p.read(".claude/settings.json").as_deref(),
        Some("{\"permissions\": {}}\n")
    );
    // Named only: the excludes file stays as the agent left it.
    assert!(p.read(".git/info/exclude").unwrap().contains("secret.txt"));
    assert!(
        p.log().iter().any(|e| e["reason"] == "git_files_changed"),
        "{:?}",
        p.log()
    );
    // The next Stop: nothing new.
    let out = p.stop("s1", Some("worked more"));
    assert!(!reason(out.as_ref()).contains("Refused work"), "{out:?}");
    // The end names what changed during the loop.
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    let m = message(out.as_ref());
    assert!(
        m.contains("Outside the work, during the loop: at iteration"),
        "{m}"
    );
    assert!(!p.root.join("PWNED").exists());
    // And the report, afterwards.
    let (code, report) = p.ralph(&["report"]);
    assert_eq!(code, 0, "{report}");
    assert!(
        report.contains("outside:  at iteration") && report.contains(".git/hooks/post-checkout"),
        "{report}"
    );
}

#[test]
fn honest_git_use_is_not_named() {
    let p = watched_loop("watch-honest");
    git(&p.root, &["config", "user.name", "Someone"]);
    git(
        &p.root,
        &[
            "config",
            "remote.origin.url",
            "https://example.invalid/x.git",
        ],
    );
    p.write(".gitignore", "target/\n");
    // The settings' other keys are the agent's; and the empty files the
    // client's sandbox leaves in the project while a sandboxed command
    // runs (its mount points) run nothing.
    p.write(
        ".claude/settings.json",
        "{\"permissions\": {\"allow\": [\"Bash(ls)\"]}}\n",
    );
    p.write(".claude/settings.local.json", "");
    p.write(".git/config.worktree", "");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "work"]);
    let out = p.stop("s1", Some("worked"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(!reason(out.as_ref()).contains("Refused work"), "{out:?}");
    assert!(
        !message(out.as_ref()).contains("Outside the work"),
        "{out:?}"
    );
}

/// ralph's record of git's files forged (a copy it would put back, or the
/// manifest): the loop pauses for the user, as for its other records, and
/// nothing is put back from it.
#[test]
fn a_forged_record_of_gits_files_pauses_the_loop() {
    let p = watched_loop("watch-forged");
    let dir = p.loop_paths().dir.join("watch");
    std::fs::write(
        dir.join("files/config"),
        "[core]\n\tfsmonitor = touch PWNED; false\n",
    )
    .unwrap();
    git(&p.root, &["config", "core.fsmonitor", "true"]);
    let out = p.stop("s1", Some("worked"));
    assert!(!is_block(out.as_ref()), "paused: {out:?}");
    let m = message(out.as_ref());
    assert!(m.contains("watch/files/config"), "{m}");
    let config = std::fs::read_to_string(p.root.join(".git/config")).unwrap();
    assert!(
        !config.contains("PWNED"),
        "nothing put back from the forged copy"
    );
    // The user resumes: the files as they are now are recorded again, and
    // the loop goes on (no trap).
    let (code, said) = p.ralph(&["resume"]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("Resumed"), "{said}");
    let out = p.stop("s1", Some("worked more"));
    assert!(is_block(out.as_ref()), "fed again: {out:?}");
    // The manifest removed: the same.
    let p = watched_loop("watch-forged-manifest");
    std::fs::remove_file(p.loop_paths().dir.join("watch/manifest.json")).unwrap();
    p.write(".git/hooks/pre-commit", "#!/bin/sh\ntouch PWNED\n");
    let out = p.stop("s1", Some("worked"));
    assert!(!is_block(out.as_ref()), "paused: {out:?}");
    assert!(message(out.as_ref()).contains("watch/manifest.json"));
}
