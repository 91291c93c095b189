//! `--parallel`: the branch Claude Code leaves when it fails to make a
//! worker's worktree (two `git worktree add` at once, under load: scenario
//! 65b) is removed at the next Stop; every other branch stays.

use std::process::Command;

use crate::parallel::{branches, logged, main_stop_while_running, parallel_loop, worker};
use crate::support::*;

#[test]
fn a_stop_removes_the_branch_of_a_worktree_the_client_failed_to_make() {
    let p = parallel_loop("par-stray");
    let alive = worker(&p, "g2", "US-2");
    // The failed `git worktree add -b worktree-agent-g1`: the branch, no worktree.
    git(&p.root, &["branch", "worktree-agent-g1"]);
    // The user's own, from before the loop: made in 2001.
    let old = Command::new("git")
        .args(["branch", "worktree-agent-old"])
        .env("GIT_COMMITTER_DATE", "2001-01-01T00:00:00Z")
        .current_dir(&p.root)
        .status()
        .unwrap();
    assert!(old.success());
    // One with work of its own (a commit the loop's branch lacks).
    git(&p.root, &["branch", "worktree-agent-work"]);
    git(&p.root, &["commit", "-q", "--allow-empty", "-m", "work"]);
    git(&p.root, &["branch", "-f", "worktree-agent-work", "HEAD"]);
    git(&p.root, &["reset", "-q", "--hard", "HEAD~1"]);
    let out = main_stop_while_running(&p, "Noted.", "g2", "US-2");
    // US-1 goes out again (the failed call's story), as before.
    assert!(
        reason(out.as_ref()).contains("description \"story US-1\""),
        "{out:?}"
    );
    assert!(alive.exists(), "the running worker's worktree stays");
    let mut have = branches(&p);
    have.sort();
    assert_eq!(
        have,
        [
            "master",
            "worktree-agent-g2",
            "worktree-agent-old",
            "worktree-agent-work"
        ]
    );
    let cleanup = logged(&p, "cleanup", "stray_branch_removed").unwrap();
    let said = cleanup["message"].as_str().unwrap();
    assert!(said.contains("worktree-agent-g1"), "{said}");
    assert!(!said.contains("old") && !said.contains("-work"), "{said}");
}
