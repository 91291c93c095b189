//! Durable writes: atomic replace and the loop lock. Does I/O.
//!
//! Every change to the state is a read-modify-write under an exclusive lock on
//! the loop's `lock` file (in its folder outside the project), and lands by
//! writing a temp file in the same
//! folder and renaming it over the target, so a reader (or a crash) sees the
//! old or the new file, never a torn one. The lock is std's `File::lock`
//! (flock; stable since Rust 1.89) rather than fs2, which is unmaintained.
//! Waits are bounded: a hook must finish well inside the client's timeout.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

use crate::transient;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    // No advice to delete the lock file: it is an flock, so a file left by a
    // dead process never blocks anyone, and deleting it while a process holds
    // it would let a second writer in.
    #[error(
        "{path}: another ralph process (or a long check) held the loop lock for over {waited_ms} ms; the next stop will try again"
    )]
    LockTimeout { path: PathBuf, waited_ms: u128 },
    /// A loop file that ralph will not write through: it could redirect the
    /// write to a file the agent chose.
    #[error(
        "{path} is {what}, not a plain file: ralph does not write through it; delete it (the loop's files are ralph's alone)"
    )]
    Unsafe { path: PathBuf, what: &'static str },
}

impl StoreError {
    pub fn io(path: &Path, source: io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The file is there but is not UTF-8 text.
    pub(crate) fn is_not_text(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if source.kind() == io::ErrorKind::InvalidData)
    }
}

/// Open `path` with `options`, making its folder first only when it is
/// missing (every turn opens the lock and the log: no `mkdir` each time).
pub(crate) fn open_making_dir(path: &Path, options: &OpenOptions) -> Result<File, StoreError> {
    match options.open(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            }
            options.open(path)
        }
        other => other,
    }
    .map_err(|e| StoreError::io(path, e))
}

/// Replace `path` with `contents` atomically: a temp file in the same folder,
/// renamed over the target. A reader or a killed process sees the old file or
/// the new one, never a torn one. There is deliberately no fsync: it protects
/// only against power loss, costs 0.4 to 5 ms on every turn (measured), and
/// ext4 already orders a renamed-over file's data before the rename; the worst
/// a power cut can do is lose one increment (one extra turn) or leave an empty
/// file, which the hook reports as corrupt and keeps.
pub fn atomic_write(path: &Path, contents: &[u8]) -> Result<(), StoreError> {
    // Every write holds the loop lock, so older temp files of this target
    // are leftovers of a killed writer: swept here, so at most one is ever
    // left behind.
    sweep_leftovers(path);
    atomic_replace(path, contents)
}

/// [`atomic_write`] without the sweep: for the writes of every turn (the
/// Stop's state, seal and copy), which would otherwise list the folder each
/// time. Leftovers of a killed writer stay until the next sweeping write of
/// the same file (session events, resume, setup), the loop's end, or a write
/// that fails, which sweeps.
pub(crate) fn atomic_replace(path: &Path, contents: &[u8]) -> Result<(), StoreError> {
    // No refusal of a link here: a rename replaces the name itself (a
    // symbolic link, or one name of a hard-linked file), never writing
    // through it, so a planted link is simply replaced by ralph's file. A
    // refusal would let one `ln` stop the loop.
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    // A temp name nobody can guess, created exclusively (O_EXCL: a link
    // planted under that name makes the create fail instead of being
    // followed).
    let tmp = dir.join(format!(".{name}.{}.tmp", unique_suffix()));
    let write = || -> io::Result<()> {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(contents)?;
        drop(f);
        transient::patiently(|| fs::rename(&tmp, path))
    };
    // The folder is made only when it is missing (the first write).
    let result = match write() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(dir)
            .map_err(|e| StoreError::io(dir, e))
            .and_then(|()| write().map_err(|e| StoreError::io(path, e))),
        other => other.map_err(|e| StoreError::io(path, e)),
    };
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        sweep_leftovers(path);
    }
    result
}

