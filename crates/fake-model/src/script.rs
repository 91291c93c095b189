//! What the stand-in model will say: the [`Script`] and its parts. Every type
//! reads from JSON (and so from scenario YAML through `serde_json` values);
//! enum variants are one-key maps (`{"bash": {...}}`).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A whole conversation as the model will play it: one [`Reply`] per main
/// request, in order, and the scripts of other lanes (subagents, reviewers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The main thread's replies: requests that match no lane.
    #[serde(default)]
    pub replies: Vec<Reply>,
    /// Separate scripts picked by the request's system prompt; the first lane
    /// that matches wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<Lane>,
    /// Once the main replies are used up, answer each further main request
    /// by doing what ralph's last feed says: one `Agent` call per
    /// `- description "D", prompt "P"` line of the last user message (with
    /// the `subagent_type "T"` it names, in the background), or a short
    /// text when it holds none (a worker's report, a launch notice). Stands
    /// for a model that follows `--parallel` dispatches, however many turns
    /// the workers' timing brings.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follow_dispatches: bool,
}

/// A script of its own for the requests whose system prompt contains
/// `system_contains` (a subagent, a reviewer run as another `claude -p`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lane {
    /// The lane's name, as recorded in [`crate::Recorded::lane`].
    pub name: String,
    /// A substring of the system prompt (the top-level `system` field and the
    /// `role: "system"` messages). Empty matches every messages request.
    pub system_contains: String,
    /// A substring of the first user message too (a subagent's task, as the
    /// main thread wrote it): parallel workers of one agent type share a
    /// system prompt, so each gets its own script by its story. Empty
    /// matches every request.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt_contains: String,
    #[serde(default)]
    pub replies: Vec<Reply>,
}

impl Lane {
    /// Whether a request whose system prompt reads `system` and whose first
    /// user message reads `first_user` belongs here.
    pub fn matches(&self, system: &str, first_user: &str) -> bool {
        system.contains(&self.system_contains) && first_user.contains(&self.prompt_contains)
    }
}

/// One response of the model: an optional leading text (shorthand) followed
/// by content blocks; or an HTTP error.
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
    /// Answer with this HTTP error instead of a message. It uses up its place
    /// in the script: the client's retry takes the next reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    /// Token counts to report (default: 10 in, 10 out, no cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// An error response of the Messages API:
/// `{"type":"error","error":{"type":TYPE,"message":MESSAGE}}` with `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiError {
    /// HTTP status: 429 (rate limit), 529 (overloaded), 500, ...
    pub status: u16,
    /// The error's `type`; default from the status (`rate_limit_error` for
    /// 429, `overloaded_error` for 529, `api_error` for other 5xx, ...).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The error's `message`; default `fake-model: scripted <type>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Extra response headers, e.g. `retry-after: "2"`,
    /// `anthropic-ratelimit-unified-status: rejected`. Numbers are accepted
    /// and kept as their text.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "header_map"
    )]
    pub headers: BTreeMap<String, String>,
}

impl ApiError {
    /// An error of this status with the default type and message.
    pub fn status(status: u16) -> ApiError {
        ApiError {
            status,
            ..ApiError::default()
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> ApiError {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// The error `type` sent: the given one or the usual one for the status.
    pub fn type_name(&self) -> String {
        if let Some(t) = &self.error_type {
            return t.clone();
        }
        match self.status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            _ => "api_error",
        }
        .to_string()
    }

    /// The error `message` sent.
    pub fn message_text(&self) -> String {
        self.message
            .clone()
            .unwrap_or_else(|| format!("fake-model: scripted {}", self.type_name()))
    }

    /// The JSON body of the response.
    pub fn body(&self) -> Value {
        json!({"type": "error", "error": {"type": self.type_name(), "message": self.message_text()}})
    }
}

/// Header values as text, whether the script wrote `"2"` or `2`.
fn header_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let raw = BTreeMap::<String, Value>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            Value::Number(n) => Ok((k, n.to_string())),
            Value::Bool(b) => Ok((k, b.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "header {k}: expected a string or a number, got {other}"
            ))),
        })
        .collect()
}

/// The token counts of a reply, as the Messages API reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Default for Usage {
    /// 10 in, 10 out, no cache: what every reply reported before usage could
    /// be scripted.
    fn default() -> Usage {
        Usage {
            input_tokens: 10,
            output_tokens: 10,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
        }
    }
}

