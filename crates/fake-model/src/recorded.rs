//! What the server saw: every request as recorded, and readers for the texts
//! of a messages request (user turns, system prompt).

use serde::Serialize;
use serde_json::Value;

/// What kind of request the server saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A messages request answered from a script: the main one (with tools)
    /// or a lane's (matched by system prompt, tools or not).
    Main,
    /// Such a request after its script ran out.
    Exhausted,
    /// A messages request without tools that matched no lane (title,
    /// summary, ...).
    Side,
    /// `/v1/messages/count_tokens`.
    CountTokens,
    /// Anything else (answered 404).
    Other,
}

/// One request as received.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub kind: RequestKind,
    /// The lane whose script answered (or ran out); `None` for the main
    /// script and for side requests.
    pub lane: Option<String>,
    /// Index of the reply served within its lane's script, for
    /// [`RequestKind::Main`].
    pub reply_index: Option<usize>,
    /// The HTTP status answered (a scripted error's, or 200, or 404).
    pub status: u16,
    /// When the request arrived, in milliseconds since the server started
    /// (to measure a client's retry delays).
    pub at_ms: u64,
    /// The body parsed as JSON (`Null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// The text of the last `user` message of a messages request: its string
    /// content, or its text and tool_result blocks joined by newlines.
    pub fn last_user_text(&self) -> String {
        last_user_text(&self.body)
    }

    /// The system prompt of a messages request (see [`system_text`]).
    pub fn system_text(&self) -> String {
        system_text(&self.body)
    }

    /// The whole body as a compact JSON string, for substring assertions.
    pub fn body_text(&self) -> String {
        self.body.to_string()
    }
}

/// The text of the last `user` message in a messages request body.
pub fn last_user_text(body: &Value) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    let Some(last) = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return String::new();
    };
    content_text(last.get("content").unwrap_or(&Value::Null))
}

/// The text of the first `user` message in a messages request body: a
/// subagent's task, which every request of that subagent repeats.
pub fn first_user_text(body: &Value) -> String {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| {
            m.iter()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
        .unwrap_or_default()
}

/// The system prompt of a messages request: the top-level `system` (a string
/// or a list of text blocks) and the content of every `role: "system"`
/// message, joined by newlines.
pub fn system_text(body: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(system) = body.get("system") {
        parts.push(content_text(system));
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        parts.extend(
            messages
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
                .map(|m| content_text(m.get("content").unwrap_or(&Value::Null))),
        );
    }
    parts.join("\n")
}

/// The readable text of a message `content` (string or block list); tool
/// results are included.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
                Some("tool_result") => Some(content_text(b.get("content").unwrap_or(&Value::Null))),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_user_text_reads_blocks_and_tool_results() {
        let body = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "out"}]},
                {"type": "text", "text": "Stop hook feedback:\nagain"}
            ]}
        ]});
        assert_eq!(last_user_text(&body), "out\nStop hook feedback:\nagain");
    }

    #[test]
    fn system_text_reads_string_blocks_and_system_messages() {
        assert_eq!(system_text(&json!({"system": "plain"})), "plain");
        let body = json!({
            "system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B", "cache_control": {}}],
            "messages": [
                {"role": "system", "content": "env block"},
                {"role": "user", "content": "not this"},
                {"role": "system", "content": [{"type": "text", "text": "reminder"}]}
            ]
        });
        assert_eq!(system_text(&body), "A\nB\nenv block\nreminder");
        assert_eq!(system_text(&json!({"messages": []})), "");
    }
}
