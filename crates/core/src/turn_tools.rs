//! The tools each turn of a loop used, as the guard saw them: the
//! no-progress breaker's evidence that does not depend on the transcript.
//!
//! The guard (`ralph-guard`, PreToolUse) runs before every Bash, Write,
//! Edit, MultiEdit and NotebookEdit call, so it knows a turn's tools before
//! the client has written them to the transcript (which can lag behind the
//! Stop). While a loop is active it appends one line per allowed call,
//! `SESSION<TAB>TOOL`, to this record; the Stop reads the lines of its
//! session and empties the record for the next turn. A record that is
//! missing (a loop started by the official plugin, before the guard's first
//! call) means "not recorded": the Stop falls back to the transcript.
//!
//! `record`, `read`, `reset` and `start` do I/O; `tools_of` is pure.

use crate::store::{self, StoreError};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

/// The record's lines are short; a larger file is not read whole.
const MAX_BYTES: u64 = 1 << 20;

/// Append one allowed call of `session` (the guard, before the tool runs).
/// One `write` of a short line to a file opened for appending: concurrent
/// calls never interleave.
pub fn record(path: &Path, session: &str, tool: &str) -> Result<(), StoreError> {
    store::refuse_unsafe(path)?;
    let line = format!("{}\t{}\n", one_field(session), one_field(tool));
    let open = || OpenOptions::new().create(true).append(true).open(path);
    let file = match open() {
        // The loop's folder does not exist yet (a project file not adopted yet).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            }
            open()
        }
        other => other,
    };
    file.and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| StoreError::io(path, e))
}

/// The record's text; `None` when there is none (or it cannot be read).
/// One open and one `fstat` of what was opened (a FIFO opens without
/// blocking and is refused, as is a file over `MAX_BYTES`).
pub(crate) fn read(path: &Path) -> Option<String> {
    store::read_limited(path, MAX_BYTES).ok().flatten()
}

/// Empty the record for the next turn (the Stop, under the loop lock),
/// keeping the file: an empty record means "no guarded tool was called".
/// A missing record stays missing (not recorded).
pub(crate) fn reset(path: &Path) -> Result<(), StoreError> {
    store::refuse_unsafe(path)?;
    match OpenOptions::new().write(true).open(path) {
        Ok(f) => f.set_len(0).map_err(|e| StoreError::io(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Start recording (a new loop): an empty record.
pub fn start(path: &Path) -> Result<(), StoreError> {
    store::overwrite_hint(path, b"")
}

/// The tools `session` called, oldest first. A loop no session has claimed
/// yet (`session` empty) counts every line.
pub(crate) fn tools_of(record: &str, session: &str) -> Vec<String> {
    record
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter(|(who, _)| session.is_empty() || *who == session)
        .map(|(_, tool)| tool.to_string())
        .collect()
}

/// A field without the record's separators.
fn one_field(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '\t' || c == '\n' || c == '\r' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_one_session_in_order() {
        let text = "s1\tBash\ns2\tWrite\ns1\tEdit\nbroken line\n";
        assert_eq!(tools_of(text, "s1"), ["Bash", "Edit"]);
        assert_eq!(tools_of(text, ""), ["Bash", "Write", "Edit"]);
        assert!(tools_of("", "s1").is_empty());
    }

    #[test]
    fn recorded_read_and_reset() {
        let dir = std::env::temp_dir().join(format!("ralph-turn-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("turn-tools");
        assert_eq!(read(&path), None, "not recorded");
        record(&path, "s\t1", "Write").unwrap();
        record(&path, "s 1", "Bash").unwrap();
        assert_eq!(tools_of(&read(&path).unwrap(), "s 1"), ["Write", "Bash"]);
        reset(&path).unwrap();
        assert_eq!(read(&path).as_deref(), Some(""), "recorded, nothing called");
        std::fs::remove_file(&path).unwrap();
        reset(&path).unwrap();
        assert_eq!(read(&path), None, "a reset starts no record");
        start(&path).unwrap();
        assert_eq!(read(&path).as_deref(), Some(""));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