/// Replace `path` with `contents` as a reader sees it atomically, for a file
/// rewritten every turn (the loop's state): the text is written into a spare
/// file beside it (`.NAME.spare`), which is then swapped in with
/// `renameat2(RENAME_EXCHANGE)`; the old text becomes the next spare. Why not
/// [`atomic_replace`]: a rename over a file with data makes ext4 flush the
/// new file's blocks and free the old one's (`auto_da_alloc`), ~0.5 ms of
/// every Stop on ext4 (measured: 575 µs against 97 µs a write); an exchange
/// allocates, frees and flushes nothing.
///
/// The same guarantees as a rename: a reader (or a writer killed at any
/// point) meets the old text or the new one, never a torn one, since only
/// the spare, which nobody reads, is written in place. The spare is written
/// only when it is a plain file (regular, one name, not a link: opened with
/// `O_NOFOLLOW` and judged by `fstat` of what was opened); anything else
/// there is removed and the write goes by [`atomic_replace`], as it does
/// off Linux, on a file system without exchange, and for the first write.
pub(crate) fn exchange_replace(path: &Path, contents: &[u8]) -> Result<(), StoreError> {
    #[cfg(target_os = "linux")]
    if exchange::replace(path, contents) {
        return Ok(());
    }
    atomic_replace(path, contents)
}

/// The spare beside `path` that [`exchange_replace`] swaps in.
pub(crate) fn spare_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    path.with_file_name(format!(".{name}.spare"))
}

#[cfg(target_os = "linux")]
mod exchange {
    use std::fs::{self, OpenOptions};
    use std::io::Write;
    use std::path::Path;

    use rustix::fs::{CWD, RenameFlags, renameat_with};

    /// Whether `contents` is now at `path` by an exchange with its spare;
    /// `false`: nothing was swapped in, the caller writes by rename (no
    /// spare yet, the target missing, a spare that is not plain, an error,
    /// a file system without `RENAME_EXCHANGE`).
    pub(super) fn replace(path: &Path, contents: &[u8]) -> bool {
        let spare = super::spare_path(path);
        if !write_spare(&spare, contents) {
            // A spare that is not ralph's plain file, or half written: gone,
            // so the next turn's exchange starts from a clean one.
            let _ = fs::remove_file(&spare);
            return false;
        }
        match renameat_with(CWD, &spare, CWD, path, RenameFlags::EXCHANGE) {
            Ok(()) => true,
            // The target is missing (the first write) or the file system
            // cannot exchange: a plain rename of the spare, written whole
            // already, is the atomic write.
            Err(_) => fs::rename(&spare, path).is_ok(),
        }
    }

    /// Write `contents` over the spare in place ([`super::overwrite_plain`]:
    /// a link, a special file or a second name is refused on the file
    /// opened). A missing spare is made (`O_EXCL`: a link planted under its
    /// name fails the create instead of being followed).
    fn write_spare(spare: &Path, contents: &[u8]) -> bool {
        match super::overwrite_plain(spare, contents) {
            Ok(()) => true,
            Err(super::StoreError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(spare)
                    .and_then(|mut f| f.write_all(contents))
                    .is_ok()
            }
            Err(_) => false,
        }
    }
}

/// Remove the temp files of writes to `path` that were cut short
/// (`.NAME.*.tmp` beside it).
pub(crate) fn sweep_leftovers(path: &Path) {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    sweep_temp_files(dir, name);
}

/// Refuse a target that is a symbolic link, a FIFO, a directory or another
/// special file, or a file with other hard links: writing it in place (the
/// counter, the log) would change a file someone else chose. A missing
/// target is fine.
pub(crate) fn refuse_unsafe(path: &Path) -> Result<(), StoreError> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if !kind.is_file() {
        "a special file (FIFO, socket or device)"
    } else if hard_links(&meta) > 1 {
        "a file with other hard links"
    } else {
        return Ok(());
    };
    Err(StoreError::Unsafe {
        path: path.to_path_buf(),
        what,
    })
}

