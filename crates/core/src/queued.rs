//! Messages the user typed while the loop was running. Pure.
//!
//! In the interactive client, what the user types while the model works is
//! queued, not sent: it waits until the turn ends. A loop's turns never end
//! (the Stop hook feeds the next one), so without this module a typed
//! `/cancel-ralph` would wait for the whole loop. The client records the
//! queue in the transcript (measured on 2.1.328):
//!
//! ```text
//! {"type":"queue-operation","operation":"enqueue","timestamp":"…","sessionId":"…","content":"/cancel-ralph"}
//! {"type":"queue-operation","operation":"dequeue","timestamp":"…","sessionId":"…"}
//! ```
//!
//! `dequeue` names no message (the client takes the oldest), `remove` names
//! the one removed, `popAll` empties the queue. At each Stop the transcript's
//! tail gives these operations; [`pending`] replays them and [`action`] says
//! what the Stop does about what is still waiting.

use crate::args;
use serde::Deserialize;

/// One `queue-operation` line of the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueOp {
    pub kind: OpKind,
    pub timestamp: String,
    pub content: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Enqueue,
    Dequeue,
    Remove,
    PopAll,
    /// An operation this version does not know: ignored.
    Other,
}

impl QueueOp {
    /// Parse one transcript line; `None` when it is not a queue operation.
    pub fn parse(line: &[u8]) -> Option<QueueOp> {
        #[derive(Deserialize)]
        struct Raw {
            r#type: String,
            operation: String,
            #[serde(default)]
            timestamp: String,
            #[serde(default)]
            content: Option<serde_json::Value>,
        }
        let raw: Raw = serde_json::from_slice(line).ok()?;
        if raw.r#type != "queue-operation" {
            return None;
        }
        let kind = match raw.operation.as_str() {
            "enqueue" => OpKind::Enqueue,
            "dequeue" => OpKind::Dequeue,
            "remove" => OpKind::Remove,
            "popAll" => OpKind::PopAll,
            _ => OpKind::Other,
        };
        Some(QueueOp {
            kind,
            timestamp: raw.timestamp,
            content: raw.content.as_ref().map(content_text),
        })
    }
}

/// The text of a message's `content`: a string, or the text blocks of an array
/// (a queued message, a subagent's task).
pub(crate) fn content_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// A message still waiting in the client's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub timestamp: String,
    pub text: String,
}

/// Replay `ops` (oldest first): the messages still queued at the end.
pub(crate) fn pending(ops: &[QueueOp]) -> Vec<Queued> {
    let mut queue: Vec<Queued> = Vec::new();
    for op in ops {
        match op.kind {
            OpKind::Enqueue => queue.push(Queued {
                timestamp: op.timestamp.clone(),
                text: op.content.clone().unwrap_or_default(),
            }),
            OpKind::Dequeue => {
                if !queue.is_empty() {
                    queue.remove(0);
                }
            }
            OpKind::Remove => {
                let at = match &op.content {
                    Some(text) => queue.iter().position(|q| &q.text == text),
                    None => (!queue.is_empty()).then_some(0),
                };
                if let Some(at) = at {
                    queue.remove(at);
                }
            }
            OpKind::PopAll => queue.clear(),
            OpKind::Other => {}
        }
    }
    queue
}

/// What a queued message asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Typed {
    Cancel,
    Status,
    Help,
    /// `/ralph-resume`: goes on a loop paused for the user. Queued while the
    /// model works, it is a message like any other (the loop is not paused
    /// then); the client runs it when the turn ends.
    Resume,
    /// Not the user's: the client's own notice that a background task (a
    /// `--fresh` worker the model let run in the background) finished,
    /// queued as `<task-notification>…` (measured, 2.1.328 interactive). The
    /// client delivers it as a turn by itself; the loop does not yield to it.
    Notification,
    /// Anything else: a question, an instruction, another command.
    Other,
}

pub(crate) fn classify(text: &str) -> Typed {
    if text.trim_start().starts_with("<task-notification>") {
        Typed::Notification
    } else if args::command_args(text, args::CANCEL_COMMANDS).is_some() {
        Typed::Cancel
    } else if args::command_args(text, args::STATUS_COMMANDS).is_some() {
        Typed::Status
    } else if args::command_args(text, args::HELP_COMMANDS).is_some() {
        Typed::Help
    } else if args::command_args(text, args::RESUME_COMMANDS).is_some() {
        Typed::Resume
    } else {
        Typed::Other
    }
}

/// What this Stop does about the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueAction {
    /// Nothing new is queued.
    None,
    /// A `/cancel-ralph` is queued: the loop ends at this Stop.
    Cancel { typed: String },
    /// A message for the model is queued: this Stop lets the turn end so the
    /// client hands it over; the loop goes on at the next Stop.
    Yield { texts: Vec<String> },
    /// Only status or help requests: answered here, and the loop goes on.
    Answer { status: bool, help: bool },
}

impl QueueAction {
    /// The Stop does this instead of the loop's own step (a cancel, a yield).
    pub(crate) fn preempts(&self) -> bool {
        matches!(self, QueueAction::Cancel { .. } | QueueAction::Yield { .. })
    }
}

