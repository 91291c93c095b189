//! The loop's files as the runner reads and ends them: whose loop it
//! is, its end written, the activity log, a client session's transcript, the
//! last commit.

use ralph_core::activity::{self, Action, Entry};
use ralph_core::loop_lock::{LOCK_WAIT, LoopLock};
use ralph_core::paths::LoopPaths;
use ralph_core::state_file::StateFile;
use ralph_core::store;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Whether the loop of `session` is still there (not cancelled, not replaced).
pub(crate) fn loop_is_ours(paths: &LoopPaths, session: &str) -> bool {
    match ralph_core::state_file::read(paths) {
        StateFile::Loop { state, .. } => state.session_id == session,
        // A corrupt file is the Stop hook's to report.
        StateFile::Corrupt { .. } | StateFile::Unreadable(_) => true,
        StateFile::Missing => false,
    }
}

/// End this run's loop from the runner (interrupted, or the client kept
/// failing): under the loop lock, remove the state and its sidecar, and log
/// why. Nothing happens when the loop is gone or belongs to someone else.
pub(crate) fn end_loop(
    paths: &LoopPaths,
    session: &str,
    decision: Action,
    reason: &str,
    message: &str,
) -> Result<bool, String> {
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT).map_err(|e| e.to_string())?;
    let StateFile::Loop { state, .. } = ralph_core::state_file::read(paths) else {
        return Ok(false);
    };
    if state.session_id != session {
        return Ok(false);
    }
    ralph_core::state_file::remove(paths).map_err(|e| e.to_string())?;
    ralph_core::config_seen::at_end(paths);
    let _ = store::remove_if_present(&paths.last_injected);
    let _ = store::remove_if_present(&ralph_core::seal::seal_path(&paths.last_injected));
    let entry = Entry::now(session, state.iteration, decision, reason).with_message(Some(message));
    let _ = activity::append(&paths.log, &entry);
    Ok(true)
}

/// Append a runner entry (a wait, a retry) to the loop's activity log.
pub(crate) fn log(
    paths: &LoopPaths,
    session: &str,
    iteration: u64,
    decision: Action,
    reason: &str,
    msg: &str,
) {
    let entry = Entry::now(session, iteration, decision, reason).with_message(Some(msg));
    let _ = activity::append(&paths.log, &entry);
}

/// The length of the activity log now (entries after it are new).
pub(crate) fn log_len(paths: &LoopPaths) -> u64 {
    std::fs::metadata(&paths.log).map(|m| m.len()).unwrap_or(0)
}

/// The last entry of `session` appended to the log after `offset`.
pub(crate) fn log_entry_since(paths: &LoopPaths, offset: u64, session: &str) -> Option<Entry> {
    let mut f = File::open(&paths.log).ok()?;
    f.seek(SeekFrom::Start(offset)).ok()?;
    let mut buf = String::new();
    f.read_to_string(&mut buf).ok()?;
    buf.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
        .find(|e| e.session == session)
}

/// The client's transcript of `session`: `<config>/projects/<dir>/<session>.jsonl`
/// (`<config>` is `$CLAUDE_CONFIG_DIR` or `~/.claude`).
pub(crate) fn transcript_of(session: &str) -> Option<PathBuf> {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        // Windows outside Git Bash: the client's home is the profile folder.
        .or_else(|| std::env::var_os("USERPROFILE").map(|h| PathBuf::from(h).join(".claude")))?;
    let name = format!("{session}.jsonl");
    std::fs::read_dir(config.join("projects"))
        .ok()?
        .filter_map(Result::ok)
        .map(|d| d.path().join(&name))
        .find(|p| p.is_file())
}

/// `git log -1 --format='%h %s'` in the project, if it is a repository.
pub(crate) fn last_commit(root: &Path) -> Option<String> {
    let text = ralph_core::git::Git::read(root)
        .text(&["log", "-1", "--format=%h %s"])
        .ok()?;
    let text = text.trim().to_string();
    (!text.is_empty()).then_some(text)
}
