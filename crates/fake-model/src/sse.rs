//! The bodies of a messages response: Server-Sent Events for `stream: true`,
//! one JSON message otherwise.

use crate::script::{Block, Reply};
use serde_json::{Value, json};

fn stop_reason(reply: &Reply) -> &'static str {
    if reply.has_tool_call() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn tool_id(msg_id: &str, index: usize) -> String {
    format!("toolu_{}_{index}", msg_id.trim_start_matches("msg_"))
}

/// A non-streaming messages response.
pub fn json_body(reply: &Reply, id: &str, model: &str) -> Value {
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
        "usage": reply.usage_or_default().to_json(),
    })
}

fn event(out: &mut String, name: &str, data: Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// The start, delta and stop events of one content block.
fn block_events(out: &mut String, id: &str, index: usize, block: &Block) {
    match block {
        Block::Text(text) => {
            event(
                out,
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            );
            event(
                out,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
            );
        }
        other => {
            let (name, input) = other.tool_call().unwrap_or_default();
            event(
                out,
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": tool_id(id, index), "name": name, "input": {}}}),
            );
            event(
                out,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": input.to_string()}}),
            );
        }
    }
    event(
        out,
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    );
}

/// A streaming messages response as Server-Sent Events. The usage goes in
/// `message_start` (input and cache counts, at most 1 output token so far,
/// as the API does) and the output count in the final `message_delta`.
pub fn sse_body(reply: &Reply, id: &str, model: &str) -> String {
    let usage = reply.usage_or_default();
    let mut start_usage = usage.to_json();
    start_usage["output_tokens"] = json!(usage.output_tokens.min(1));
    let mut out = String::new();
    event(
        &mut out,
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": start_usage,
        }}),
    );
    for (index, block) in reply.all_blocks().iter().enumerate() {
        block_events(&mut out, id, index, block);
    }
    event(
        &mut out,
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
               "usage": {"output_tokens": usage.output_tokens}}),
    );
    event(&mut out, "message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Usage;

    fn tool_reply() -> Reply {
        Reply {
            text: Some("working".into()),
            blocks: vec![Block::Bash {
                command: "echo hi".into(),
                description: "say hi".into(),
            }],
            ..Reply::default()
        }
    }

    /// The `data:` of every event, parsed.
    fn events(body: &str) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        let mut name = String::new();
        for line in body.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = n.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                out.push((name.clone(), serde_json::from_str(d).unwrap()));
            }
        }
        out
    }

    #[test]
    fn sse_events_come_in_protocol_order() {
        let body = sse_body(&tool_reply(), "msg_1", "m");
        let names: Vec<String> = events(&body).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
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
    fn default_usage_is_ten_in_ten_out() {
        let ev = events(&sse_body(&Reply::text("x"), "msg_1", "m"));
        assert_eq!(ev[0].1["message"]["usage"]["input_tokens"], 10);
        assert_eq!(ev[0].1["message"]["usage"]["output_tokens"], 1);
        let delta = &ev[ev.len() - 2].1;
        assert_eq!(delta["usage"], json!({"output_tokens": 10}));
        let j = json_body(&Reply::text("x"), "msg_1", "m");
        assert_eq!(j["usage"]["input_tokens"], 10);
        assert_eq!(j["usage"]["output_tokens"], 10);
    }

    #[test]
    fn scripted_usage_is_reported_in_sse_and_json() {
        let reply = Reply {
            usage: Some(Usage {
                input_tokens: 150_000,
                output_tokens: 4_000,
                cache_creation_input_tokens: 20,
                cache_read_input_tokens: 90_000,
            }),
            ..tool_reply()
        };
        let ev = events(&sse_body(&reply, "msg_1", "m"));
        let start = &ev[0].1["message"]["usage"];
        assert_eq!(start["input_tokens"], 150_000);
        assert_eq!(start["cache_creation_input_tokens"], 20);
        assert_eq!(start["cache_read_input_tokens"], 90_000);
        assert_eq!(start["output_tokens"], 1);
        let (name, delta) = &ev[ev.len() - 2];
        assert_eq!(name, "message_delta");
        assert_eq!(delta["usage"]["output_tokens"], 4_000);
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
        let j = json_body(&reply, "msg_1", "m");
        assert_eq!(j["usage"]["output_tokens"], 4_000);
        assert_eq!(j["usage"]["cache_read_input_tokens"], 90_000);
        assert_eq!(j["content"][1]["id"], "toolu_1_1");
    }
}
