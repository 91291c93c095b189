//! A run's own files in the project: the run lock (a second `ralph run`
//! is refused) and the runs' folder.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

/// The run lock: held for the whole run, so a second `ralph run` in the same
/// project is refused.
pub(crate) const RUN_LOCK_FILE: &str = ".claude/ralph-run.lock";
/// Where each run keeps its streams and notes.
pub(crate) const RUNS_DIR: &str = ".claude/ralph-runs";

pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Take the project's run lock, or say who holds it.
    pub(crate) fn acquire(root: &Path, holder: &str) -> Result<RunLock, String> {
        let path = root.join(RUN_LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {
                let _ = file.set_len(0);
                let _ = file.write_all(holder.as_bytes());
                Ok(RunLock { _file: file })
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                Err(text.trim().to_string())
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(format!("cannot lock {}: {e}", path.display()))
            }
        }
    }
}

/// Who runs `ralph run` in this project now, if anyone.
pub(crate) fn run_lock_holder(root: &Path) -> Option<String> {
    let mut file = File::open(root.join(RUN_LOCK_FILE)).ok()?;
    match file.try_lock_shared() {
        Ok(()) => None,
        Err(_) => {
            let mut text = String::new();
            file.read_to_string(&mut text).ok()?;
            Some(text.trim().to_string())
        }
    }
}