#[cfg(unix)]
fn hard_links(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn hard_links(_meta: &fs::Metadata) -> u64 {
    1
}

/// Process id, time and a counter: unique per write, not guessable ahead.
fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Remove `.NAME.*.tmp` left in `dir` by writers that were killed.
fn sweep_temp_files(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        if file.starts_with(&prefix) && file.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Overwrite a small file in place (no temp file, no rename). Only for hints
/// whose loss is harmless, like the re-injection counter: a crash mid-write
/// leaves it empty, which reads as "no counter" (one more attempt, still
/// bounded by the cap), and it saves a file creation and a rename per turn,
/// which cost 0.3 to 2 ms each on a busy disk (measured).
pub(crate) fn overwrite_hint(path: &Path, contents: &[u8]) -> Result<(), StoreError> {
    // Written at offset 0 and then cut to length, never truncated to zero
    // first: ext4 flushes a file truncated to zero and rewritten
    // (auto_da_alloc), which is what made this write slow.
    refuse_unsafe(path)?;
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .and_then(|mut f| {
            f.write_all(contents)?;
            f.set_len(contents.len() as u64)
        })
        .map_err(|e| StoreError::io(path, e))
}

/// The largest file ralph reads whole (state, PRD, blocker, policy).
pub(crate) const MAX_READ_BYTES: u64 = 64 << 20;

/// Read a file as text; `Ok(None)` when it does not exist. Only regular files
/// of at most `MAX_READ_BYTES` are read: a FIFO would block the hook (inside
/// the loop lock) and `/dev/zero` would never end. Opened without blocking
/// (a FIFO opens at once) and judged by one `fstat` of what was opened, so
/// a read costs one open, one stat and the reads.
pub fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    read_checked(path, false, None)
}

/// [`read_optional`] of a file that may be at most `limit` bytes: a larger
/// one is an error ("larger than LIMIT bytes"), judged by the same `fstat`.
pub fn read_limited(path: &Path, limit: u64) -> Result<Option<String>, StoreError> {
    read_checked(path, false, Some(limit))
}

/// [`read_optional`] of a file ralph writes in place: a symbolic link (not
/// followed), a special file or a file with other hard links is refused
/// ([`StoreError::Unsafe`]), judged on the file opened, not by a second
/// look at its name.
pub(crate) fn read_plain(path: &Path) -> Result<Option<String>, StoreError> {
    read_checked(path, true, None)
}

fn read_checked(
    path: &Path,
    plain: bool,
    limit: Option<u64>,
) -> Result<Option<String>, StoreError> {
    let file = match transient::patiently(|| {
        open_quietly(OpenOptions::new().read(true), path, plain)
    }) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if plain && is_link_refusal(&e) => return Err(unsafe_file(path, "a symbolic link")),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| StoreError::io(path, e))?;
    if plain {
        plain_file(path, &meta)?;
    }
    if !meta.is_file() {
        return Err(invalid(path, "not a regular file".into()));
    }
    if let Some(limit) = limit.filter(|l| meta.len() > *l) {
        return Err(invalid(path, format!("larger than {limit} bytes")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(invalid(
            path,
            format!("larger than {} MB", MAX_READ_BYTES >> 20),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    io::Read::read_to_end(&mut io::Read::take(&file, MAX_READ_BYTES + 1), &mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    String::from_utf8(bytes).map(Some).map_err(|_| {
        StoreError::io(
            path,
            io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"),
        )
    })
}

/// Overwrite a plain file ralph wrote, in place: no temp file, no rename
/// (on ext4 a rename over a file with data costs 0.2-0.4 ms: it flushes).
/// Written at offset 0 in one `write`, then cut to length when shorter, so a
/// reader may meet a half-written file for the instant of the write: only
/// for a copy whose readers can take that (the project's mirror of the
/// state, compared and restored at every Stop; the state's spare, which
/// nobody reads: [`exchange_replace`]). A link, a special file or
/// one with other hard links is refused, on the file opened; a missing
/// file too (`NotFound`): the caller then writes it by rename.
pub(crate) fn overwrite_plain(path: &Path, contents: &[u8]) -> Result<(), StoreError> {
    let opened = transient::patiently(|| open_quietly(OpenOptions::new().write(true), path, true));
    let mut file = opened.map_err(|e| {
        if is_link_refusal(&e) {
            unsafe_file(path, "a symbolic link")
        } else {
            StoreError::io(path, e)
        }
    })?;
    let meta = file.metadata().map_err(|e| StoreError::io(path, e))?;
    plain_file(path, &meta)?;
    file.write_all(contents)
        .map_err(|e| StoreError::io(path, e))?;
    if meta.len() > contents.len() as u64 {
        file.set_len(contents.len() as u64)
            .map_err(|e| StoreError::io(path, e))?;
    }
    Ok(())
}

/// Open without blocking on a FIFO and, when `plain`, without following a
/// symbolic link at the last step.
fn open_quietly(options: &mut OpenOptions, path: &Path, plain: bool) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if plain { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    #[cfg(not(unix))]
    if plain && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::from_raw_os_error(40));
    }
    options.open(path)
}

/// `open` refused a symbolic link (`O_NOFOLLOW`: ELOOP on Linux, EMLINK on
/// some BSDs).
fn is_link_refusal(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EMLINK))
    }
    #[cfg(not(unix))]
    {
        e.raw_os_error() == Some(40)
    }
}

/// The file opened is a plain one: regular, one name.
fn plain_file(path: &Path, meta: &fs::Metadata) -> Result<(), StoreError> {
    if meta.is_dir() {
        Err(unsafe_file(path, "a directory"))
    } else if !meta.is_file() {
        Err(unsafe_file(path, "a special file (FIFO, socket or device)"))
    } else if hard_links(meta) > 1 {
        Err(unsafe_file(path, "a file with other hard links"))
    } else {
        Ok(())
    }
}

fn unsafe_file(path: &Path, what: &'static str) -> StoreError {
    StoreError::Unsafe {
        path: path.to_path_buf(),
        what,
    }
}

fn invalid(path: &Path, why: String) -> StoreError {
    StoreError::io(path, io::Error::new(io::ErrorKind::InvalidInput, why))
}

/// Remove a file; a file already gone is fine (cancel is idempotent).
pub fn remove_if_present(path: &Path) -> Result<bool, StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Move a file aside as `NAME.corrupt-<unix time>` so nothing the user might
/// need is lost; returns the new path.
pub(crate) fn move_aside(path: &Path, unix_secs: u64) -> Result<PathBuf, StoreError> {
    let target = aside_name(path, unix_secs);
    fs::rename(path, &target).map_err(|e| StoreError::io(path, e))?;
    Ok(target)
}

/// `PATH.corrupt-<unix time>` (with `-N` added while that name is taken).
pub(crate) fn aside_name(path: &Path, unix_secs: u64) -> PathBuf {
    let mut target = PathBuf::from(format!("{}.corrupt-{unix_secs}", path.display()));
    let mut n = 1;
    while target.symlink_metadata().is_ok() {
        target = PathBuf::from(format!("{}.corrupt-{unix_secs}-{n}", path.display()));
        n += 1;
    }
    target
}

/// Append one line (a `\n` is added) in a single write.
pub(crate) fn append_line(path: &Path, line: &str) -> Result<(), StoreError> {
    refuse_unsafe(path)?;
    let mut f = open_making_dir(path, OpenOptions::new().create(true).append(true))?;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    f.write_all(buf.as_bytes())
        .map_err(|e| StoreError::io(path, e))
}

/// A file whose absence or unreadability only means "no hint" (a sidecar of
/// the loop's: the counter, the blocker, the check results).
pub(crate) fn read_hint(path: &Path) -> Option<String> {
    read_optional(path).ok().flatten()
}

/// A file the user named (a PRD, a prompt file) could not be read.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("no such file ({})", .0.display())]
    Missing(PathBuf),
    #[error(transparent)]
    Unreadable(#[from] StoreError),
}

/// A file the user named, relative to the project root (or absolute).
pub(crate) fn read_named(root: &Path, file: &str) -> Result<String, FileError> {
    let path = root.join(file);
    read_optional(&path)?.ok_or(FileError::Missing(path))
}

// Symbolic links and special files, made with Unix calls (a symbolic link
// needs a privilege on Windows): Unix only.
#[cfg(test)]
#[cfg(unix)]
mod unsafe_target_tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ralph-store-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn links_and_special_files_are_never_written_through() {
        let d = dir("unsafe");
        let victim = d.join("victim.txt");
        fs::write(&victim, "mine").unwrap();
        let link = d.join("state.md");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        // In-place writes refuse the link.
        for write in [overwrite_hint(&link, b"x"), append_line(&link, "x")] {
            assert!(matches!(write, Err(StoreError::Unsafe { .. })), "{write:?}");
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
        // A replacing write replaces the link with ralph's own file.
        atomic_write(&link, b"new").unwrap();
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");

        let hard = d.join("hard.md");
        fs::hard_link(&victim, &hard).unwrap();
        assert!(matches!(
            append_line(&hard, "x"),
            Err(StoreError::Unsafe { .. })
        ));
        atomic_write(&hard, b"new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
        let sub = d.join("dir.md");
        fs::create_dir(&sub).unwrap();
        assert!(atomic_write(&sub, b"x").is_err());
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_planted_temp_name_is_not_followed_and_leftovers_are_swept() {
        let d = dir("temp");
        let victim = d.join("victim.txt");
        fs::write(&victim, "mine").unwrap();
        // The old fixed temp name, and a leftover of a killed writer.
        std::os::unix::fs::symlink(&victim, d.join(".state.md.tmp")).unwrap();
        fs::write(d.join(".state.md.123-abc-0.tmp"), "stale").unwrap();
        atomic_write(&d.join("state.md"), b"new").unwrap();
        assert_eq!(fs::read_to_string(d.join("state.md")).unwrap(), "new");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
        let temps: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(temps.is_empty(), "{temps:?}");
        fs::remove_dir_all(d).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ralph-store-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tmpdir("aw");
        let p = d.join("state.md");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn exchange_replace_swaps_a_spare_in_and_never_leaves_a_torn_text() {
        let d = tmpdir("xchg");
        let p = d.join("state.md");
        // The first write (no target yet), then turns that grow and shrink.
        for text in ["one", "a longer second text", "3", "fourth"] {
            exchange_replace(&p, text.as_bytes()).unwrap();
            assert_eq!(fs::read_to_string(&p).unwrap(), text);
        }
        let spare = spare_path(&p);
        assert_eq!(spare.file_name().unwrap(), ".state.md.spare");
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::MetadataExt;
            // The text before is the spare now, and the target is one of
            // the two inodes that take turns (nothing made per turn).
            assert_eq!(fs::read_to_string(&spare).unwrap(), "3");
            let inodes = [
                fs::metadata(&p).unwrap().ino(),
                fs::metadata(&spare).unwrap().ino(),
            ];
            exchange_replace(&p, b"fifth").unwrap();
            assert_eq!(fs::metadata(&p).unwrap().ino(), inodes[1]);
            assert_eq!(fs::metadata(&spare).unwrap().ino(), inodes[0]);
        }
        // No temp file: the folder holds the target and its spare only.
        let mut names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        let expected: Vec<std::ffi::OsString> = if cfg!(target_os = "linux") {
            vec![".state.md.spare".into(), "state.md".into()]
        } else {
            vec!["state.md".into()]
        };
        assert_eq!(names, expected);
        fs::remove_dir_all(d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_spare_is_never_written_through() {
        let d = tmpdir("xchg-planted");
        let p = d.join("state.md");
        let victim = d.join("victim.txt");
        exchange_replace(&p, b"state one").unwrap();
        let spare = spare_path(&p);
        // A symbolic link, then a second name of another file, where the
        // spare goes: the text lands in the target, the victim is untouched.
        for plant in [
            |v: &Path, s: &Path| std::os::unix::fs::symlink(v, s).unwrap(),
            |v: &Path, s: &Path| fs::hard_link(v, s).unwrap(),
        ] {
            fs::write(&victim, "mine").unwrap();
            let _ = fs::remove_file(&spare);
            plant(&victim, &spare);
            exchange_replace(&p, b"state two").unwrap();
            assert_eq!(fs::read_to_string(&p).unwrap(), "state two");
            assert_eq!(fs::read_to_string(&victim).unwrap(), "mine");
            assert!(fs::symlink_metadata(&p).unwrap().is_file());
        }
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn overwrite_hint_cuts_a_longer_old_content() {
        let d = tmpdir("hint");
        let p = d.join("hint");
        overwrite_hint(&p, b"US-100 12\n").unwrap();
        overwrite_hint(&p, b"US-1 3\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "US-1 3\n");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn only_regular_files_are_read() {
        let d = tmpdir("regular");
        assert!(read_optional(&d).is_err(), "a folder");
        assert!(read_optional(Path::new("/dev/zero")).is_err());
        assert_eq!(read_optional(&d.join("missing")).unwrap(), None);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn move_aside_keeps_the_file() {
        let d = tmpdir("aside");
        let p = d.join("s.md");
        fs::write(&p, "garbage").unwrap();
        let moved = move_aside(&p, 42).unwrap();
        assert!(!p.exists());
        assert_eq!(fs::read_to_string(&moved).unwrap(), "garbage");
        assert!(moved.to_string_lossy().ends_with("s.md.corrupt-42"));
        fs::remove_dir_all(d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_plain_file_is_overwritten_in_place_and_a_link_never() {
        let d = tmpdir("plain");
        let p = d.join("copy.md");
        assert!(
            overwrite_plain(&p, b"x").is_err(),
            "a missing file is not made"
        );
        fs::write(&p, "iteration: 9\nlonger tail\n").unwrap();
        overwrite_plain(&p, b"iteration: 10\n").unwrap();
        assert_eq!(read_plain(&p).unwrap().as_deref(), Some("iteration: 10\n"));
        overwrite_plain(&p, b"iteration: 10\nand more\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "iteration: 10\nand more\n");
        let target = d.join("elsewhere");
        fs::write(&target, "theirs").unwrap();
        let link = d.join("link.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let hard = d.join("hard.md");
        fs::hard_link(&target, &hard).unwrap();
        for f in [&link, &hard] {
            assert!(matches!(
                overwrite_plain(f, b"ours"),
                Err(StoreError::Unsafe { .. })
            ));
            assert!(matches!(read_plain(f), Err(StoreError::Unsafe { .. })));
        }
        assert_eq!(fs::read_to_string(&target).unwrap(), "theirs");
        fs::remove_dir_all(d).unwrap();
    }
}
