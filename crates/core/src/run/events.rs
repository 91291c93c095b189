//! The client's stream (`claude -p --output-format stream-json --verbose`):
//! one JSON object a line, read into the events the runner acts on.
//!
//! Measured on Claude Code 2.1.328 (README, `ralph run`): `system/init` first
//! (with the session id); one `assistant` line per content block, each
//! carrying the whole message's `usage` as `message_start` reported it (so the
//! same message id repeats); `user` lines with the tool results;
//! `system/api_retry` while the client itself retries a 429/529/5xx; and a
//! final `result` with the turn's summed `usage`, `is_error`,
//! `api_error_status` and the final text. Lines that are not JSON, or types
//! this module does not know, are ignored.
//! Pure.

use serde_json::Value;

/// Token counts as the Messages API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

impl Usage {
    /// Read a `usage` object (missing fields count 0).
    pub fn from_json(v: &Value) -> Usage {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input: n("input_tokens"),
            output: n("output_tokens"),
            cache_read: n("cache_read_input_tokens"),
            cache_creation: n("cache_creation_input_tokens"),
        }
    }

    /// The context a request carried: everything sent in, cached or not.
    pub fn context(&self) -> u64 {
        self.input + self.cache_read + self.cache_creation
    }

    pub fn add(&mut self, other: Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_creation += other.cache_creation;
    }
}

/// The final `result` line of a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnResult {
    pub is_error: bool,
    /// `success`, `error_max_turns`, `error_during_execution`, ...
    pub subtype: String,
    /// The HTTP status of an API error (429, 529, 500, ...).
    pub api_error_status: Option<u16>,
    /// The client's code for an error without a status (`connection_failed`).
    pub api_error: Option<String>,
    /// The final text (on an error, the client's message: `API Error: ...`).
    pub text: Option<String>,
    pub usage: Usage,
    pub num_turns: u64,
    pub session_id: Option<String>,
}

/// One thing that happened in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The session started (`system/init`).
    Init { session_id: String },
    /// A text block of an assistant message.
    Text { message_id: String, text: String },
    /// A tool call: the tool's name and a one-line summary of its input.
    ToolUse { name: String, summary: String },
    /// A tool result that is an error (a guard denial, a failing command).
    ToolError { text: String },
    /// The usage of one model request (repeated for each block of a message).
    Usage { message_id: String, usage: Usage },
    /// The client retries a failed request itself.
    ApiRetry {
        attempt: u64,
        max_retries: u64,
        delay_ms: u64,
        status: Option<u16>,
        error: String,
    },
    /// A subscription rate-limit notice (`rate_limit_event`): `status`
    /// (`allowed`, `allowed_warning`, `rejected`) and when the limit resets
    /// (Unix seconds).
    RateLimit {
        status: String,
        resets_at: Option<u64>,
    },
    /// The turn's end.
    Result(TurnResult),
}

/// The events of one stream line (none for lines that do not matter).
pub fn parse_line(line: &str) -> Vec<Event> {
    let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
        return Vec::new();
    };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match v.get("type").and_then(Value::as_str) {
        Some("system") => match v.get("subtype").and_then(Value::as_str) {
            Some("init") => s(&v, "session_id")
                .map(|session_id| vec![Event::Init { session_id }])
                .unwrap_or_default(),
            Some("api_retry") => {
                let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
                vec![Event::ApiRetry {
                    attempt: n("attempt"),
                    max_retries: n("max_retries"),
                    delay_ms: n("retry_delay_ms"),
                    status: v
                        .get("error_status")
                        .and_then(Value::as_u64)
                        .and_then(|s| u16::try_from(s).ok()),
                    error: s(&v, "error").unwrap_or_default(),
                }]
            }
            _ => Vec::new(),
        },
        Some("assistant") => assistant(&v),
        Some("user") => tool_errors(&v),
        Some("rate_limit_event") => {
            let info = v.get("rate_limit_info").unwrap_or(&Value::Null);
            vec![Event::RateLimit {
                status: s(info, "status").unwrap_or_default(),
                resets_at: info.get("resetsAt").and_then(Value::as_u64),
            }]
        }
        Some("result") => vec![Event::Result(TurnResult {
            is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            subtype: s(&v, "subtype").unwrap_or_default(),
            api_error_status: v
                .get("api_error_status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok()),
            api_error: s(&v, "api_error"),
            text: s(&v, "result"),
            usage: v.get("usage").map(Usage::from_json).unwrap_or_default(),
            num_turns: v.get("num_turns").and_then(Value::as_u64).unwrap_or(0),
            session_id: s(&v, "session_id"),
        })],
        _ => Vec::new(),
    }
}

fn assistant(v: &Value) -> Vec<Event> {
    let Some(msg) = v.get("message") else {
        return Vec::new();
    };
    let id = msg
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut out = Vec::new();
    // The client's own stand-in message for an API error has no real usage.
    let synthetic = msg.get("model").and_then(Value::as_str) == Some("<synthetic>");
    if let Some(u) = msg.get("usage").filter(|_| !synthetic) {
        out.push(Event::Usage {
            message_id: id.clone(),
            usage: Usage::from_json(u),
        });
    }
    for block in msg
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") if !synthetic => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    out.push(Event::Text {
                        message_id: id.clone(),
                        text: t.to_string(),
                    });
                }
            }
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string();
                let summary = tool_summary(&name, block.get("input").unwrap_or(&Value::Null));
                out.push(Event::ToolUse { name, summary });
            }
            _ => {}
        }
    }
    out
}

