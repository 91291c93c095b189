//! Reading the last turn from a transcript (JSONL), from its end; and a
//! subagent's task from the start of its own transcript. Does I/O.
//!
//! Used for the assistant's words when the Stop input lacks
//! `last_assistant_message` (older clients) or when that message holds no
//! promise but an earlier text block of the same turn might (a turn that
//! printed the promise and then made a tool call), and for which tools the
//! turn used (the no-progress breaker). Transcripts grow to hundreds of MB,
//! so the file is read backwards in blocks and never whole, at most
//! `max_bytes` from the end, and each line is assembled once.

use crate::budget::MessageUsage;
use crate::queued::QueueOp;
use crate::run::events::Usage;
use memchr::{memmem, memrchr};
use serde_json::Value;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Default bound on how much of a transcript's end is read.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 20;
const BLOCK: u64 = 64 << 10;

/// What the last turn (since the last real user prompt or Stop hook feed,
/// either form: see [`is_stop_feed`]) holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    /// The assistant's text blocks, oldest first, joined with newlines.
    pub text: Option<String>,
    /// The last text block alone (to check the transcript is not lagging).
    pub last_text: Option<String>,
    /// The names of the tools the assistant called, oldest first.
    pub tools: Vec<String>,
    /// Whether the turn's start was found within the bound.
    pub complete: bool,
    /// The client's queue operations (messages the user typed meanwhile),
    /// oldest first: those of this turn, and those written between the last
    /// turn's end and this turn's start (typed while a Stop hook ran).
    pub queue: Vec<QueueOp>,
    /// The `uuid` of the transcript's last assistant line, this turn's or,
    /// when none of this turn's is written yet, the turn before's.
    pub last_uuid: Option<String>,
    /// The usage of each assistant message of the turn, oldest first, one
    /// entry per `message.id` (a message spans several lines).
    pub usage: Vec<MessageUsage>,
}

/// What the Stops before counted: the turn before's messages written after
/// `.0` (the last message counted; `None`: the whole turn before) are counted
/// with this turn's.
#[derive(Debug, Clone, Copy)]
pub struct CountedThrough<'a>(pub Option<&'a str>);

/// The last turn of `file` (`len` bytes), reading at most `max_bytes` from
/// its end, with the usage of the turn before's messages not counted yet
/// (`counted`: a Stop whose transcript was late counted only what was there).
fn last_turn_of(
    file: &File,
    len: u64,
    max_bytes: u64,
    counted: Option<CountedThrough>,
) -> io::Result<Turn> {
    let mut walk = Walk {
        look_back: counted.is_some(),
        counted: counted.and_then(|c| c.0).map(str::to_string),
        ..Walk::default()
    };
    let ended = walk_back(file, len, max_bytes, |line| walk.take(line))?;
    let complete = ended || walk.started || len <= max_bytes;
    Ok(walk.into_turn(complete))
}

/// Hand `take` the lines of `file` (`len` bytes) from the last, at most
/// `max_bytes` from its end, each assembled once, until `take` says the walk
/// is over (`true`, returned) or the bound or the file's start is reached
/// (`false`). A line cut by the bound is not handed over.
fn walk_back(
    mut file: &File,
    len: u64,
    max_bytes: u64,
    mut take: impl FnMut(&[u8]) -> bool,
) -> io::Result<bool> {
    let floor = len.saturating_sub(max_bytes);
    let mut end = len;
    // The later pieces of a line cut by a block boundary, latest first.
    let mut pending: Vec<Vec<u8>> = Vec::new();
    let mut line_buf: Vec<u8> = Vec::new();
    while end > floor {
        let start = end.saturating_sub(BLOCK).max(floor);
        let mut block = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        let mut line_end = block.len();
        while let Some(nl) = memrchr(b'\n', &block[..line_end]) {
            let line: &[u8] = if pending.is_empty() {
                &block[nl + 1..line_end]
            } else {
                line_buf.clear();
                line_buf.extend_from_slice(&block[nl + 1..line_end]);
                for piece in pending.drain(..).rev() {
                    line_buf.extend_from_slice(&piece);
                }
                &line_buf
            };
            if take(line) {
                return Ok(true);
            }
            line_end = nl;
        }
        // The first line of the block may continue in the block before it.
        pending.push(block[..line_end].to_vec());
        end = start;
    }
    // At the file's start the remaining piece is a whole line.
    if floor == 0 && !pending.is_empty() {
        let line: Vec<u8> = pending.drain(..).rev().flatten().collect();
        return Ok(take(&line));
    }
    Ok(false)
}

