//! A scripted stand-in for the streaming Anthropic Messages API.
//!
//! [`FakeModel::start`] binds `127.0.0.1:0` and answers the requests the real
//! Claude Code client makes:
//!
//! * `POST /v1/messages` whose system prompt contains a [`Lane`]'s
//!   `system_contains` (and whose first user message holds its `prompt_contains`: a subagent, a reviewer run as its own `claude -p`):
//!   the next [`Reply`] of that lane, with or without `tools`.
//! * `POST /v1/messages` that carries `tools` and matches no lane (the main
//!   thread's turns): the next reply of [`Script::replies`].
//!
//!   A reply is streamed back as Server-Sent Events (`message_start`,
//!   `content_block_*`, `message_delta`, `message_stop`), or sent as one
//!   JSON message when the request did not ask for a stream. A reply with a
//!   tool call ends with `stop_reason: tool_use`, so the client runs the tool
//!   and asks again with the `tool_result`: that next request takes the next
//!   reply of the same lane. A reply with an [`ApiError`] is answered with
//!   that HTTP status, body and headers, and uses up its place, so the
//!   client's retry takes the next reply.
//! * `POST /v1/messages` without `tools` that matches no lane (titles,
//!   summaries and other side requests) and `POST /v1/messages/count_tokens`:
//!   plain answers that do not consume any script.
//!
//! Every request is recorded ([`FakeModel::requests`]) so a test can assert on
//! what the model was told. Only std threads; no async runtime.

mod http;
mod recorded;
mod script;
mod sse;

pub use recorded::{
    Recorded, RequestKind, content_text, first_user_text, last_user_text, system_text,
};
pub use script::{ApiError, Block, Lane, Reply, Script, Usage};
pub use sse::{json_body, sse_body};