impl Usage {
    /// The full usage object (non-streaming body, `message_start`).
    pub fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        })
    }
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
    /// The reply of a model following the dispatch in `told` (see
    /// [`Script::follow_dispatches`]).
    pub fn following_dispatch(told: &str) -> Reply {
        let agent_type = told
            .split("subagent_type \"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("general-purpose")
            .to_string();
        let calls: Vec<Block> = told
            .lines()
            .filter_map(|l| {
                let rest = l.trim().strip_prefix("- description \"")?;
                let (description, rest) = rest.split_once('"')?;
                let prompt = rest.strip_prefix(", prompt \"")?.strip_suffix('"')?;
                Some(Block::Tool {
                    name: "Agent".into(),
                    input: json!({"description": description, "prompt": prompt,
                                  "subagent_type": agent_type, "run_in_background": true}),
                })
            })
            .collect();
        if calls.is_empty() {
            Reply::text("Noted; waiting for the workers.")
        } else {
            Reply {
                blocks: calls,
                ..Reply::default()
            }
        }
    }

    /// A reply of one text block.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: Some(text.into()),
            ..Reply::default()
        }
    }

    /// A reply that is an HTTP error.
    pub fn error(error: ApiError) -> Reply {
        Reply {
            error: Some(error),
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

    /// The usage to report: the scripted one or the default.
    pub fn usage_or_default(&self) -> Usage {
        self.usage.unwrap_or_default()
    }
}

impl Block {
    /// The tool name and input of a tool call, `None` for text.
    pub fn tool_call(&self) -> Option<(String, Value)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatch_is_followed_call_by_call() {
        let told = "Ralph loop (--parallel 2): ... each with subagent_type \"ralph:w\" and run_in_background: true:\n- description \"story A\", prompt \"Work story A of /p/prd.json.\"\n- description \"story B\", prompt \"Work story B (Bee) of /p/prd.json.\"\nThen end your turn.";
        let r = Reply::following_dispatch(told);
        let calls: Vec<Value> = r
            .blocks
            .iter()
            .filter_map(|b| b.tool_call())
            .map(|(_, i)| i)
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1]["prompt"], "Work story B (Bee) of /p/prd.json.");
        assert_eq!(calls[0]["subagent_type"], "ralph:w");
        assert_eq!(
            Reply::following_dispatch("Agent finished").text.as_deref(),
            Some("Noted; waiting for the workers.")
        );
    }

    #[test]
    fn script_reads_from_json() {
        let s: Script = serde_json::from_str(
            r#"{"replies":[{"text":"a","blocks":[{"bash":{"command":"ls"}},{"write":{"file_path":"f","content":"c"}},{"tool":{"name":"Read","input":{"file_path":"f"}}}]}]}"#,
        )
        .unwrap();
        assert_eq!(s.replies[0].all_blocks().len(), 4);
        assert!(s.replies[0].has_tool_call());
        assert!(s.lanes.is_empty());
    }

    #[test]
    fn lanes_errors_and_usage_read_from_json_and_round_trip() {
        let s: Script = serde_json::from_value(json!({
            "replies": [
                {"error": {"status": 429, "headers": {"retry-after": 2, "x-flag": "yes"}}},
                {"text": "ok", "usage": {"input_tokens": 5000, "output_tokens": 7}}
            ],
            "lanes": [{"name": "reviewer", "system_contains": "You review", "replies": [{"text": "LGTM"}]}]
        }))
        .unwrap();
        let err = s.replies[0].error.as_ref().unwrap();
        assert_eq!(err.status, 429);
        assert_eq!(err.type_name(), "rate_limit_error");
        assert_eq!(err.headers["retry-after"], "2");
        let usage = s.replies[1].usage_or_default();
        assert_eq!((usage.input_tokens, usage.output_tokens), (5000, 7));
        assert_eq!(usage.cache_read_input_tokens, 0);
        assert_eq!(s.lanes[0].name, "reviewer");
        assert!(s.lanes[0].matches("xx You review yy", "anything"));
        let back: Script = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert!(
            serde_json::from_value::<Reply>(json!({"error": {"status": 500, "oops": 1}})).is_err()
        );
    }

    #[test]
    fn error_types_follow_the_status_unless_given() {
        assert_eq!(ApiError::status(529).type_name(), "overloaded_error");
        assert_eq!(ApiError::status(500).type_name(), "api_error");
        let e = ApiError {
            status: 429,
            error_type: Some("custom_error".into()),
            message: Some("slow down".into()),
            ..ApiError::default()
        };
        assert_eq!(
            e.body(),
            json!({"type": "error", "error": {"type": "custom_error", "message": "slow down"}})
        );
    }
}
