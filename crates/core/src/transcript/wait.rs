//! The one way a hook reads a transcript: [`written`]. Does I/O (the
//! transcript, and a `stat` a millisecond while it waits).
//!
//! Claude Code writes a turn to its transcript after the hooks at the
//! turn's end have started (measured on 2.1.328, docs/client-measurements.md:
//! a Stop hook saw the turn's last assistant line land up to 107 ms after it
//! started on a quiet machine, and at a session's first Stop the file did
//! not exist yet). A hook as quick as ralph's reads before the turn is
//! there: a promise in an earlier block of the turn was missed, its usage
//! counted a turn late. So a hook is told what the file must hold before it
//! reads it ([`Awaited`]: the Stop's `last_assistant_message` as the turn's
//! newest text, a subagent's task line), waits for that up to a bound, and
//! reads through the [`Written`] it is handed, whose methods are the only
//! readers of a transcript.

use super::{CountedThrough, Turn};
use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a transcript must hold before a hook reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaited<'a> {
    /// The turn's newest assistant text is this one (a Stop's
    /// `last_assistant_message`; the client hands it over trimmed).
    LastText(&'a str),
    /// The same, on a line newer than `answered` (the `uuid` of the line a
    /// Stop already answered, [`super::Turn::last_uuid`]): two turns in a
    /// row can end with the same words, and the client may not have written
    /// the second yet.
    LastTextPast { text: &'a str, answered: &'a str },
    /// A first line (a subagent's task).
    FirstLine,
    /// Nothing is known of what is due: read what is there.
    Nothing,
}

/// How the transcript came to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// It held what was awaited at the first look.
    AtOnce,
    /// It came while the wait lasted, after this long.
    Waited(Duration),
    /// The bound passed first: what is there may not be the turn.
    Late(Duration),
    /// The bound passed waiting past a line already answered
    /// ([`Awaited::LastTextPast`]): the turn is that line's.
    NoNewer(Duration),
    /// There is nothing to read: no path given, or no regular file there
    /// (a link to a device, a FIFO, a folder: nothing will come).
    Unreadable,
}

/// A transcript that held what was awaited (or the bound passed): the
/// readers of a transcript are its methods.
#[derive(Debug)]
pub struct Written {
    file: Option<(File, u64)>,
    pub(crate) arrival: Arrival,
}

/// Wait until the transcript at `path` holds what is `awaited`, for at most
/// `bound`, and hand it over for reading. A missing file is waited for (a
/// session's first Stop comes before its transcript); a file that is not
/// regular is not.
pub fn written(path: Option<&Path>, awaited: Awaited, bound: Duration) -> Written {
    let Some(path) = path.filter(|p| !p.as_os_str().is_empty()) else {
        return Written::unreadable();
    };
    let started = Instant::now();
    // What the path was at the last look that found the turn missing.
    let mut seen: Option<Seen> = None;
    loop {
        let file = match open_regular(path) {
            Ok((file, len)) => Some((file, len)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(_) => return Written::unreadable(),
        };
        let waited = started.elapsed();
        if let Some((f, len)) = &file
            && holds(f, *len, awaited)
        {
            let arrival = match &seen {
                None => Arrival::AtOnce,
                Some(_) => Arrival::Waited(waited),
            };
            return Written { file, arrival };
        }
        if waited >= bound {
            let arrival = match awaited {
                Awaited::LastTextPast { .. } => Arrival::NoNewer(waited),
                _ => Arrival::Late(waited),
            };
            return Written { file, arrival };
        }
        // Taken at the first miss, then the file looked at again before any
        // wait: a line written meanwhile is not missed.
        match &mut seen {
            None => seen = Some(Seen::now(path)),
            Some(seen) => seen.wait_for_change(path, bound.saturating_sub(waited)),
        }
    }
}

/// Open a transcript for reading, with its length, refusing anything but
/// a regular file:
/// opening a FIFO for reading would block until a writer comes. On Unix it
/// is opened without blocking and judged by `fstat` of what was opened (no
/// `stat` of the path first, which a swap between the two could fool).
fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    #[cfg(unix)]
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?
    };
    #[cfg(not(unix))]
    let file = {
        if !std::fs::metadata(path)?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        File::open(path)?
    };
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok((file, meta.len()))
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}

