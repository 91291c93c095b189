//! The loop's lock: one ralph process at a time reads and writes a loop's
//! files. A `flock` on a file in ralph's folder, which no process but
//! ralph's may hold (`lock_holders`), made again when something else is put
//! in its place. Does I/O.

use crate::lock_holders::{Waited, stop_holders};
use crate::store::{StoreError, open_making_dir};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a hook waits for the loop lock before giving up (and failing open).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// An exclusive hold on the loop lock, released on drop.
#[derive(Debug)]
pub struct LoopLock {
    file: File,
    /// The agent's processes that held it, stopped to take it (in words).
    freed: Option<String>,
}

impl LoopLock {
    /// Take the lock at `path` (creating it and its folder), waiting at most
    /// `wait` for another ralph process (or the user's) to let it go; a
    /// holder of the agent's is stopped at once (`lock_holders`).
    pub fn acquire(path: &Path, wait: Duration) -> Result<LoopLock, StoreError> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        let mut freed = None;
        let mut looked = 0;
        let mut deadline = wait;
        let mut file = open_lock_file(path, &mut freed)?;
        loop {
            match file.try_lock() {
                // The name may have been given to another file meanwhile
                // (removed and made again, by the agent): a lock on the old
                // one shuts out nobody, so the name's file is taken instead.
                Ok(()) if names_file(path, &file) => return Ok(LoopLock { file, freed }),
                Ok(()) => file = open_lock_file(path, &mut freed)?,
                Err(TryLockError::WouldBlock) if start.elapsed() < deadline => {
                    // Who holds it, at once and again after a while (a new
                    // holder the agent started meanwhile).
                    if looked == 0 || (looked == 1 && start.elapsed() > wait / 4) {
                        looked += 1;
                        if let Some(said) = stop_holders(&file, path, Waited::NotYet) {
                            freed = Some(said);
                            continue;
                        }
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(TryLockError::WouldBlock) if deadline == wait => {
                    // Held the whole wait: any holder but ralph's is
                    // stopped, and its end waited for a moment more.
                    deadline = wait + Duration::from_secs(1);
                    if let Some(said) = stop_holders(&file, path, Waited::Long) {
                        freed = Some(said);
                    }
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(StoreError::LockTimeout {
                        path: path.to_path_buf(),
                        waited_ms: start.elapsed().as_millis(),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
            }
        }
    }
}

/// Open the lock file at `path` (made when missing). Write-only and
/// unreadable: inside the client's sandbox (ralph's folder read-only) the
/// agent's processes cannot open it at all, unless they run as root. Never
/// through a link, and a folder or a link put in its place (which no ralph
/// makes) is removed and the file made again: said in `freed`.
fn open_lock_file(path: &Path, freed: &mut Option<String>) -> Result<File, StoreError> {
    let first = open_making_dir(path, &lock_options());
    let Err(StoreError::Io { source, .. }) = &first else {
        return first;
    };
    let Ok(meta) = fs::symlink_metadata(path) else {
        return first;
    };
    if meta.is_file() || source.kind() == io::ErrorKind::PermissionDenied {
        return first;
    }
    let removed = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.map_err(|e| StoreError::io(path, e))?;
    *freed = Some(format!(
        "the loop's lock ({}) had been replaced by a {}; ralph made it again",
        path.display(),
        if meta.is_dir() {
            "folder"
        } else {
            "link or special file"
        }
    ));
    open_making_dir(path, &lock_options())
}

/// Whether `path` still names the open `file`.
fn names_file(path: &Path, file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::symlink_metadata(path), file.metadata()) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, file);
        true
    }
}

impl LoopLock {
    /// Make the lock file at `path` as ralph makes it (write-only), not
    /// taking it.
    pub(crate) fn make_file(path: &Path) -> Result<(), StoreError> {
        open_making_dir(path, &lock_options()).map(drop)
    }

    /// The agent's processes that held the lock, stopped to take it.
    pub fn freed(&self) -> Option<&str> {
        self.freed.as_deref()
    }
}

/// How the lock file is opened (and made: owner write-only, no read).
fn lock_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o200)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options
}

impl Drop for LoopLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ralph-lock-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// A hold of ralph's own (here, this process's) is waited for, then
    /// given up on with a clear error: never stopped.
    #[test]
    fn lock_is_exclusive_and_bounded() {
        let d = tmpdir("bounded");
        let p = d.join("x.lock");
        let held = LoopLock::acquire(&p, LOCK_WAIT).unwrap();
        let err = LoopLock::acquire(&p, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(err, StoreError::LockTimeout { .. }));
        drop(held);
        LoopLock::acquire(&p, Duration::from_millis(30)).unwrap();
        fs::remove_dir_all(d).unwrap();
    }

    /// The name given to another file while a hold was being taken: the
    /// hold is on the file the name has. (Unix: Windows does not let a file
    /// held open be removed.)
    #[test]
    #[cfg(unix)]
    fn a_lock_file_removed_and_made_again_is_the_one_taken() {
        let d = tmpdir("renamed");
        let p = d.join("x.lock");
        let first = LoopLock::acquire(&p, LOCK_WAIT).unwrap();
        fs::remove_file(&p).unwrap();
        // Another ralph's hold, taken on the new file under the name.
        let second = LoopLock::acquire(&p, LOCK_WAIT).unwrap();
        assert!(names_file(&p, &second.file));
        assert!(!names_file(&p, &first.file));
        fs::remove_dir_all(d).unwrap();
    }
}
