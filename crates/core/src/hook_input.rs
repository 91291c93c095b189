//! The JSON a Claude Code hook receives on stdin, read leniently. Does I/O
//! (stdin, with a deadline).
//!
//! Unknown fields are normal (the client adds fields between versions) and a
//! field of the wrong type is treated as absent rather than failing the hook.
//! Only the first JSON value is read, so a pipe that stays open after it never
//! makes a hook wait.

use serde_json::Value;
use std::io::Read;
use thiserror::Error;

/// The fields the ralph hooks use, from any hook event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookInput {
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub hook_event_name: Option<String>,
    /// Stop: true on every Stop that follows a block by a Stop hook.
    pub stop_hook_active: bool,
    /// Stop: the final assistant text of the turn (absent in older clients).
    pub last_assistant_message: Option<String>,
    /// UserPromptSubmit: the raw text the user typed.
    pub prompt: Option<String>,
    /// PreToolUse.
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    /// The user prompt the turn answers (the same for every Stop of a loop
    /// started by that prompt).
    pub prompt_id: Option<String>,
    /// SessionStart: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// SessionEnd: `clear`, `logout`, `prompt_input_exit`, `other`, ...
    pub reason: Option<String>,
    /// StopFailure: the client's error code (`rate_limit`, `server_error`, ...).
    pub error: Option<String>,
    /// StopFailure: more about the error, when the client gives it.
    pub error_details: Option<Value>,
    /// Set on the hook calls a subagent makes (PreToolUse, SubagentStop):
    /// its id and type (`ralph:ralph-worker`). Absent on the main thread's.
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// SubagentStop: the subagent's own transcript.
    pub agent_transcript_path: Option<String>,
    /// Stop, SubagentStop: the session's background tasks (2.1.328: agents
    /// run in the background unless asked not to).
    pub background_tasks: Vec<BackgroundTask>,
}

/// One entry of `background_tasks`, as measured on 2.1.328:
/// `{"id","type":"subagent","status":"running","description","agent_type"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackgroundTask {
    pub id: String,
    pub status: String,
    pub agent_type: String,
    /// The `description` the Agent call gave (`story US-1`).
    pub description: String,
}

impl BackgroundTask {
    fn from_value(v: &Value) -> BackgroundTask {
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        BackgroundTask {
            id: text("id"),
            status: text("status"),
            agent_type: text("agent_type"),
            description: text("description"),
        }
    }
}

#[derive(Debug, Error)]
pub enum InputError {
    #[error("no hook input on stdin")]
    Empty,
    #[error("hook input on stdin is not JSON: {0}")]
    NotJson(String),
    #[error("hook input on stdin is not a JSON object")]
    NotAnObject,
    #[error("no hook input arrived on stdin within {0} s")]
    Timeout(u64),
}

impl HookInput {
    /// Build from a parsed JSON value.
    pub fn from_value(value: Value) -> Result<HookInput, InputError> {
        let Value::Object(mut map) = value else {
            return Err(InputError::NotAnObject);
        };
        let mut text = |k: &str| match map.remove(k) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Ok(HookInput {
            session_id: text("session_id"),
            transcript_path: text("transcript_path"),
            cwd: text("cwd"),
            hook_event_name: text("hook_event_name"),
            last_assistant_message: text("last_assistant_message"),
            prompt: text("prompt"),
            tool_name: text("tool_name"),
            prompt_id: text("prompt_id"),
            source: text("source"),
            reason: text("reason"),
            error: text("error"),
            agent_id: text("agent_id").filter(|s| !s.is_empty()),
            agent_type: text("agent_type"),
            agent_transcript_path: text("agent_transcript_path"),
            stop_hook_active: matches!(map.get("stop_hook_active"), Some(Value::Bool(true))),
            tool_input: map.remove("tool_input"),
            error_details: map.remove("error_details").filter(|v| !v.is_null()),
            background_tasks: match map.get("background_tasks") {
                Some(Value::Array(tasks)) => tasks.iter().map(BackgroundTask::from_value).collect(),
                _ => Vec::new(),
            },
        })
    }

