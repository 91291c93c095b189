//! Where a project's loop files live.
//!
//! The project root is `CLAUDE_PROJECT_DIR` when Claude Code sets it, else the
//! git root above the hook's `cwd`, else that `cwd`. Resolving from the git
//! root (not the shell's current folder) means a `cd` during the loop never
//! loses the state. The git root is found by walking up for `.git` rather than
//! by spawning git: hooks run on every turn and a process spawn costs more than
//! the whole hook.

use std::path::{Path, PathBuf};

/// The state file, relative to the project root (same name as the official plugin).
pub const STATE_FILE: &str = ".claude/ralph-loop.local.md";
/// One JSON object per decision, kept after the loop ends so `status` can say why.
pub const LOG_FILE: &str = ".claude/ralph-loop.log.jsonl";
/// `STORY_ID COUNT`: how many times in a row a PRD story was fed.
pub const LAST_INJECTED_FILE: &str = ".claude/ralph-loop.last-injected";
/// Lock taken around every read-modify-write of the state. A separate file,
/// because the state file itself is replaced by rename on every write.
pub const LOCK_FILE: &str = ".claude/ralph-loop.lock";
/// Results of verify commands, with the tree they ran on.
pub const VERIFY_FILE: &str = ".claude/ralph-loop.verify.json";
/// A blocker the agent writes when it cannot go on (frontmatter `story_id:`).
pub const BLOCKER_FILE: &str = ".ralph-blocker.md";
/// Optional command policy for the guard (lockstride's format).
pub const POLICY_FILE: &str = ".ralph/command-policy";
/// Second, documented policy location; `.ralph/command-policy` wins when both exist.
pub const POLICY_FILE_ALT: &str = ".claude/ralph-policy";

/// The loop files of one project, as absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopPaths {
    pub root: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
    pub last_injected: PathBuf,
    pub lock: PathBuf,
    pub blocker: PathBuf,
    pub verify: PathBuf,
}

impl LoopPaths {
    pub fn new(root: impl Into<PathBuf>) -> LoopPaths {
        let root = root.into();
        LoopPaths {
            state: root.join(STATE_FILE),
            log: root.join(LOG_FILE),
            last_injected: root.join(LAST_INJECTED_FILE),
            lock: root.join(LOCK_FILE),
            blocker: root.join(BLOCKER_FILE),
            verify: root.join(VERIFY_FILE),
            root,
        }
    }
}

/// Resolve the project root from `CLAUDE_PROJECT_DIR` (when non-empty) or `cwd`.
pub fn project_root(env_project_dir: Option<&str>, cwd: &Path) -> PathBuf {
    if let Some(dir) = env_project_dir.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    git_root(cwd).unwrap_or_else(|| cwd.to_path_buf())
}

/// Resolve the project root from the process environment and a hook's `cwd`
/// (falling back to the process's own current folder).
pub fn project_root_from_env(hook_cwd: Option<&str>) -> PathBuf {
    let env = std::env::var("CLAUDE_PROJECT_DIR").ok();
    let cwd = match hook_cwd.filter(|c| !c.is_empty()) {
        Some(c) => PathBuf::from(c),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    project_root(env.as_deref(), &cwd)
}

/// The nearest folder at or above `start` holding `.git` (a folder, or a file
/// for worktrees and submodules).
pub fn git_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_dir_wins_over_cwd() {
        let root = project_root(Some("/p"), Path::new("/elsewhere"));
        assert_eq!(root, PathBuf::from("/p"));
    }

    #[test]
    fn empty_env_dir_is_ignored() {
        let tmp = std::env::temp_dir().join(format!("ralph-paths-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(tmp.join(".git")).unwrap();
        let root = project_root(Some(""), &tmp.join("sub/deeper"));
        assert_eq!(root, tmp);
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn paths_hang_off_root() {
        let p = LoopPaths::new("/proj");
        assert_eq!(p.state, PathBuf::from("/proj/.claude/ralph-loop.local.md"));
        assert_eq!(p.lock, PathBuf::from("/proj/.claude/ralph-loop.lock"));
    }
}
