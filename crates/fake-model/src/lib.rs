//! A scripted stand-in for the streaming Anthropic Messages API.
//!
//! [`FakeModel::start`] binds `127.0.0.1:0` and answers the requests the real
//! Claude Code client makes:
//!
//! * `POST /v1/messages` that carries `tools` (the agent's own turns): the next
//!   [`Reply`] of the [`Script`] is streamed back as Server-Sent Events
//!   (`message_start`, `content_block_*`, `message_delta`, `message_stop`).
//!   A reply with a tool call ends with `stop_reason: tool_use`, so the client
//!   runs the tool and asks again with the `tool_result`: that next request
//!   takes the next reply of the script.
//! * `POST /v1/messages` without `tools` (titles, summaries and other side
//!   requests) and `POST /v1/messages/count_tokens`: plain answers that do not
//!   consume the script.
//!
//! Every request is recorded ([`FakeModel::requests`]) so a test can assert on
//! what the model was told. Only std threads; no async runtime.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// The text sent back when a main request arrives after the script ran out.
pub const EXHAUSTED_TEXT: &str = "[fake-model: script exhausted]";

/// A whole conversation as the model will play it: one [`Reply`] per main
/// request, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub replies: Vec<Reply>,
}

/// One response of the model: an optional leading text (shorthand) followed
/// by content blocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Shorthand for a first text block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Block>,
    /// Wait this long before answering: stands for a model that works for a
    /// while, so a test can type into the client mid-turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// One content block of a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    /// A text block.
    Text(String),
    /// A `Bash` tool call.
    Bash {
        command: String,
        #[serde(default = "default_description")]
        description: String,
    },
    /// A `Write` tool call.
    Write { file_path: String, content: String },
    /// Any other tool call, with its input as given.
    Tool { name: String, input: Value },
}

fn default_description() -> String {
    "scripted command".to_string()
}

impl Reply {
    /// A reply of one text block.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: Some(text.into()),
            ..Reply::default()
        }
    }

    /// The blocks of this reply, the `text` shorthand first.
    pub fn all_blocks(&self) -> Vec<Block> {
        let mut all = Vec::new();
        if let Some(t) = &self.text {
            all.push(Block::Text(t.clone()));
        }
        all.extend(self.blocks.iter().cloned());
        all
    }

    /// Whether the client will have to run a tool after this reply.
    pub fn has_tool_call(&self) -> bool {
        self.blocks.iter().any(|b| !matches!(b, Block::Text(_)))
    }
}

impl Block {
    /// The tool name and input of a tool call, `None` for text.
    fn tool_call(&self) -> Option<(String, Value)> {
        match self {
            Block::Text(_) => None,
            Block::Bash {
                command,
                description,
            } => Some((
                "Bash".into(),
                json!({"command": command, "description": description}),
            )),
            Block::Write { file_path, content } => Some((
                "Write".into(),
                json!({"file_path": file_path, "content": content}),
            )),
            Block::Tool { name, input } => Some((name.clone(), input.clone())),
        }
    }
}