    /// Read the first JSON value from `reader` and stop there.
    pub fn read(reader: impl Read) -> Result<HookInput, InputError> {
        first_value(reader).and_then(HookInput::from_value)
    }

    /// [`HookInput::read`] on stdin, within [`stdin_first_value`]'s deadline.
    pub fn read_stdin_with_deadline(secs: u64) -> Result<HookInput, InputError> {
        stdin_first_value(secs).and_then(HookInput::from_value)
    }

    /// The session id, or "" when the client did not send one.
    pub fn session(&self) -> &str {
        self.session_id.as_deref().unwrap_or("")
    }
}

/// The first JSON value of `reader`; nothing after it is read, so a pipe
/// kept open after the value never makes a hook wait.
pub(crate) fn first_value(reader: impl Read) -> Result<Value, InputError> {
    let mut values = serde_json::Deserializer::from_reader(reader).into_iter::<Value>();
    match values.next() {
        None => Err(InputError::Empty),
        // Only whitespace before the end: nothing was sent.
        Some(Err(e)) if e.to_string().starts_with("EOF while parsing a value") => {
            Err(InputError::Empty)
        }
        Some(Err(e)) => Err(InputError::NotJson(e.to_string())),
        Some(Ok(v)) => Ok(v),
    }
}

/// The first JSON value on stdin, giving up after `secs` seconds: Claude Code
/// writes the input and closes the pipe at once, so a pipe that stays silent
/// that long is not going to deliver. Every hook reads its input this way.
///
/// On Unix it is read on this thread, waiting with `poll(2)` (rustix's,
/// safe) up to the deadline: no thread, whatever stdin is (a pipe written
/// before or after the hook started, a socket, a file, a terminal). Only
/// where poll cannot wait on it (Windows; a device macOS will not poll) a
/// reader thread waits with the deadline, and is left blocked if it passes;
/// the hook answers and exits soon after. A thread cost a Stop ~10 % of its
/// time (measured: its start, its stack, the hand-over).
pub(crate) fn stdin_first_value(secs: u64) -> Result<Value, InputError> {
    #[cfg(unix)]
    let prefix = match here::read(secs) {
        here::Read::Done(result) => return result,
        here::Read::Partly(bytes) => bytes,
    };
    #[cfg(not(unix))]
    let prefix = Vec::new();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let stdin = std::io::Cursor::new(prefix).chain(std::io::stdin().lock());
        let _ = tx.send(first_value(stdin));
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or(Err(InputError::Timeout(secs)))
}

/// Reading stdin on the calling thread: `poll(2)` for input up to the
/// deadline, then what is there; done at the end of the input, or at the
/// first whole value once the writer pauses (a pipe kept open after the
/// value never makes a hook wait). fd 0's own flags are left as they are.
#[cfg(unix)]
mod here {
    use super::{InputError, Value, first_value as parse_first};
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::io::Errno;
    use std::os::fd::{AsFd, BorrowedFd};
    use std::time::{Duration, Instant};

    pub(super) enum Read {
        Done(Result<Value, InputError>),
        /// Poll cannot wait on this stdin: what was read, for the reader thread.
        Partly(Vec<u8>),
    }

    pub(super) fn read(secs: u64) -> Read {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd();
        let end = Instant::now() + Duration::from_secs(secs.max(1));
        let mut bytes: Vec<u8> = Vec::with_capacity(8 * 1024);
        let left = || end.saturating_duration_since(Instant::now());
        loop {
            // Before the first byte, wait up to the deadline; after it, look
            // first: a writer that pauses after a whole value is not waited for.
            let mut ready_now = ready(
                fd,
                if bytes.is_empty() {
                    left()
                } else {
                    Duration::ZERO
                },
            );
            if ready_now == Some(false) && !bytes.is_empty() {
                if let Some(value) = whole_value(&bytes) {
                    return Read::Done(Ok(value));
                }
                ready_now = ready(fd, left());
            }
            match ready_now {
                None => return Read::Partly(bytes),
                Some(false) => return Read::Done(Err(InputError::Timeout(secs))),
                Some(true) => {}
            }
            if bytes.len() == bytes.capacity() {
                bytes.reserve(bytes.len());
            }
            match rustix::io::read(fd, rustix::buffer::spare_capacity(&mut bytes)) {
                Ok(0) => return Read::Done(parse_first(bytes.as_slice())),
                Ok(_) | Err(Errno::INTR | Errno::AGAIN) => {}
                // A read error ends the input: judged as far as it came.
                Err(_) => return Read::Done(parse_first(bytes.as_slice())),
            }
        }
    }

