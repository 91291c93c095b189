//! Where a project's loop files live.
//!
//! The project root is `CLAUDE_PROJECT_DIR` when Claude Code sets it, else the
//! git root above the hook's `cwd`, else that `cwd`. Resolving from the git
//! root (not the shell's current folder) means a `cd` during the loop never
//! loses the state. The git root is found by walking up for `.git` rather than
//! by spawning git: hooks run on every turn and a process spawn costs more than
//! the whole hook.
//!
//! `LoopPaths` also reads its files, typed (`read_state`, `read_verify_log`,
//! ...): the one place where a loop file's text becomes a value. Does I/O.

use crate::blocker::Blocker;
use crate::prd::{Prd, PrdError};
use crate::reinject::Injected;
use crate::state::{LoopState, StateError};
use crate::store::{self, StoreError};
use crate::turn_tools;
use crate::verify::VerifyLog;
use std::path::{Path, PathBuf};
use thiserror::Error;

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
/// The tools each turn called, recorded by the guard (see `turn_tools`).
pub const TURN_TOOLS_FILE: &str = ".claude/ralph-loop.turn-tools";
/// `SESSION UNIX_TIME PID`: the owner's session ended with `/clear` (see `continuity`).
pub const HANDOVER_FILE: &str = ".claude/ralph-loop.handover";
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
    pub turn_tools: PathBuf,
    pub handover: PathBuf,
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
            turn_tools: root.join(TURN_TOOLS_FILE),
            handover: root.join(HANDOVER_FILE),
            root,
        }
    }
}

/// The state file, as read.
// Held once per hook call and matched at once: boxing the loop would only
// add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum StateFile {
    /// No loop.
    Missing,
    /// There, but not readable as text (not UTF-8, not a regular file, an I/O error).
    Unreadable(StoreError),
    /// Text that is not a valid loop state.
    Corrupt {
        text: String,
        error: StateError,
    },
    Loop {
        text: String,
        state: LoopState,
    },
}

/// A file the user named (a PRD, a prompt file) could not be read.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("no such file ({})", .0.display())]
    Missing(PathBuf),
    #[error(transparent)]
    Unreadable(#[from] StoreError),
}

/// Why the loop's PRD cannot be used.
#[derive(Debug, Error)]
pub enum PrdReadError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Invalid(#[from] PrdError),
}

impl LoopPaths {
    /// The state file, read and parsed.
    pub fn read_state(&self) -> StateFile {
        match store::read_optional(&self.state) {
            Ok(None) => StateFile::Missing,
            Err(e) => StateFile::Unreadable(e),
            Ok(Some(text)) => match LoopState::parse(&text) {
                Ok(state) => StateFile::Loop { text, state },
                Err(error) => StateFile::Corrupt { text, error },
            },
        }
    }

    /// Seconds since the state file was last written (0 when unknown).
    pub fn state_age_secs(&self) -> u64 {
        std::fs::metadata(&self.state)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .map_or(0, |d| d.as_secs())
    }

    /// Check results so far; `None` when there are none (or they cannot be read).
    pub fn read_verify_log(&self) -> Option<VerifyLog> {
        read_hint(&self.verify).map(|t| VerifyLog::parse(&t))
    }

    /// The agent's blocker, if it wrote one.
    pub fn read_blocker(&self) -> Option<Blocker> {
        read_hint(&self.blocker).map(|t| Blocker::parse(&t))
    }

    /// The re-injection counter, if it is there and readable.
    pub fn read_last_injected(&self) -> Option<Injected> {
        read_hint(&self.last_injected).and_then(|t| Injected::parse(&t))
    }

    /// The files that live only as long as the loop (not the log, nor the
    /// check results, which `status` still shows after it).
    pub fn sidecars(&self) -> [&Path; 3] {
        [&self.last_injected, &self.turn_tools, &self.handover]
    }

    /// The tools `session` called this turn, as the guard recorded them;
    /// `None` when nothing was recorded (see `turn_tools`).
    pub fn read_turn_tools(&self, session: &str) -> Option<Vec<String>> {
        turn_tools::read(&self.turn_tools).map(|t| turn_tools::tools_of(&t, session))
    }

    /// A file the user named, relative to the project root (or absolute).
    pub fn read_project_file(&self, file: &str) -> Result<String, FileError> {
        let path = self.root.join(file);
        store::read_optional(&path)?.ok_or(FileError::Missing(path))
    }

    /// The loop's PRD as it reads now (structure only, not validated).
    pub fn read_prd(&self, file: &str) -> Result<Prd, PrdReadError> {
        Ok(Prd::parse(&self.read_project_file(file)?)?)
    }
}

/// A sidecar file whose absence or unreadability only means "no hint".
fn read_hint(path: &Path) -> Option<String> {
    store::read_optional(path).ok().flatten()
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