/// Whether the transcript holds what is awaited.
fn holds(file: &File, len: u64, awaited: Awaited) -> bool {
    let (last, answered) = match awaited {
        Awaited::Nothing => return true,
        Awaited::FirstLine => return super::task_of(file).is_some(),
        Awaited::LastText(last) => (last.trim(), None),
        Awaited::LastTextPast { text, answered } => (text.trim(), Some(answered)),
    };
    if last.is_empty() && answered.is_none() {
        return true;
    }
    let Ok(newest) = super::newest_text(file, len, super::DEFAULT_MAX_BYTES) else {
        return false;
    };
    let past = answered.is_none_or(|a| newest.uuid.as_deref().is_some_and(|u| u != a));
    past && (last.is_empty() || newest.text.is_some_and(|t| is_last_block(&t, last)))
}

/// A line's text (its text blocks joined by newlines) and the text the
/// client handed over (its last block, on 2.1.328) end alike: one is the
/// other, or ends with it after a line break (a client that writes a
/// message's blocks on one line, or hands over all of them).
fn is_last_block(line_text: &str, last: &str) -> bool {
    let t = line_text.trim();
    let ends = |whole: &str, part: &str| {
        whole
            .strip_suffix(part)
            .is_some_and(|rest| rest.ends_with('\n'))
    };
    t == last || ends(t, last) || ends(last, t)
}

impl Written {
    fn unreadable() -> Written {
        Written {
            file: None,
            arrival: Arrival::Unreadable,
        }
    }

    /// The bound passed before the transcript held what was awaited.
    pub(crate) fn is_late(&self) -> bool {
        matches!(self.arrival, Arrival::Late(_))
    }

    /// Waiting past the line a Stop answered, no newer one came.
    pub(crate) fn found_no_newer(&self) -> bool {
        matches!(self.arrival, Arrival::NoNewer(_))
    }

    /// Whether there was a transcript to read at all.
    pub fn exists(&self) -> bool {
        self.file.is_some()
    }

    /// How long the wait lasted.
    pub fn waited(&self) -> Duration {
        match self.arrival {
            Arrival::Waited(d) | Arrival::Late(d) | Arrival::NoNewer(d) => d,
            Arrival::AtOnce | Arrival::Unreadable => Duration::ZERO,
        }
    }

    /// The last turn (since the last real user prompt or Stop hook feed),
    /// reading at most `max_bytes` from the end, with the usage of the turn
    /// before's messages after `counted`.
    pub fn last_turn(&self, max_bytes: u64, counted: Option<CountedThrough>) -> io::Result<Turn> {
        let Some((file, _)) = self.file.as_ref() else {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no transcript"));
        };
        // Read to the end as it is now: lines written since the wait looked
        // (a message the user queued) belong to the turn too.
        let len = file.metadata()?.len();
        super::last_turn_of(file, len, max_bytes, counted)
    }

    /// The model of the latest assistant message, looking at most at the
    /// last `max_bytes`.
    pub(crate) fn last_model(&self, max_bytes: u64) -> Option<String> {
        let (file, len) = self.file.as_ref()?;
        super::last_model_of(file, *len, max_bytes)
    }

    /// The API error the last turn ended on, when its newest assistant line
    /// is the client's message for one (its code, `rate_limit`, ...).
    pub(crate) fn last_api_error(&self, max_bytes: u64) -> Option<String> {
        let (file, len) = self.file.as_ref()?;
        super::last_api_error_of(file, *len, max_bytes)
    }

    /// The condition of the session's active `/goal`, looking at most at
    /// the last `max_bytes`.
    pub(crate) fn active_goal(&self, max_bytes: u64) -> Option<String> {
        let (file, len) = self.file.as_ref()?;
        super::goal::active_goal_of(file, *len, max_bytes)
    }

    /// A subagent's task: the first line of its own transcript.
    pub fn task(&self) -> Option<String> {
        super::task_of(&self.file.as_ref()?.0)
    }
}