/// The newest assistant text of the turn `file` ends with (the text of the
/// last assistant line that has one), or `None` when the turn has none yet
/// (its start, a prompt or a Stop's feed, comes first); with the `uuid` of
/// the newest assistant line (as [`Turn::last_uuid`] when there is a text).
fn newest_text(file: &File, len: u64, max_bytes: u64) -> io::Result<Newest> {
    let mut newest = Newest::default();
    walk_back(file, len, max_bytes, |line| match classify(line) {
        Line::Assistant { text, uuid, .. } => {
            if newest.uuid.is_none() {
                newest.uuid = uuid;
            }
            newest.text = text;
            newest.text.is_some()
        }
        Line::TurnStart => true,
        _ => false,
    })?;
    Ok(newest)
}

/// What [`newest_text`] found.
#[derive(Debug, Default)]
struct Newest {
    text: Option<String>,
    uuid: Option<String>,
}

/// The model of the latest assistant message of `file` (`message.model`),
/// looking at most at its last `max_bytes`.
fn last_model_of(file: &File, len: u64, max_bytes: u64) -> Option<String> {
    let mut model = None;
    assistant_lines_back(file, len, max_bytes, |v| {
        model = v
            .pointer("/message/model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty() && !m.starts_with('<'))
            .map(str::to_string);
        model.is_some()
    });
    model
}

/// The client's code for the API error a turn ended on (`rate_limit`, ...;
/// empty when it names none), when the newest assistant line of `file` is
/// the message the client writes for one (`isApiErrorMessage`), looking at
/// most at its last `max_bytes`.
fn last_api_error_of(file: &File, len: u64, max_bytes: u64) -> Option<String> {
    let mut error = None;
    assistant_lines_back(file, len, max_bytes, |v| {
        if v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            let code = v.get("error").and_then(Value::as_str).unwrap_or_default();
            error = Some(code.to_string());
        }
        true
    });
    error
}

/// Hand `take` the main thread's assistant lines of `file`, newest first,
/// each read whole, until it says the walk is over (`true`).
fn assistant_lines_back(
    file: &File,
    len: u64,
    max_bytes: u64,
    mut take: impl FnMut(&Value) -> bool,
) {
    let _ = walk_back(file, len, max_bytes, |line| {
        if memmem::find(line, br#""type":"assistant""#).is_none() {
            return false;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return false;
        };
        if v.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            return false;
        }
        take(&v)
    });
}

/// The task the main thread gave a subagent: the first line of its own
/// transcript (the only line read).
fn task_of(mut file: &File) -> Option<String> {
    use std::io::BufRead;
    file.seek(SeekFrom::Start(0)).ok()?;
    let mut line = String::new();
    io::BufReader::new(file.take(1 << 20))
        .read_line(&mut line)
        .ok()?;
    let v: Value = serde_json::from_str(&line).ok()?;
    let content = v.get("message")?.get("content")?;
    Some(crate::queued::content_text(content))
}

