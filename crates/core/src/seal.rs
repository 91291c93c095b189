//! Seals: did ralph write this file of the loop's folder? I/O.
//!
//! Beside each file it alone writes there (`state.md`, `verify.json`,
//! `review.json`), ralph keeps `<file>.seal`: the digest of what it wrote
//! (and of what was there before, so that a write cut short between the
//! seal and the file is not taken for tampering). A Stop reads the file and
//! its seal together; a file that matches neither digest was written by
//! someone else (an interpreter run by the agent: the guard keeps the folder
//! from its tools), and the loop pauses, naming the file and what changed,
//! instead of trusting it or rewriting the project's copy from it.
//!
//! The limit: the digest is not keyed (a key would have to be kept where a
//! program with the user's rights could read it too), so a program that
//! knows this scheme can rewrite a file and its seal together.

use crate::store::{self, StoreError};
use std::path::{Path, PathBuf};

/// What a file's seal says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// ralph wrote it as it is.
    Intact,
    /// No seal: a loop started before seals, or a file ralph never wrote.
    Unsealed,
    /// Changed since ralph wrote it.
    Broken,
}

/// The seal's path: `<file>.seal`.
pub fn seal_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".seal");
    PathBuf::from(name)
}

/// FNV-1a 64 and the length: a change of any byte shows.
fn digest(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}:{}", bytes.len())
}

/// Write `contents` to `file` atomically, sealed: the seal first (naming
/// the new digest and the one before), then the file.
pub fn write(file: &Path, contents: &[u8]) -> Result<(), StoreError> {
    store::sweep_leftovers(file);
    store::sweep_leftovers(&seal_path(file));
    let before = store::read_optional(file).ok().flatten();
    write_over(file, contents, before.as_deref())
}

/// [`write`], when the caller read the file under the same lock: `before`
/// is its text then (`None`: there was none), so it is not read again. No
/// sweep of leftover temp files (see `store::atomic_replace`).
pub fn write_over(file: &Path, contents: &[u8], before: Option<&str>) -> Result<(), StoreError> {
    let before = before.map(|t| digest(t.as_bytes())).unwrap_or_default();
    let seal = format!("{} {before}\n", digest(contents));
    store::atomic_replace(&seal_path(file), seal.as_bytes())?;
    store::atomic_replace(file, contents)
}

/// Seal `file` as it is now (the user accepted it: `/ralph-resume`).
pub fn accept(file: &Path) -> Result<(), StoreError> {
    match store::read_optional(file)? {
        Some(text) => {
            let seal = format!("{} \n", digest(text.as_bytes()));
            store::atomic_write(&seal_path(file), seal.as_bytes())
        }
        None => remove(file),
    }
}

/// The file is gone: its seal goes too.
pub fn remove(file: &Path) -> Result<(), StoreError> {
    store::remove_if_present(&seal_path(file)).map(|_| ())
}

/// `text`, as read from `file`, against its seal.
pub fn check(file: &Path, text: &str) -> Seal {
    match store::read_optional(&seal_path(file)) {
        Ok(Some(seal)) => judge(&seal, text),
        Ok(None) => Seal::Unsealed,
        Err(_) => Seal::Broken,
    }
}

/// Is `file` (absent: nothing to check) as ralph wrote it?
pub fn check_file(file: &Path) -> Seal {
    match store::read_optional(file) {
        Ok(Some(text)) => check(file, &text),
        Ok(None) => Seal::Intact,
        Err(_) => Seal::Broken,
    }
}

/// The rule: the text is one of the digests the seal names.
fn judge(seal: &str, text: &str) -> Seal {
    let d = digest(text.as_bytes());
    if seal.split_whitespace().any(|s| s == d) {
        Seal::Intact
    } else {
        Seal::Broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ralphs_writes_are_intact_anyone_elses_are_broken() {
        let d = std::env::temp_dir().join(format!("ralph-seal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("state.md");
        assert_eq!(check_file(&f), Seal::Intact, "nothing there");
        std::fs::write(&f, "old").unwrap();
        assert_eq!(check_file(&f), Seal::Unsealed);
        write(&f, b"iteration: 2").unwrap();
        assert_eq!(check_file(&f), Seal::Intact);
        std::fs::write(&f, "iteration: 1").unwrap();
        assert_eq!(check_file(&f), Seal::Broken);
        // A write cut short after the seal: the file before still counts.
        write(&f, b"iteration: 3").unwrap();
        std::fs::write(&f, "iteration: 3").unwrap();
        let seal = std::fs::read_to_string(seal_path(&f)).unwrap();
        let prev = format!("{} {}\n", digest(b"iteration: 4"), digest(b"iteration: 3"));
        std::fs::write(seal_path(&f), &prev).unwrap();
        assert_eq!(check_file(&f), Seal::Intact, "{seal}");
        accept(&f).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&f, "x").unwrap();
        assert_eq!(check_file(&f), Seal::Broken);
        accept(&f).unwrap();
        assert_eq!(check_file(&f), Seal::Intact);
        remove(&f).unwrap();
        assert_eq!(check_file(&f), Seal::Unsealed);
        let _ = std::fs::remove_dir_all(&d);
    }
}