use http::{Request, Response, read_request};
use serde_json::{Value, json};
use std::io::{self, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The text sent back when a request arrives after its script ran out.
pub const EXHAUSTED_TEXT: &str = "[fake-model: script exhausted]";

/// The text of every side request's answer.
pub const SIDE_TEXT: &str = "Scripted session";

#[derive(Default)]
struct State {
    /// The next reply of each script: the main one first, then the lanes.
    next: Vec<usize>,
    requests: Vec<Recorded>,
}

struct Shared {
    script: Script,
    state: Mutex<State>,
    log: Option<Mutex<std::fs::File>>,
    stop: AtomicBool,
    started: Instant,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The replies of script `slot`: 0 the main one, `i + 1` lane `i`.
    fn replies(&self, slot: usize) -> &[Reply] {
        match slot {
            0 => &self.script.replies,
            n => &self.script.lanes[n - 1].replies,
        }
    }

    /// The slot of a lane by name (`None`: the main script).
    fn slot(&self, lane: Option<&str>) -> Option<usize> {
        match lane {
            None => Some(0),
            Some(name) => self
                .script
                .lanes
                .iter()
                .position(|l| l.name == name)
                .map(|i| i + 1),
        }
    }
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
        let state = State {
            next: vec![0; 1 + script.lanes.len()],
            requests: Vec::new(),
        };
        let shared = Arc::new(Shared {
            script,
            state: Mutex::new(state),
            log: log.map(Mutex::new),
            stop: AtomicBool::new(false),
            started: Instant::now(),
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
        self.shared.lock().requests.clone()
    }

    /// The requests the main script answered (or found exhausted).
    pub fn main_requests(&self) -> Vec<Recorded> {
        self.requests_in(None)
    }

    /// The requests a lane's script answered (or found exhausted); `None`
    /// for the main script.
    pub fn requests_in(&self, lane: Option<&str>) -> Vec<Recorded> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| matches!(r.kind, RequestKind::Main | RequestKind::Exhausted))
            .filter(|r| r.lane.as_deref() == lane)
            .cloned()
            .collect()
    }

    /// How many replies of the main script have been served.
    pub fn replies_used(&self) -> usize {
        self.replies_used_in(None)
    }

    /// How many replies of a lane (`None`: the main script) have been
    /// served; 0 for a lane the script does not have.
    pub fn replies_used_in(&self, lane: Option<&str>) -> usize {
        self.shared
            .slot(lane)
            .map_or(0, |slot| self.shared.lock().next[slot])
    }

    /// How many replies the main script holds.
    pub fn replies_total(&self) -> usize {
        self.replies_total_in(None)
    }

    /// How many replies a lane (`None`: the main script) holds.
    pub fn replies_total_in(&self, lane: Option<&str>) -> usize {
        self.shared
            .slot(lane)
            .map_or(0, |slot| self.shared.replies(slot).len())
    }

    /// How many requests, in any lane, arrived after their script ran out.
    pub fn exhausted_requests(&self) -> usize {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.kind == RequestKind::Exhausted)
            .count()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader)? {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        respond(&request, shared).write_to(&mut writer, request.keep_alive)?;
        if !request.keep_alive {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

/// How a request is to be answered, decided when it arrives.
struct Routed {
    kind: RequestKind,
    /// The script slot (0 main, `i + 1` lane `i`) for script requests.
    slot: Option<usize>,
    reply_index: Option<usize>,
    reply: Option<Reply>,
    /// The message id to answer with.
    id: String,
}

/// A message id without characters a client could trip on.
fn message_id(tag: &str, n: usize) -> String {
    let tag: String = tag
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("msg_fake_{tag}{n}")
}

/// Picks the answer of a request and takes its reply off its script. Called
/// with the state locked, so `seq` (the request's place in the log) and the
/// script counters move together.
fn route(request: &Request, body: &Value, shared: &Shared, state: &mut State) -> Routed {
    let route = request.path.split('?').next().unwrap_or("");
    let is_post = request.method == "POST";
    let seq = state.requests.len() + 1;
    let plain = |kind, reply: Option<Reply>, tag: &str| Routed {
        kind,
        slot: None,
        reply_index: None,
        reply,
        id: message_id(tag, seq),
    };
    if is_post && route == "/v1/messages/count_tokens" {
        return plain(RequestKind::CountTokens, None, "count_");
    }
    if !is_post || route != "/v1/messages" {
        return plain(RequestKind::Other, None, "other_");
    }
    let system = system_text(body);
    let first_user = recorded::first_user_text(body);
    let lane = shared
        .script
        .lanes
        .iter()
        .position(|l| l.matches(&system, &first_user));
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if lane.is_none() && !has_tools {
        return plain(RequestKind::Side, Some(Reply::text(SIDE_TEXT)), "side_");
    }
    let slot = lane.map_or(0, |i| i + 1);
    let tag = lane.map_or(String::new(), |i| {
        format!("{}_", shared.script.lanes[i].name)
    });
    let index = state.next[slot];
    if slot == 0 && index >= shared.replies(0).len() && shared.script.follow_dispatches {
        state.next[0] += 1;
        return Routed {
            kind: RequestKind::Main,
            slot: Some(0),
            reply_index: Some(index),
            reply: Some(Reply::following_dispatch(&last_user_text(body))),
            id: message_id("", index + 1),
        };
    }
    let Some(reply) = shared.replies(slot).get(index) else {
        let mut routed = plain(
            RequestKind::Exhausted,
            Some(Reply::text(EXHAUSTED_TEXT)),
            &format!("{tag}exhausted_"),
        );
        routed.slot = Some(slot);
        return routed;
    };
    state.next[slot] += 1;
    Routed {
        kind: RequestKind::Main,
        slot: Some(slot),
        reply_index: Some(index),
        reply: Some(with_cwd(reply, body)),
        id: message_id(&tag, index + 1),
    }
}

/// `{cwd}` in a reply is the working directory the client named in the
/// request (`Working directory: DIR` in its environment block): a subagent's
/// own worktree, which a script cannot know in advance (`--parallel`).
fn with_cwd(reply: &Reply, body: &Value) -> Reply {
    const MARK: &str = "orking directory: ";
    let Ok(text) = serde_json::to_string(reply) else {
        return reply.clone();
    };
    if !text.contains("{cwd}") {
        return reply.clone();
    }
    let request = body.to_string();
    let Some(at) = request.find(MARK) else {
        return reply.clone();
    };
    let rest = &request[at + MARK.len()..];
    let end = rest.find(['\\', '"', '\n']).unwrap_or(rest.len());
    let cwd = rest[..end].trim();
    serde_json::from_str(&text.replace("{cwd}", cwd)).unwrap_or_else(|_| reply.clone())
}

/// The HTTP status a routed request will be answered with.
fn status_of(routed: &Routed) -> u16 {
    match (&routed.kind, &routed.reply) {
        (RequestKind::Other, _) => 404,
        (_, Some(Reply { error: Some(e), .. })) => e.status,
        _ => 200,
    }
}

fn respond(request: &Request, shared: &Shared) -> Response {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-fake")
        .to_string();

    let routed = {
        let mut state = shared.lock();
        let routed = route(request, &body, shared, &mut state);
        let recorded = Recorded {
            method: request.method.clone(),
            path: request.path.clone(),
            kind: routed.kind,
            lane: routed
                .slot
                .filter(|s| *s > 0)
                .map(|s| shared.script.lanes[s - 1].name.clone()),
            reply_index: routed.reply_index,
            status: status_of(&routed),
            at_ms: u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            body,
        };
        if let Some(log) = &shared.log {
            let mut file = log.lock().unwrap_or_else(|p| p.into_inner());
            let line = serde_json::to_string(&recorded).unwrap_or_default();
            let _ = writeln!(file, "{line}");
        }
        state.requests.push(recorded);
        routed
    };

    // The lock is released: a slow reply does not hold up other connections.
    if let Some(ms) = routed.reply.as_ref().and_then(|r| r.delay_ms) {
        thread::sleep(Duration::from_millis(ms));
    }
    answer(&routed, stream, &model)
}

/// The response to a routed request.
fn answer(routed: &Routed, stream: bool, model: &str) -> Response {
    match (routed.kind, &routed.reply) {
        (RequestKind::CountTokens, _) => Response::new(
            200,
            "application/json",
            json!({"input_tokens": 42}).to_string(),
        ),
        (_, Some(Reply { error: Some(e), .. })) => {
            let mut r = Response::new(e.status, "application/json", e.body().to_string());
            r.headers = e.headers.clone().into_iter().collect();
            r
        }
        (_, Some(reply)) if stream => Response::new(
            200,
            "text/event-stream",
            sse_body(reply, &routed.id, model),
        ),
        (_, Some(reply)) => Response::new(
            200,
            "application/json",
            json_body(reply, &routed.id, model).to_string(),
        ),
        _ => Response::new(
            404,
            "application/json",
            json!({"type":"error","error":{"type":"not_found_error","message":"fake-model: unknown route"}})
                .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests;