/// How often the wait looks whether the transcript changed while it waits.
/// A look is one `stat` of its path; only a change (its identity, length or
/// time) makes it read again. Not inotify: closing an inotify
/// instance waits for the kernel's SRCU grace period, 5 to 13 ms on this
/// project's Linux 6.18 VM (measured with strace, 10 of 10 waited Stops),
/// more than the wait itself costs this way (docs/benchmarks.md).
const TICK: Duration = Duration::from_millis(1);

/// What a `stat` of the transcript's path tells of it: a change in any of
/// these is a line written (or the file made, or replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen(Option<(u64, u64, std::time::SystemTime)>);

impl Seen {
    fn now(path: &Path) -> Seen {
        Seen(std::fs::metadata(path).ok().map(|m| {
            let modified = m.modified().unwrap_or(std::time::UNIX_EPOCH);
            (identity(&m), m.len(), modified)
        }))
    }

    /// Sleep a tick at a time until the path changes, or `left` passes.
    fn wait_for_change(&mut self, path: &Path, left: Duration) {
        let until = Instant::now() + left;
        while Instant::now() < until {
            std::thread::sleep(TICK.min(until.saturating_duration_since(Instant::now())));
            let now = Seen::now(path);
            if now != *self {
                *self = now;
                return;
            }
        }
    }
}

