//! The working tree as each score saw it: a commit of it made with ralph's
//! own index (the user's index and branch do not move), the files changed
//! between two of them, and `refs/ralph/best`, the best-scored tree, to go
//! back to. Does I/O (git, through `git`, bounded and hermetic).

use crate::git::Git;
use std::path::Path;

/// Where the best-scored tree of the loop is kept.
pub(crate) const BEST_REF: &str = "refs/ralph/best";

/// Files named at most when saying what changed.
const MAX_CHANGED: usize = 8;

/// A commit of the working tree as it is (tracked and untracked files, not
/// the ignored ones, not ralph's own files), on top of `HEAD`: `(tree,
/// commit)`. Made with a copy of the repository's index, so only changed
/// files are hashed and the user's index is never written.
pub(crate) fn snapshot(root: &Path, message: &str) -> Option<(String, String)> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let index =
        std::env::temp_dir().join(format!("ralph-score-index-{}-{seq}", std::process::id()));
    let made = snapshot_with(root, &index, message);
    let _ = std::fs::remove_file(&index);
    made
}

fn snapshot_with(root: &Path, index: &Path, message: &str) -> Option<(String, String)> {
    let real = Git::read(root)
        .text(&["rev-parse", "--git-path", "index"])
        .ok()?;
    let real = root.join(real);
    if real.is_file() {
        std::fs::copy(&real, index).ok()?;
    }
    let git = Git::write(root).with_index(index);
    crate::placeholders::add_work(&git, root, "HEAD").ok()?;
    git.run(&[
        "rm",
        "--cached",
        "-r",
        "-q",
        "--ignore-unmatch",
        "--",
        ":(glob).claude/ralph-*",
        ".ralph-blocker.md",
    ])
    .ok()?;
    let tree = git.text(&["write-tree"]).ok()?;
    let head = Git::read(root)
        .text(&["rev-parse", "--verify", "-q", "HEAD"])
        .ok()
        .filter(|h| !h.is_empty());
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
    if let Some(h) = &head {
        args.extend(["-p", h.as_str()]);
    }
    let commit = Git::write(root).text(&args).ok()?;
    Some((tree, commit))
}

/// The files that differ between two trees, at most [`MAX_CHANGED`] (and
/// how many more).
pub(crate) fn changed(root: &Path, from: &str, to: &str) -> Vec<String> {
    let Ok(out) = Git::read(root).run(&["diff-tree", "-r", "-z", "--name-only", from, to]) else {
        return Vec::new();
    };
    let names: Vec<String> = out
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    if names.len() <= MAX_CHANGED {
        return names;
    }
    let more = names.len() - MAX_CHANGED;
    let mut kept: Vec<String> = names.into_iter().take(MAX_CHANGED).collect();
    kept.push(format!("{more} more"));
    kept
}

/// Point [`BEST_REF`] at `commit`.
pub(crate) fn set_best(root: &Path, commit: &str) -> bool {
    Git::write(root).succeeds(&["update-ref", BEST_REF, commit])
}