/// The lines seen so far, walking backwards.
#[derive(Default)]
struct Walk {
    texts: Vec<String>,
    tools: Vec<String>,
    queue: Vec<QueueOp>,
    last_uuid: Option<String>,
    /// Latest first; one entry per message id.
    usage: Vec<MessageUsage>,
    /// Count the turn before's messages after `counted`.
    look_back: bool,
    /// The last message whose usage was counted at an earlier Stop.
    counted: Option<String>,
    /// The turn before's messages after `counted`, latest first.
    uncounted: Vec<MessageUsage>,
    /// Past the turn's start, a line of the turn before was seen.
    in_previous: bool,
    /// The turn's start was passed: only queue operations are still collected.
    started: bool,
}

impl Walk {
    /// Take the line before the ones seen; `true` when the walk is over.
    fn take(&mut self, line: &[u8]) -> bool {
        let line = classify(line);
        if self.started {
            return self.take_before_start(line);
        }
        match line {
            Line::Queue(op) => self.queue.push(op),
            Line::Other | Line::ToolResult => {}
            Line::Assistant {
                text,
                tools,
                uuid,
                usage,
            } => {
                self.texts.extend(text);
                self.tools.extend(tools.into_iter().rev());
                if self.last_uuid.is_none() {
                    self.last_uuid = uuid;
                }
                if let Some(u) = usage {
                    add_usage(&mut self.usage, u);
                }
            }
            Line::TurnStart => self.started = true,
        }
        false
    }

    /// Past the turn's start: the queue operations written since the turn
    /// before ended, then, when usage is counted, that turn's messages after
    /// the last one counted. `true` when the walk is over.
    fn take_before_start(&mut self, line: Line) -> bool {
        match line {
            Line::Queue(op) if !self.in_previous => self.queue.push(op),
            Line::Queue(_) | Line::Other => {}
            Line::TurnStart => return true,
            Line::ToolResult => self.in_previous = true,
            Line::Assistant { usage, uuid, .. } => {
                self.in_previous = true;
                if self.last_uuid.is_none() {
                    self.last_uuid = uuid;
                }
                match usage {
                    Some(u) if self.look_back && self.counted.as_ref() != Some(&u.id) => {
                        add_usage(&mut self.uncounted, u);
                    }
                    _ => return true,
                }
            }
        }
        self.in_previous && !self.look_back
    }

    fn into_turn(self, complete: bool) -> Turn {
        let mut turn = turn(self.texts, self.tools, complete);
        turn.queue = self.queue.into_iter().rev().collect();
        turn.last_uuid = self.last_uuid;
        let messages = self.usage.into_iter().chain(self.uncounted);
        turn.usage = messages.rev().collect();
        turn
    }
}

/// A message's lines repeat its usage, the later ones more final: each
/// count is the largest any of its lines reported.
fn add_usage(seen: &mut Vec<MessageUsage>, m: MessageUsage) {
    match seen.iter_mut().find(|s| s.id == m.id) {
        None => seen.push(m),
        Some(s) => {
            let (a, b) = (&mut s.usage, m.usage);
            a.input = a.input.max(b.input);
            a.output = a.output.max(b.output);
            a.cache_read = a.cache_read.max(b.cache_read);
            a.cache_creation = a.cache_creation.max(b.cache_creation);
            s.model = s.model.take().or(m.model);
        }
    }
}

fn turn(mut texts: Vec<String>, mut tools: Vec<String>, complete: bool) -> Turn {
    texts.reverse();
    tools.reverse();
    Turn {
        last_text: texts.last().cloned(),
        text: (!texts.is_empty()).then(|| texts.join("\n")),
        tools,
        complete,
        ..Turn::default()
    }
}

#[derive(Debug, PartialEq)]
enum Line {
    Assistant {
        text: Option<String>,
        /// Tool names in the line's order, reversed (we walk backwards).
        tools: Vec<String>,
        uuid: Option<String>,
        /// The message's usage, when the line reports one with an id.
        usage: Option<MessageUsage>,
    },
    TurnStart,
    /// A user line that only returns tool results.
    ToolResult,
    Queue(QueueOp),
    Other,
}