/// The file's identity where the OS gives one (a file renamed in is another).
#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn identity(_m: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    fn line(kind: &str, content: serde_json::Value) -> String {
        serde_json::json!({"type": kind, "message": {"role": kind, "content": content}}).to_string()
    }
    fn said(text: &str) -> String {
        line(
            "assistant",
            serde_json::json!([{"type": "text", "text": text}]),
        )
    }
    fn tool_use() -> String {
        line(
            "assistant",
            serde_json::json!([{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]),
        )
    }
    fn tool_result() -> String {
        line(
            "user",
            serde_json::json!([{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]),
        )
    }

    fn folder(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-wait-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn append(path: &Path, lines: &[String]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for l in lines {
            // One write a line, as the client writes them.
            f.write_all(format!("{l}\n").as_bytes()).unwrap();
        }
    }

    /// The client's order at a Stop: the hook starts, then the turn's lines
    /// land one by one. The reader waits for them and reads the whole turn,
    /// the promise of its earlier block included.
    #[test]
    fn a_turn_written_after_the_reader_starts_is_waited_for_and_read_whole() {
        let dir = folder("late-lines");
        let path = dir.join("t.jsonl");
        append(&path, &[line("user", "do it".into()), said("Not yet.")]);
        append(&path, &[line("user", "feed".into())]);
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                for l in [
                    said("All done. <promise>DONE</promise>"),
                    tool_use(),
                    tool_result(),
                    said("  Wrapping up.\n"),
                ] {
                    std::thread::sleep(Duration::from_millis(30));
                    append(&path, &[l]);
                }
            })
        };
        let read = written(
            Some(&path),
            Awaited::LastText("Wrapping up."),
            Duration::from_secs(5),
        );
        writer.join().unwrap();
        // (Waited, unless this thread was held up longer than the writer.)
        assert!(!read.is_late(), "{:?}", read.arrival);
        let turn = read
            .last_turn(super::super::DEFAULT_MAX_BYTES, None)
            .unwrap();
        assert_eq!(
            turn.text.as_deref(),
            Some("All done. <promise>DONE</promise>\n  Wrapping up.\n")
        );
        assert_eq!(turn.tools, ["Bash"]);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// At a session's first Stop the transcript does not exist yet.
    #[test]
    fn a_transcript_that_does_not_exist_yet_is_waited_for() {
        let dir = folder("not-yet");
        let path = dir.join("t.jsonl");
        let writer = {
            let (dir, path) = (dir.clone(), path.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(40));
                // Written beside it, then renamed in: a new name in the folder.
                let side = dir.join("side");
                append(&side, &[line("user", "go".into()), said("First reply.")]);
                std::fs::rename(side, path).unwrap();
            })
        };
        let read = written(
            Some(&path),
            Awaited::LastText("First reply."),
            Duration::from_secs(5),
        );
        writer.join().unwrap();
        assert!(matches!(read.arrival, Arrival::Waited(_)));
        assert!(read.exists());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_transcript_that_holds_the_turn_is_read_at_once() {
        let dir = folder("at-once");
        let path = dir.join("t.jsonl");
        // One line with two text blocks: the client hands over the last.
        let two = line(
            "assistant",
            serde_json::json!([{"type": "text", "text": "Part A."},
                {"type": "text", "text": "Part B."}]),
        );
        append(&path, &[line("user", "go".into()), two]);
        let at_once = |awaited| written(Some(&path), awaited, Duration::from_secs(5)).arrival;
        assert_eq!(at_once(Awaited::LastText("Part B.")), Arrival::AtOnce);
        assert_eq!(at_once(Awaited::LastText("  ")), Arrival::AtOnce);
        assert_eq!(at_once(Awaited::Nothing), Arrival::AtOnce);
        assert_eq!(at_once(Awaited::FirstLine), Arrival::AtOnce);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Two turns that end with the same words: the line already answered
    /// (its `uuid`) is not the newer turn's; a newer line with those words
    /// is, and the wait ends on it.
    #[test]
    fn past_the_line_answered_only_a_newer_line_holds_the_turn() {
        let dir = folder("past");
        let path = dir.join("t.jsonl");
        let with_uuid = |uuid: &str, text: &str| {
            serde_json::json!({"type": "assistant", "uuid": uuid, "message": {"role": "assistant",
                "content": [{"type": "text", "text": text}]}})
            .to_string()
        };
        append(
            &path,
            &[line("user", "go".into()), with_uuid("u1", "Waiting.")],
        );
        let past = |answered| Awaited::LastTextPast {
            text: "Waiting.",
            answered,
        };
        let short = Duration::from_millis(40);
        assert!(written(Some(&path), past("u1"), short).found_no_newer());
        assert_eq!(
            written(Some(&path), past("u0"), short).arrival,
            Arrival::AtOnce
        );
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                append(
                    &path,
                    &[line("user", "feed".into()), tool_use(), tool_result()],
                );
                std::thread::sleep(Duration::from_millis(30));
                append(&path, &[with_uuid("u2", "Waiting.")]);
            })
        };
        let read = written(Some(&path), past("u1"), Duration::from_secs(5));
        writer.join().unwrap();
        assert!(!read.is_late(), "{:?}", read.arrival);
        let turn = read.last_turn(1 << 20, None).unwrap();
        assert_eq!(
            (turn.last_uuid.as_deref(), turn.tools.len()),
            (Some("u2"), 1)
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The bound passes: the file is handed over as it is, marked late. A
    /// turn's start with nothing after it is not the turn, nor is an
    /// earlier turn's text.
    #[test]
    fn the_bound_passes_and_the_transcript_is_read_as_it_is() {
        let dir = folder("bound");
        let path = dir.join("t.jsonl");
        append(&path, &[said("Part B."), line("user", "feed".into())]);
        let bound = Duration::from_millis(60);
        let read = written(Some(&path), Awaited::LastText("Part B."), bound);
        assert!(read.is_late());
        assert!(read.waited() >= bound);
        assert!(read.last_turn(1 << 20, None).is_ok());
        // Missing at the bound: late, nothing to read.
        let missing = written(Some(&dir.join("none")), Awaited::FirstLine, bound);
        assert!(missing.is_late() && !missing.exists());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Nothing will come from what is not a regular file: no wait.
    #[test]
    fn what_is_not_a_regular_file_is_not_waited_for() {
        let dir = folder("irregular");
        let long = Duration::from_secs(30);
        let started = Instant::now();
        for path in [dir.clone(), PathBuf::from("/dev/null")] {
            let read = written(Some(&path), Awaited::LastText("x"), long);
            assert_eq!(read.arrival, Arrival::Unreadable);
        }
        assert_eq!(
            written(None, Awaited::LastText("x"), long).arrival,
            Arrival::Unreadable
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_last_block_is_the_end_of_a_lines_text() {
        assert!(is_last_block("A\nB", "B"));
        assert!(is_last_block(" B \n", "B"));
        assert!(is_last_block("B", "A\n\nB"));
        assert!(!is_last_block("AB", "B"));
        assert!(!is_last_block("B\nA", "B"));
        assert!(!is_last_block("B", "AB"));
    }
}
