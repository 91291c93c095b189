//! Branches Claude Code leaves behind when it fails to make a worker's
//! worktree. When the main thread hands out several stories in one message,
//! the client runs one `git worktree add -b worktree-agent-<id>` per call,
//! at once; under load git can fail one of them after it made the branch
//! (seen in scenario 65b: `fatal: failed to read
//! .git/worktrees/agent-<other>/commondir`, the other call's worktree half
//! made). The `Agent` call fails, ralph hands the story out again, and the
//! client never removes the branch: no worker ran, so no hook of ralph's
//! ever saw its agent id, and nothing else would remove it.
//!
//! At every Stop of a `--parallel` loop (the main thread's turn is over, so
//! no worktree of this session is being made) ralph removes such a stray:
//! a `worktree-agent-…` branch that no worktree has checked out, made since
//! the loop started (its reflog says when), whose tip the loop's branch
//! already holds (it carries no work). Anything else is left alone. Does I/O.

use super::branches;
use crate::activity::{self, Action, Code, Entry};
use crate::paths::LoopPaths;
use crate::state::LoopState;
use std::path::Path;

/// The prefix of the branch Claude Code makes for a subagent's worktree.
pub(crate) const CLIENT_BRANCH_PREFIX: &str = "worktree-agent-";

/// The branches a `git worktree list --porcelain` says are checked out.
pub(crate) fn checked_out(porcelain: &str) -> Vec<String> {
    porcelain
        .lines()
        .filter_map(|l| l.strip_prefix("branch refs/heads/"))
        .map(str::to_string)
        .collect()
}

/// When a branch was made: the oldest entry of its
/// `git reflog show --date=unix --format=%gd` (`name@{1796144732}`, newest
/// first). `None` without a reflog.
pub(crate) fn created_at(reflog: &str) -> Option<u64> {
    let oldest = reflog.lines().rev().find(|l| !l.trim().is_empty())?;
    let (_, at) = oldest.trim().rsplit_once("@{")?;
    at.strip_suffix('}')?.parse().ok()
}

/// The strays in `root` made at or after Unix time `since` (see the module).
pub(crate) fn strays(root: &Path, since: u64) -> Vec<String> {
    let pattern = format!("refs/heads/{CLIENT_BRANCH_PREFIX}*");
    let Ok(listed) = branches::git(
        root,
        &["for-each-ref", "--format=%(refname:short)", &pattern],
    ) else {
        return Vec::new();
    };
    let Ok(worktrees) = branches::git(root, &["worktree", "list", "--porcelain"]) else {
        return Vec::new();
    };
    let busy = checked_out(&worktrees);
    listed
        .lines()
        .map(str::trim)
        .filter(|b| !b.is_empty() && !busy.iter().any(|c| c == b))
        .filter(|b| {
            let reflog = branches::git(
                root,
                &[
                    "reflog",
                    "show",
                    "--date=unix",
                    "--format=%gd",
                    &format!("refs/heads/{b}"),
                ],
            );
            reflog
                .ok()
                .and_then(|r| created_at(&r))
                .is_some_and(|t| t >= since)
        })
        // Its tip is in the loop's branch: removing it loses nothing.
        .filter(|b| branches::git(root, &["merge-base", "--is-ancestor", b, "HEAD"]).is_ok())
        .map(str::to_string)
        .collect()
}

/// At a Stop of a running `--parallel` loop, the read half of the sweep:
/// the strays made since the loop started.
pub(crate) fn found(paths: &LoopPaths, state: &LoopState) -> Vec<String> {
    let Some(since) = state
        .started_at
        .as_deref()
        .and_then(crate::clock::parse_rfc3339)
    else {
        return Vec::new();
    };
    strays(&paths.root, since)
}

/// The write half of the sweep: the strays [`found`] removed, one log line.
pub(crate) fn sweep(paths: &LoopPaths, found: &[String], session: &str, iteration: u64) {
    let removed: Vec<&str> = found
        .iter()
        .map(String::as_str)
        .filter(|b| branches::git(&paths.root, &["branch", "-D", b]).is_ok())
        .collect();
    if removed.is_empty() {
        return;
    }
    let text = format!(
        "removed {} that Claude Code made for a worker's worktree it then failed to make (no worker ran there)",
        removed.join(", ")
    );
    let code = Code::StrayBranchRemoved.as_str();
    let entry = Entry::now(session, iteration, Action::Cleanup, code).with_message(Some(&text));
    let _ = activity::append(&paths.log, &entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_out_branches_are_read_from_the_porcelain_list() {
        let list = "worktree /p\nHEAD abc\nbranch refs/heads/master\n\n\
                    worktree /p/.claude/worktrees/agent-a1\nHEAD abc\nbranch refs/heads/worktree-agent-a1\n\n\
                    worktree /p/x\nHEAD abc\ndetached\n";
        assert_eq!(checked_out(list), ["master", "worktree-agent-a1"]);
    }

    #[test]
    fn a_branch_was_made_at_its_oldest_reflog_entry() {
        let reflog = "worktree-agent-a@{1796144790}\nworktree-agent-a@{1796144732}\n";
        assert_eq!(created_at(reflog), Some(1_796_144_732));
        assert_eq!(created_at(""), None);
        assert_eq!(created_at("worktree-agent-a@{0}\n"), Some(0));
        assert_eq!(created_at("worktree-agent-a@{nope}"), None);
    }
}