fn classify(line: &[u8]) -> Line {
    // Cheap filter first: most lines (request blobs, attachments, costs) are
    // neither user nor assistant lines and can be large, so skip the JSON parse.
    let is_assistant = memmem::find(line, br#""type":"assistant""#).is_some();
    let is_user = !is_assistant && memmem::find(line, br#""type":"user""#).is_some();
    if !is_assistant && !is_user {
        if memmem::find(line, br#""type":"queue-operation""#).is_some() {
            return QueueOp::parse(line).map_or(Line::Other, Line::Queue);
        }
        if memmem::find(line, br#""hook_additional_context""#).is_some() && is_stop_feed(line) {
            return Line::TurnStart;
        }
        return Line::Other;
    }
    if let Some(line) = serde_json::from_slice::<typed::Line>(line)
        .ok()
        .and_then(typed::Line::classify)
    {
        return line;
    }
    classify_value(line)
}

/// A user or assistant line read through `serde_json::Value`, each field
/// taken only when it has the expected type.
fn classify_value(line: &[u8]) -> Line {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return Line::Other;
    };
    if v.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        return Line::Other;
    }
    let kind = v.get("type").and_then(Value::as_str);
    let content = v.pointer("/message/content");
    match kind {
        Some("assistant") => {
            let of_type = |t: &'static str| {
                blocks(content).filter(move |b| b.get("type").and_then(Value::as_str) == Some(t))
            };
            let text: Vec<&str> = of_type("text")
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            let mut tools: Vec<String> = of_type("tool_use")
                .filter_map(|b| b.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            tools.reverse();
            Line::Assistant {
                text: (!text.is_empty()).then(|| text.join("\n")),
                tools,
                uuid: v.get("uuid").and_then(Value::as_str).map(str::to_string),
                usage: message_usage(&v),
            }
        }
        Some("user") if is_prompt(content) => Line::TurnStart,
        Some("user") => Line::ToolResult,
        _ => Line::Other,
    }
}

/// A user or assistant line read into the few fields the walk needs,
/// borrowed from the line, as the client writes them: no tree of every
/// field built and dropped (the `serde_json::Value` reading below was half
/// the instructions of reading a turn, measured). Any field of another
/// shape (a string `content`, a `usage` of `null`, a number where text
/// goes, a repeated key) makes this reading fail or give up, and the
/// `Value` reading, lenient field by field, judges the line as before.
mod typed {
    use super::Line as Walked;
    use crate::budget::MessageUsage;
    use crate::run::events::Usage;
    use serde::Deserialize;
    use std::borrow::Cow;