/// What kind of request the server saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A messages request with tools: took a reply from the script.
    Main,
    /// A messages request with tools after the script ran out.
    Exhausted,
    /// A messages request without tools (title, summary, ...).
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
    /// Index of the script reply served, for [`RequestKind::Main`].
    pub reply_index: Option<usize>,
    /// The body parsed as JSON (`Null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// The text of the last `user` message of a messages request: its string
    /// content, or its text and tool_result blocks joined by newlines.
    pub fn last_user_text(&self) -> String {
        last_user_text(&self.body)
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

#[derive(Default)]
struct State {
    next_reply: usize,
    requests: Vec<Recorded>,
}

struct Shared {
    script: Script,
    state: Mutex<State>,
    log: Option<Mutex<std::fs::File>>,
    stop: AtomicBool,
}

/// A running stand-in model. Stops accepting connections when dropped.
pub struct FakeModel {
    port: u16,
    shared: Arc<Shared>,
}

impl FakeModel {
    /// Binds `127.0.0.1:0` and serves `script` on a background thread.
    pub fn start(script: Script) -> io::Result<FakeModel> {
        Self::start_with_log(script, None)
    }

    /// Like [`FakeModel::start`], also appending every request as one JSON
    /// line to `log`.
    pub fn start_with_log(script: Script, log: Option<std::fs::File>) -> io::Result<FakeModel> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            script,
            state: Mutex::new(State::default()),
            log: log.map(Mutex::new),
            stop: AtomicBool::new(false),
        });
        let accept_shared = Arc::clone(&shared);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if accept_shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                let conn_shared = Arc::clone(&accept_shared);
                thread::spawn(move || {
                    let _ = serve_connection(stream, &conn_shared);
                });
            }
        });
        Ok(FakeModel { port, shared })
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// The requests that were answered from the script (or found it exhausted).
    pub fn main_requests(&self) -> Vec<Recorded> {
        self.lock()
            .requests
            .iter()
            .filter(|r| matches!(r.kind, RequestKind::Main | RequestKind::Exhausted))
            .cloned()
            .collect()
    }

    /// How many replies of the script have been served.
    pub fn replies_used(&self) -> usize {
        self.lock().next_reply
    }

    /// How many replies the script holds.
    pub fn replies_total(&self) -> usize {
        self.shared.script.replies.len()
    }

    /// How many main requests arrived after the script ran out.
    pub fn exhausted_requests(&self) -> usize {
        self.lock()
            .requests
            .iter()
            .filter(|r| r.kind == RequestKind::Exhausted)
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
    keep_alive: bool,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let version = parts.next().unwrap_or("HTTP/1.1").to_string();
    let mut content_length = 0usize;
    let mut chunked = false;
    let mut keep_alive = version != "HTTP/1.0";
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            return Ok(None);
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim();
            match name.as_str() {
                "content-length" => content_length = value.parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                "connection" => {
                    let v = value.to_ascii_lowercase();
                    if v.contains("close") {
                        keep_alive = false;
                    } else if v.contains("keep-alive") {
                        keep_alive = true;
                    }
                }
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line)?;
            let size_hex = size_line.trim().split(';').next().unwrap_or("0");
            let size = usize::from_str_radix(size_hex, 16).unwrap_or(0);
            if size == 0 {
                // Trailers until the blank line.
                loop {
                    let mut t = String::new();
                    if reader.read_line(&mut t)? == 0 || t.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0; size];
            reader.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk);
            let mut crlf = String::new();
            reader.read_line(&mut crlf)?;
        }
    } else if content_length > 0 {
        body = vec![0; content_length];
        reader.read_exact(&mut body)?;
    }
    Ok(Some(Request {
        method,
        path,
        body,
        keep_alive,
    }))
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader)? {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let (status, content_type, body) = respond(&request, shared);
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nrequest-id: req_fake\r\nConnection: {}\r\n\r\n",
            body.len(),
            if request.keep_alive {
                "keep-alive"
            } else {
                "close"
            }
        );
        writer.write_all(head.as_bytes())?;
        writer.write_all(body.as_bytes())?;
        writer.flush()?;
        if !request.keep_alive {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

fn respond(request: &Request, shared: &Shared) -> (&'static str, &'static str, String) {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let route = request.path.split('?').next().unwrap_or("");
    let is_post = request.method == "POST";
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-fake")
        .to_string();

    let (kind, reply_index, reply) = if is_post && route == "/v1/messages/count_tokens" {
        (RequestKind::CountTokens, None, None)
    } else if is_post && route == "/v1/messages" && has_tools {
        let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
        let index = state.next_reply;
        match shared.script.replies.get(index) {
            Some(reply) => {
                state.next_reply += 1;
                (RequestKind::Main, Some(index), Some(reply.clone()))
            }
            None => (
                RequestKind::Exhausted,
                None,
                Some(Reply::text(EXHAUSTED_TEXT)),
            ),
        }
    } else if is_post && route == "/v1/messages" {
        (
            RequestKind::Side,
            None,
            Some(Reply::text("Scripted session")),
        )
    } else {
        (RequestKind::Other, None, None)
    };

    let recorded = Recorded {
        method: request.method.clone(),
        path: request.path.clone(),
        kind,
        reply_index,
        body,
    };
    if let Some(log) = &shared.log {
        let mut file = log.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(
            file,
            "{}",
            serde_json::to_string(&recorded).unwrap_or_default()
        );
    }
    shared
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .requests
        .push(recorded);

    if let Some(ms) = reply.as_ref().and_then(|r| r.delay_ms) {
        thread::sleep(Duration::from_millis(ms));
    }
    match (kind, reply) {
        (RequestKind::CountTokens, _) => (
            "200 OK",
            "application/json",
            json!({"input_tokens": 42}).to_string(),
        ),
        (_, Some(reply)) => {
            let id = format!("msg_fake_{}", reply_index.map_or(0, |i| i + 1));
            if stream {
                ("200 OK", "text/event-stream", sse_body(&reply, &id, &model))
            } else {
                (
                    "200 OK",
                    "application/json",
                    json_body(&reply, &id, &model).to_string(),
                )
            }
        }
        _ => (
            "404 Not Found",
            "application/json",
            json!({"type":"error","error":{"type":"not_found_error","message":"fake-model: unknown route"}})
                .to_string(),
        ),
    }
}

fn stop_reason(reply: &Reply) -> &'static str {
    if reply.has_tool_call() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn usage() -> Value {
    json!({"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn tool_id(msg_id: &str, index: usize) -> String {
    format!("toolu_{}_{index}", msg_id.trim_start_matches("msg_"))
}

/// A non-streaming messages response.
fn json_body(reply: &Reply, id: &str, model: &str) -> Value {
    let content: Vec<Value> = reply
        .all_blocks()
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            other => {
                let (name, input) = other.tool_call().unwrap_or_default();
                json!({"type": "tool_use", "id": tool_id(id, i), "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(reply), "stop_sequence": null,
        "usage": usage(),
    })
}

/// A streaming messages response as Server-Sent Events.
pub fn sse_body(reply: &Reply, id: &str, model: &str) -> String {
    fn event(out: &mut String, name: &str, data: Value) {
        out.push_str("event: ");
        out.push_str(name);
        out.push_str("\ndata: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    }
    let mut out = String::new();
    event(
        &mut out,
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }}),
    );
    for (index, block) in reply.all_blocks().iter().enumerate() {
        match block {
            Block::Text(text) => {
                event(
                    &mut out,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
                );
                event(
                    &mut out,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
                );
            }
            other => {
                let (name, input) = other.tool_call().unwrap_or_default();
                event(
                    &mut out,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {
                        "type": "tool_use", "id": tool_id(id, index), "name": name, "input": {}}}),
                );
                event(
                    &mut out,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {
                        "type": "input_json_delta", "partial_json": input.to_string()}}),
                );
            }
        }
        event(
            &mut out,
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        &mut out,
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
               "usage": {"output_tokens": 10}}),
    );
    event(&mut out, "message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(port: u16, path: &str, body: &Value) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let body = body.to_string();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    fn script() -> Script {
        Script {
            replies: vec![
                Reply {
                    text: Some("working".into()),
                    blocks: vec![Block::Bash {
                        command: "echo hi".into(),
                        description: "say hi".into(),
                    }],
                    ..Reply::default()
                },
                Reply::text("<promise>DONE</promise>"),
            ],
        }
    }

    #[test]
    fn serves_script_in_order_and_side_requests_do_not_consume_it() {
        let model = FakeModel::start(script()).unwrap();
        let main = json!({"stream": true, "tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": "go"}]});
        let first = post(model.port(), "/v1/messages?beta=true", &main);
        assert!(first.starts_with("HTTP/1.1 200"));
        assert!(first.contains("\"stop_reason\":\"tool_use\""));
        assert!(first.contains("input_json_delta"));
        assert!(first.contains(r#"\"command\":\"echo hi\""#));

        let side = post(
            model.port(),
            "/v1/messages?beta=true",
            &json!({"stream": false, "messages": [{"role": "user", "content": "title?"}]}),
        );
        assert!(side.contains("Scripted session"));
        let count = post(
            model.port(),
            "/v1/messages/count_tokens?beta=true",
            &json!({}),
        );
        assert!(count.contains("input_tokens"));

        let second = post(model.port(), "/v1/messages?beta=true", &main);
        assert!(second.contains("<promise>DONE</promise>"));
        assert!(second.contains("\"stop_reason\":\"end_turn\""));
        let third = post(model.port(), "/v1/messages?beta=true", &main);
        assert!(third.contains(EXHAUSTED_TEXT));

        assert_eq!(model.replies_used(), 2);
        assert_eq!(model.exhausted_requests(), 1);
        let kinds: Vec<_> = model.requests().iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            vec![
                RequestKind::Main,
                RequestKind::Side,
                RequestKind::CountTokens,
                RequestKind::Main,
                RequestKind::Exhausted
            ]
        );
        assert_eq!(model.main_requests()[0].last_user_text(), "go");
    }

    #[test]
    fn sse_events_come_in_protocol_order() {
        let body = sse_body(&script().replies[0], "msg_1", "m");
        let events: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            events,
            vec![
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
    }

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
    fn script_reads_from_json() {
        let s: Script = serde_json::from_str(
            r#"{"replies":[{"text":"a","blocks":[{"bash":{"command":"ls"}},{"write":{"file_path":"f","content":"c"}},{"tool":{"name":"Read","input":{"file_path":"f"}}}]}]}"#,
        )
        .unwrap();
        assert_eq!(s.replies[0].all_blocks().len(), 4);
        assert!(s.replies[0].has_tool_call());
    }
}
