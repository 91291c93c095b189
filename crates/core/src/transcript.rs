//! Reading the assistant's words of the last turn from a transcript (JSONL),
//! from its end. Does I/O.
//!
//! Only used when the Stop input lacks `last_assistant_message` (older
//! clients) or when that message holds no promise but an earlier text block of
//! the same turn might (a turn that printed the promise and then made a tool
//! call). Transcripts grow to hundreds of MB, so the file is read backwards in
//! blocks and never whole, and at most `max_bytes` from the end are examined.

use serde_json::Value;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Default bound on how much of a transcript's end is read.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 20;
const BLOCK: u64 = 64 << 10;

/// The text blocks the assistant wrote since the last real user prompt (or
/// Stop hook feedback), oldest first, joined with newlines. `Ok(None)` when no
/// assistant text was found within the bound.
pub fn last_turn_text(path: &Path, max_bytes: u64) -> io::Result<Option<String>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let floor = len.saturating_sub(max_bytes);
    let mut end = len;
    // Bytes of an incomplete line carried from the previous (later) block.
    let mut carry: Vec<u8> = Vec::new();
    let mut texts: Vec<String> = Vec::new();

    while end > floor {
        let start = end.saturating_sub(BLOCK).max(floor);
        let mut buf = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        buf.extend_from_slice(&carry);
        // Lines wholly inside `buf` except the first, which may be cut (unless
        // this block starts at the file's start or the bound).
        let mut lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
        let first = if start > floor {
            lines.remove(0)
        } else {
            &[][..]
        };
        for line in lines.iter().rev() {
            match classify(line) {
                Line::AssistantText(t) => texts.push(t),
                Line::TurnStart => return Ok(joined(texts)),
                Line::Other => {}
            }
        }
        carry = first.to_vec();
        end = start;
    }
    Ok(joined(texts))
}

fn joined(mut texts: Vec<String>) -> Option<String> {
    if texts.is_empty() {
        return None;
    }
    texts.reverse();
    Some(texts.join("\n"))
}

enum Line {
    AssistantText(String),
    TurnStart,
    Other,
}

fn classify(line: &[u8]) -> Line {
    // Cheap filter first: most lines (request blobs, attachments, costs) are
    // neither user nor assistant lines and can be large, so skip the JSON parse.
    let is_assistant = contains(line, br#""type":"assistant""#);
    let is_user = !is_assistant && contains(line, br#""type":"user""#);
    if !is_assistant && !is_user {
        return Line::Other;
    }
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
            let text: Vec<&str> = blocks(content)
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            if text.is_empty() {
                Line::Other
            } else {
                Line::AssistantText(text.join("\n"))
            }
        }
        Some("user") if is_prompt(content) => Line::TurnStart,
        _ => Line::Other,
    }
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

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn assistant(text: &str) -> String {
        serde_json::json!({"type":"assistant","isSidechain":false,
            "message":{"role":"assistant","content":[{"type":"text","text":text}]}})
        .to_string()
    }
    fn tool_use() -> String {
        serde_json::json!({"type":"assistant","message":{"role":"assistant",
            "content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}})
        .to_string()
    }
    fn tool_result() -> String {
        serde_json::json!({"type":"user","message":{"role":"user",
            "content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}})
        .to_string()
    }
    fn prompt(text: &str) -> String {
        serde_json::json!({"type":"user","message":{"role":"user","content":text}}).to_string()
    }

    fn write(lines: &[String], pad: usize) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!(
            "ralph-transcript-{}-{}.jsonl",
            std::process::id(),
            lines.len() * 1000 + pad
        ));
        let mut f = File::create(&path).unwrap();
        for _ in 0..pad {
            writeln!(
                f,
                "{{\"type\":\"api-request-blob\",\"data\":\"{}\"}}",
                "x".repeat(900)
            )
            .unwrap();
        }
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        path
    }

    #[test]
    fn collects_the_whole_last_turn_across_tool_calls() {
        let lines = [
            prompt("old"),
            assistant("<promise>DONE</promise> from an old turn"),
            prompt("feed"),
            assistant("working; <promise>DONE</promise>"),
            tool_use(),
            tool_result(),
            assistant("final words"),
            serde_json::json!({"type":"attachment"}).to_string(),
        ];
        let path = write(&lines, 300);
        let text = last_turn_text(&path, DEFAULT_MAX_BYTES).unwrap().unwrap();
        assert_eq!(text, "working; <promise>DONE</promise>\nfinal words");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn sidechains_skipped_and_bound_respected() {
        let side = serde_json::json!({"type":"assistant","isSidechain":true,
            "message":{"content":[{"type":"text","text":"<promise>DONE</promise>"}]}})
        .to_string();
        let lines = [prompt("p"), assistant("main"), side];
        let path = write(&lines, 0);
        assert_eq!(
            last_turn_text(&path, 1 << 20).unwrap().as_deref(),
            Some("main")
        );
        // A bound smaller than the last lines sees nothing whole.
        assert_eq!(last_turn_text(&path, 10).unwrap(), None);
        std::fs::remove_file(path).unwrap();
    }
}