fn tool_errors(v: &Value) -> Vec<Event> {
    v.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter(|b| b.get("is_error").and_then(Value::as_bool) == Some(true))
        .map(|b| Event::ToolError {
            text: result_text(b.get("content").unwrap_or(&Value::Null)),
        })
        .collect()
}

/// The readable text of a tool result's `content` (a string or text blocks).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What a tool call is about, in one line: the command, the file, the pattern.
pub(crate) fn tool_summary(name: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    let picked = match name {
        "Bash" => field("command"),
        "Write" | "Edit" | "MultiEdit" | "Read" => field("file_path"),
        "NotebookEdit" => field("notebook_path"),
        "Grep" | "Glob" => field("pattern"),
        "WebFetch" => field("url"),
        "WebSearch" => field("query"),
        "Task" | "Agent" => field("description"),
        "Skill" => field("skill").or_else(|| field("command")),
        _ => None,
    };
    match picked {
        Some(s) => s.to_string(),
        None if input.is_null() => String::new(),
        None => input.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as Claude Code 2.1.328 wrote them (trimmed to the fields read).
    const INIT: &str = r#"{"type":"system","subtype":"init","cwd":"/p","session_id":"227fd937","tools":["Bash"],"model":"claude-opus-5-5"}"#;
    const TEXT: &str = r#"{"type":"assistant","message":{"content":[{"text":"Working on it.","type":"text"}],"id":"msg_1","model":"m","role":"assistant","usage":{"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"input_tokens":10,"output_tokens":1}},"session_id":"227fd937"}"#;
    const TOOL: &str = r#"{"type":"assistant","message":{"content":[{"id":"toolu_1","input":{"command":"echo hello > a.txt","description":"d"},"name":"Bash","type":"tool_use"}],"id":"msg_1","model":"m","usage":{"input_tokens":10,"output_tokens":1}}}"#;
    const DENIED: &str = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"PreToolUse:Bash hook error: ralph-guard: no","is_error":true,"tool_use_id":"t"}]}}"#;
    const RETRY: &str = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":1172,"error_status":429,"error":"rate_limit","session_id":"s"}"#;
    const RESULT_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done <promise>DONE</promise>","session_id":"s","usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":20},"api_error_status":null}"#;
    const RESULT_429: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error":null,"result":"API Error: Request rejected (429) · Rate limited","usage":{"input_tokens":0,"output_tokens":0}}"#;
    const SYNTHETIC: &str = r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error: Request rejected (429)"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#;

    #[test]
    fn init_text_usage_and_tools() {
        assert_eq!(
            parse_line(INIT),
            vec![Event::Init {
                session_id: "227fd937".into()
            }]
        );
        let ev = parse_line(TEXT);
        assert_eq!(
            ev[0],
            Event::Usage {
                message_id: "msg_1".into(),
                usage: Usage {
                    input: 10,
                    output: 1,
                    cache_read: 100,
                    cache_creation: 5
                }
            }
        );
        assert_eq!(
            ev[1],
            Event::Text {
                message_id: "msg_1".into(),
                text: "Working on it.".into()
            }
        );
        let ev = parse_line(TOOL);
        assert_eq!(
            ev[1],
            Event::ToolUse {
                name: "Bash".into(),
                summary: "echo hello > a.txt".into()
            }
        );
    }

    #[test]
    fn errors_retries_and_results() {
        assert_eq!(
            parse_line(DENIED),
            vec![Event::ToolError {
                text: "PreToolUse:Bash hook error: ralph-guard: no".into()
            }]
        );
        assert!(matches!(
            parse_line(RETRY)[0],
            Event::ApiRetry {
                attempt: 1,
                max_retries: 10,
                delay_ms: 1172,
                status: Some(429),
                ..
            }
        ));
        let Event::Result(r) = &parse_line(RESULT_OK)[0] else {
            panic!()
        };
        assert!(!r.is_error);
        assert_eq!(r.text.as_deref(), Some("Done <promise>DONE</promise>"));
        assert_eq!(r.usage.output, 20);
        let Event::Result(r) = &parse_line(RESULT_429)[0] else {
            panic!()
        };
        assert!(r.is_error);
        assert_eq!(r.api_error_status, Some(429));
        // The client's stand-in message for an error is neither text nor usage.
        assert!(parse_line(SYNTHETIC).is_empty());
    }

    #[test]
    fn rate_limit_events_and_junk() {
        let line = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1900000000,"rateLimitType":"five_hour"}}"#;
        assert_eq!(
            parse_line(line),
            vec![Event::RateLimit {
                status: "rejected".into(),
                resets_at: Some(1_900_000_000)
            }]
        );
        assert!(parse_line("not json").is_empty());
        assert!(parse_line(r#"{"type":"stream_event"}"#).is_empty());
        assert!(parse_line("").is_empty());
    }

    #[test]
    fn tool_summaries() {
        let v = serde_json::json!({"file_path": "src/a.rs", "content": "x"});
        assert_eq!(tool_summary("Write", &v), "src/a.rs");
        let v = serde_json::json!({"pattern": "fn main"});
        assert_eq!(tool_summary("Grep", &v), "fn main");
        let v = serde_json::json!({"x": 1});
        assert_eq!(tool_summary("Custom", &v), r#"{"x":1}"#);
    }
}
