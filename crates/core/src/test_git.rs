//! Git for the unit tests: a command with a fixed identity, run in a
//! folder, asserted to succeed, and a repository with one commit. Does I/O
//! (test only).

use std::path::Path;

/// `git ARGS` in `dir` with a test identity; its stdout. Panics when git
/// fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository at `top` whose work file `rel` (relative to `top`) is
/// committed.
pub(crate) fn repo_with_commit(top: &Path, rel: &str) {
    let file = top.join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    git(top, &["init", "-q"]);
    std::fs::write(&file, "a\n").unwrap();
    git(top, &["add", "-A"]);
    git(top, &["commit", "-qm", "start"]);
}