/// Decide on the messages queued after `seen` (the timestamp of the newest
/// queued message an earlier Stop already answered). A cancel wins over
/// everything; a message for the model over answers.
pub(crate) fn action(pending: &[Queued], seen: Option<&str>) -> QueueAction {
    let new: Vec<&Queued> = pending
        .iter()
        .filter(|q| seen.is_none_or(|s| q.timestamp.as_str() > s))
        .collect();
    if let Some(q) = new.iter().find(|q| classify(&q.text) == Typed::Cancel) {
        return QueueAction::Cancel {
            typed: q.text.trim().to_string(),
        };
    }
    let others: Vec<String> = new
        .iter()
        .filter(|q| matches!(classify(&q.text), Typed::Other | Typed::Resume))
        .map(|q| q.text.clone())
        .collect();
    if !others.is_empty() {
        return QueueAction::Yield { texts: others };
    }
    let status = new.iter().any(|q| classify(&q.text) == Typed::Status);
    let help = new.iter().any(|q| classify(&q.text) == Typed::Help);
    if status || help {
        QueueAction::Answer { status, help }
    } else {
        QueueAction::None
    }
}

/// The newest timestamp among `pending`, to remember as answered.
pub(crate) fn newest(pending: &[Queued]) -> Option<&str> {
    pending.iter().map(|q| q.timestamp.as_str()).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OpKind, t: &str, content: Option<&str>) -> QueueOp {
        QueueOp {
            kind,
            timestamp: t.into(),
            content: content.map(str::to_string),
        }
    }

    #[test]
    fn parses_the_lines_the_client_writes() {
        let enq = br#"{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-30T23:50:42.818Z","sessionId":"s","content":"/cancel-ralph"}"#;
        let deq = br#"{"type":"queue-operation","operation":"dequeue","timestamp":"2026-11-30T23:50:46.537Z","sessionId":"s"}"#;
        assert_eq!(
            QueueOp::parse(enq),
            Some(op(
                OpKind::Enqueue,
                "2026-11-30T23:50:42.818Z",
                Some("/cancel-ralph")
            ))
        );
        assert_eq!(QueueOp::parse(deq).unwrap().kind, OpKind::Dequeue);
        assert_eq!(QueueOp::parse(br#"{"type":"user"}"#), None);
        assert_eq!(QueueOp::parse(b"not json"), None);
        let blocks = br#"{"type":"queue-operation","operation":"enqueue","content":[{"type":"text","text":"hi"}]}"#;
        assert_eq!(
            QueueOp::parse(blocks).unwrap().content.as_deref(),
            Some("hi")
        );
    }

    #[test]
    fn a_task_notification_is_not_the_users_message() {
        let q = |text: &str| Queued {
            timestamp: "2026-12-01T04:21:41.568Z".into(),
            text: text.into(),
        };
        let note = "<task-notification>\n<task-id>ab3</task-id>\n<status>completed</status>";
        assert_eq!(classify(note), Typed::Notification);
        assert_eq!(action(&[q(note)], None), QueueAction::None);
        assert!(matches!(
            action(&[q(note), q("and also fix the README")], None),
            QueueAction::Yield { .. }
        ));
    }

    #[test]
    fn replays_enqueue_dequeue_remove_and_pop_all() {
        let ops = [
            op(OpKind::Enqueue, "1", Some("a")),
            op(OpKind::Enqueue, "2", Some("b")),
            op(OpKind::Enqueue, "3", Some("c")),
            op(OpKind::Dequeue, "4", None),
            op(OpKind::Remove, "5", Some("c")),
        ];
        let left = pending(&ops);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].text, "b");
        let mut all = ops.to_vec();
        all.push(op(OpKind::PopAll, "6", None));
        assert!(pending(&all).is_empty());
        // A dequeue whose enqueue lies before the window is harmless.
        assert!(pending(&[op(OpKind::Dequeue, "1", None)]).is_empty());
    }

    #[test]
    fn every_spelling_of_the_commands_is_recognised() {
        for t in [
            "/cancel-ralph",
            "/ralph:cancel-ralph",
            "  /cancel-ralph now",
        ] {
            assert_eq!(classify(t), Typed::Cancel, "{t}");
        }
        for t in ["/ralph-status", "/ralph:ralph-status"] {
            assert_eq!(classify(t), Typed::Status, "{t}");
        }
        for t in ["/ralph-help", "/ralph:ralph-help", "/ralph:help"] {
            assert_eq!(classify(t), Typed::Help, "{t}");
        }
        for t in ["what is 2+2?", "/cancel-ralphs", "please /cancel-ralph"] {
            assert_eq!(classify(t), Typed::Other, "{t}");
        }
    }

    #[test]
    fn cancel_wins_then_messages_then_answers() {
        let q = |t: &str, text: &str| Queued {
            timestamp: t.into(),
            text: text.into(),
        };
        let status = [q("1", "/ralph-status")];
        assert_eq!(
            action(&status, None),
            QueueAction::Answer {
                status: true,
                help: false
            }
        );
        // Answered once: not again at the next Stop.
        assert_eq!(action(&status, Some("1")), QueueAction::None);
        let mixed = [
            q("1", "/ralph-status"),
            q("2", "why?"),
            q("3", "/cancel-ralph"),
        ];
        assert_eq!(
            action(&mixed, None),
            QueueAction::Cancel {
                typed: "/cancel-ralph".into()
            }
        );
        assert_eq!(
            action(&mixed[..2], None),
            QueueAction::Yield {
                texts: vec!["why?".into()]
            }
        );
        assert_eq!(action(&[], None), QueueAction::None);
        assert_eq!(newest(&mixed), Some("3"));
    }
}