    /// Whether stdin has input (or its end) within `wait`; `None` when poll
    /// cannot tell (an fd it does not support).
    fn ready(fd: BorrowedFd<'_>, wait: Duration) -> Option<bool> {
        let timeout = Timespec {
            tv_sec: wait.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: wait.subsec_nanos().into(),
        };
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        loop {
            match poll(&mut fds, Some(&timeout)) {
                Ok(_) if fds[0].revents().contains(PollFlags::NVAL) => return None,
                Ok(n) => return Some(n > 0),
                Err(Errno::INTR) => {}
                Err(_) => return None,
            }
        }
    }

    /// The first value of `bytes` when it is whole.
    fn whole_value(bytes: &[u8]) -> Option<Value> {
        let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
        values.next().and_then(Result::ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_real_stop_input_with_unknown_fields() {
        let json = r#"{"session_id":"s1","transcript_path":"/t.jsonl","cwd":"/p","prompt_id":"x",
            "permission_mode":"default","effort":{"level":"medium"},"hook_event_name":"Stop",
            "stop_hook_active":true,"last_assistant_message":"Reply","background_tasks":[]}"#;
        let input = HookInput::read(json.as_bytes()).unwrap();
        assert_eq!(input.session(), "s1");
        assert!(input.stop_hook_active);
        assert_eq!(input.last_assistant_message.as_deref(), Some("Reply"));
    }

    #[test]
    fn reads_the_lifecycle_events_as_measured() {
        let failure = r#"{"session_id":"s","transcript_path":"t","cwd":"/p","prompt_id":"p1",
            "hook_event_name":"StopFailure","error":"rate_limit",
            "last_assistant_message":"API Error: Request rejected (429)"}"#;
        let input = HookInput::read(failure.as_bytes()).unwrap();
        assert_eq!(input.error.as_deref(), Some("rate_limit"));
        assert_eq!(input.prompt_id.as_deref(), Some("p1"));
        assert_eq!(input.error_details, None);
        let start =
            r#"{"session_id":"n","cwd":"/p","hook_event_name":"SessionStart","source":"clear"}"#;
        assert_eq!(
            HookInput::read(start.as_bytes()).unwrap().source.as_deref(),
            Some("clear")
        );
        let end =
            r#"{"session_id":"o","cwd":"/p","hook_event_name":"SessionEnd","reason":"clear"}"#;
        assert_eq!(
            HookInput::read(end.as_bytes()).unwrap().reason.as_deref(),
            Some("clear")
        );
    }

    #[test]
    fn wrong_types_are_absent_and_trailing_data_is_ignored() {
        let input = HookInput::read(&br#"{"session_id":5,"cwd":"/p"} garbage"#[..]).unwrap();
        assert_eq!(input.session_id, None);
        assert_eq!(input.cwd.as_deref(), Some("/p"));
    }

    #[test]
    fn bad_inputs() {
        assert!(matches!(HookInput::read(&b""[..]), Err(InputError::Empty)));
        assert!(matches!(
            HookInput::read(&b"  \n"[..]),
            Err(InputError::Empty)
        ));
        assert!(matches!(
            HookInput::read(&b"[1]"[..]),
            Err(InputError::NotAnObject)
        ));
        assert!(matches!(
            HookInput::read(&b"{nope"[..]),
            Err(InputError::NotJson(_))
        ));
    }
}