    #[derive(Deserialize)]
    pub(super) struct Line<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<Cow<'a, str>>,
        #[serde(rename = "isSidechain", default)]
        sidechain: Option<bool>,
        #[serde(borrow, default)]
        uuid: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        message: Option<Message<'a>>,
    }

    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        content: Option<Vec<Block<'a>>>,
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        model: Option<Cow<'a, str>>,
        #[serde(default)]
        usage: Option<Tokens>,
    }

    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        text: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        name: Option<Cow<'a, str>>,
    }

    #[derive(Deserialize)]
    struct Tokens {
        #[serde(default)]
        input_tokens: Option<u64>,
        #[serde(default)]
        output_tokens: Option<u64>,
        #[serde(default)]
        cache_read_input_tokens: Option<u64>,
        #[serde(default)]
        cache_creation_input_tokens: Option<u64>,
    }

    impl Line<'_> {
        /// The line as the walk takes it; `None`: leave it to the `Value`
        /// reading (a message id without a usage object: `null` there
        /// counts as zero tokens, absent as none, and this reading cannot
        /// tell the two apart).
        pub(super) fn classify(self) -> Option<Walked> {
            if self.sidechain == Some(true) {
                return Some(Walked::Other);
            }
            let message = self.message;
            let blocks = message
                .as_ref()
                .and_then(|m| m.content.as_deref())
                .unwrap_or_default();
            let of_type =
                |t: &'static str| blocks.iter().filter(move |b| b.kind.as_deref() == Some(t));
            match self.kind.as_deref() {
                Some("assistant") => {
                    let usage = match message.as_ref() {
                        Some(Message {
                            id: Some(id),
                            usage: Some(u),
                            model,
                            ..
                        }) => Some(MessageUsage {
                            id: id.to_string(),
                            model: model.as_deref().map(str::to_string),
                            usage: Usage {
                                input: u.input_tokens.unwrap_or(0),
                                output: u.output_tokens.unwrap_or(0),
                                cache_read: u.cache_read_input_tokens.unwrap_or(0),
                                cache_creation: u.cache_creation_input_tokens.unwrap_or(0),
                            },
                        }),
                        Some(Message {
                            id: Some(_),
                            usage: None,
                            ..
                        }) => return None,
                        _ => None,
                    };
                    let text: Vec<&str> =
                        of_type("text").filter_map(|b| b.text.as_deref()).collect();
                    let mut tools: Vec<String> = of_type("tool_use")
                        .filter_map(|b| b.name.as_deref().map(str::to_string))
                        .collect();
                    tools.reverse();
                    Some(Walked::Assistant {
                        text: (!text.is_empty()).then(|| text.join("\n")),
                        tools,
                        uuid: self.uuid.map(Cow::into_owned),
                        usage,
                    })
                }
                Some("user") if of_type("text").next().is_some() => Some(Walked::TurnStart),
                Some("user") => Some(Walked::ToolResult),
                _ => Some(Walked::Other),
            }
        }
    }
}

/// A Stop hook's `additionalContext` as the client records it: an
/// `attachment` line of type `hook_additional_context` from the main
/// thread's `Stop`, not a user line (measured, 2.1.328 and 2.1.332:
/// docs/client-measurements.md). Ralph feeds its iterations in that form, so
/// it starts a turn as a `Stop hook feedback:` user line does for a block.
fn is_stop_feed(line: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let text = |p: &str| v.pointer(p).and_then(Value::as_str);
    text("/type") == Some("attachment")
        && text("/attachment/type") == Some("hook_additional_context")
        && text("/attachment/hookEvent") == Some("Stop")
        && v.get("isSidechain").and_then(Value::as_bool) != Some(true)
}

/// `message.usage` with `message.id` and `message.model`.
fn message_usage(line: &Value) -> Option<MessageUsage> {
    let message = line.get("message")?;
    let text = |k: &str| message.get(k).and_then(Value::as_str).map(str::to_string);
    Some(MessageUsage {
        id: text("id")?,
        model: text("model"),
        usage: Usage::from_json(message.get("usage")?),
    })
}

/// A user line is a turn start when it carries text typed or fed (a string,
/// or a text block), not when it only returns tool results.
fn is_prompt(content: Option<&Value>) -> bool {
    match content {
        Some(Value::String(_)) => true,
        Some(Value::Array(items)) => items
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("text")),
        _ => false,
    }
}

fn blocks(content: Option<&Value>) -> impl Iterator<Item = &Value> {
    content.and_then(Value::as_array).into_iter().flatten()
}

/// Where Claude Code (2.1.328) keeps a subagent's own transcript: beside the
/// session's, `<session>/subagents/agent-<id>.jsonl`.
pub(crate) fn subagent_transcript(
    session_transcript: &Path,
    agent_id: &str,
) -> Option<std::path::PathBuf> {
    let base = session_transcript.to_str()?.strip_suffix(".jsonl")?;
    Some(format!("{base}/subagents/agent-{agent_id}.jsonl").into())
}

mod goal;
mod wait;
pub use wait::written;
pub use wait::{Awaited, Written};

#[cfg(test)]
mod tests;
