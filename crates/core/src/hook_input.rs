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
pub fn first_value(reader: impl Read) -> Result<Value, InputError> {
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
/// Read on this thread when it can be: a socket (how some runners connect
/// a child's stdin) with the deadline as its receive timeout; on Linux, a
/// pipe or file whose input is all there already, read without blocking.
/// Only otherwise (the input not written yet, a terminal) a reader thread
/// waits with the deadline, and is left blocked if it passes; the hook
/// answers and exits soon after. A thread costs its start and a hand-over
/// between threads, which a guard on every tool call pays in full.
pub fn stdin_first_value(secs: u64) -> Result<Value, InputError> {
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

/// Reading stdin on the calling thread, when that cannot block past the
/// deadline. Safe code only: a socket's receive timeout, and (Linux) the
/// pipe opened again through `/proc/self/fd/0` without blocking, so fd 0's
/// own flags are left as they are.
#[cfg(unix)]
mod here {
    use super::{InputError, Value, first_value as parse_first};
    use std::io::{self, Read as _};
    use std::os::fd::AsFd;
    use std::time::{Duration, Instant};

    pub(super) enum Read {
        Done(Result<Value, InputError>),
        /// Not all there yet: what was read, for the waiting reader.
        Partly(Vec<u8>),
    }

    pub(super) fn read(secs: u64) -> Read {
        let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else {
            return Read::Partly(Vec::new());
        };
        let socket = std::os::unix::net::UnixStream::from(fd);
        let limit = Duration::from_secs(secs.max(1));
        if socket.set_read_timeout(Some(limit)).is_ok() {
            return Read::Done(from_socket(socket, limit, secs));
        }
        drop(socket);
        ready_now()
    }

    /// A socket, read with its receive timeout set to what is left of the
    /// deadline before each read.
    fn from_socket(
        socket: std::os::unix::net::UnixStream,
        limit: Duration,
        secs: u64,
    ) -> Result<Value, InputError> {
        struct Timed {
            socket: std::os::unix::net::UnixStream,
            end: Instant,
            /// The receive timeout set now.
            set: Duration,
            late: bool,
        }
        impl io::Read for Timed {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                loop {
                    let left = self.end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        self.late = true;
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    // Set again only once a second of it is gone (a syscall).
                    if left + Duration::from_secs(1) < self.set {
                        self.socket.set_read_timeout(Some(left))?;
                        self.set = left;
                    }
                    match self.socket.read(buf) {
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                            ) =>
                        {
                            // Its timeout passed; or whoever made the socket
                            // left it non-blocking: waited for in small steps.
                            if Instant::now() >= self.end {
                                self.late = true;
                                return Err(e);
                            }
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        other => return other,
                    }
                }
            }
        }
        let mut timed = Timed {
            socket,
            end: Instant::now() + limit,
            set: limit,
            late: false,
        };
        let result = parse_first(io::BufReader::new(&mut timed));
        if timed.late {
            return Err(InputError::Timeout(secs));
        }
        result
    }

    /// Linux: stdin opened again without blocking, read to its end; `Done`
    /// when the end came, or a whole value before the writer stopped.
    #[cfg(target_os = "linux")]
    fn ready_now() -> Read {
        use std::os::unix::fs::OpenOptionsExt;
        let Ok(mut file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/proc/self/fd/0")
        else {
            return Read::Partly(Vec::new());
        };
        let mut bytes = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return Read::Done(parse_first(bytes.as_slice())),
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // The writer has not closed it: a whole value may be there already.
        let mut values = serde_json::Deserializer::from_slice(&bytes).into_iter::<Value>();
        match values.next() {
            Some(Ok(v)) => Read::Done(Ok(v)),
            _ => Read::Partly(bytes),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn ready_now() -> Read {
        Read::Partly(Vec::new())
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
