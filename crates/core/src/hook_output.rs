//! What a hook answers on stdout, as one type for every ralph hook, and the
//! wrapper that makes a hook fail open. Printing is the only I/O here.
//!
//! Claude Code reads one JSON object (or nothing) from a hook's stdout, exit
//! status 0. For a Stop hook, `{"decision":"block","reason":R}` keeps the
//! session going with R as the next user turn; for a UserPromptSubmit hook it
//! drops the prompt and shows R to the user. `systemMessage` is shown to the
//! user either way; nothing at all means "go on as if the hook were not there".
//! A SessionStart hook adds text to the model's context with
//! `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":T}}`.

use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::panic::UnwindSafe;

/// The fields of a hook's JSON answer.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(rename = "systemMessage", skip_serializing_if = "Option::is_none")]
    system_message: Option<&'a str>,
    #[serde(rename = "hookSpecificOutput", skip_serializing_if = "Option::is_none")]
    specific: Option<Specific<'a>>,
}

#[derive(Serialize)]
struct Specific<'a> {
    #[serde(rename = "hookEventName")]
    event: &'static str,
    #[serde(rename = "additionalContext")]
    context: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutput {
    /// Print nothing: the client goes on (a Stop stops, a prompt is sent).
    Nothing,
    /// Let the client go on, and show the user a message.
    Allow { system_message: String },
    /// Block: the Stop does not happen (the reason is the model's next turn),
    /// or the prompt is not sent (the reason is shown to the user).
    Block {
        reason: String,
        system_message: Option<String>,
    },
    /// Add `context` to what the model reads (a SessionStart hook's
    /// `additionalContext`), and show the user a message if any.
    Context {
        event: &'static str,
        context: String,
        system_message: Option<String>,
    },
}

impl HookOutput {
    /// Go on, and tell the user `message`.
    pub fn allow(message: impl Into<String>) -> HookOutput {
        HookOutput::Allow {
            system_message: message.into(),
        }
    }

    /// Block with `reason` and no message of its own.
    pub fn block(reason: impl Into<String>) -> HookOutput {
        HookOutput::Block {
            reason: reason.into(),
            system_message: None,
        }
    }

    /// The JSON object to print, or `None` to print nothing.
    pub fn to_json(&self) -> Option<Value> {
        self.line()
            .map(|line| serde_json::to_value(line).unwrap_or_default())
    }

    /// The answer as the fields of its JSON line (in the order Claude Code
    /// documents them), borrowed: printing it copies no text.
    fn line(&self) -> Option<Line<'_>> {
        match self {
            HookOutput::Nothing => None,
            HookOutput::Allow { system_message } => Some(Line {
                decision: None,
                reason: None,
                system_message: Some(system_message),
                specific: None,
            }),
            HookOutput::Block {
                reason,
                system_message,
            } => Some(Line {
                decision: Some("block"),
                reason: Some(reason),
                system_message: system_message.as_deref(),
                specific: None,
            }),
            HookOutput::Context {
                event,
                context,
                system_message,
            } => Some(Line {
                decision: None,
                reason: None,
                system_message: system_message.as_deref(),
                specific: Some(Specific { event, context }),
            }),
        }
    }

    /// The same answer with `line` added to the user's message (on a line
    /// of its own); `Nothing` becomes `Allow`.
    pub fn with_message_line(self, line: &str) -> HookOutput {
        let join = |message: String| {
            if message.is_empty() {
                line.to_string()
            } else {
                format!("{message}\n{line}")
            }
        };
        match self {
            HookOutput::Nothing => HookOutput::allow(line),
            HookOutput::Allow { system_message } => HookOutput::allow(join(system_message)),
            HookOutput::Block {
                reason,
                system_message,
            } => HookOutput::Block {
                reason,
                system_message: Some(join(system_message.unwrap_or_default())),
            },
            HookOutput::Context {
                event,
                context,
                system_message,
            } => HookOutput::Context {
                event,
                context,
                system_message: Some(join(system_message.unwrap_or_default())),
            },
        }
    }

    /// Print the answer as one line on stdout (nothing for `Nothing`),
    /// serialized straight into stdout: a hook that just freed a large PRD
    /// would pay for the allocator's clean-up on a fresh copy (measured).
    pub fn print(&self) {
        if let Some(line) = self.line() {
            let mut stdout = std::io::stdout().lock();
            let _ = serde_json::to_writer(&mut stdout, &line);
            let _ = writeln!(stdout);
            let _ = stdout.flush();
        }
    }
}

/// Run a hook so that a bug in it never traps the user: a panic becomes
/// `Allow` with `message` (the Stop is allowed, the prompt goes on).
pub fn fail_open(message: &str, hook: impl FnOnce() -> HookOutput + UnwindSafe) -> HookOutput {
    std::panic::catch_unwind(hook).unwrap_or_else(|_| HookOutput::allow(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms() {
        assert_eq!(HookOutput::Nothing.to_json(), None);
        assert_eq!(
            HookOutput::allow("m").to_json().unwrap().to_string(),
            r#"{"systemMessage":"m"}"#
        );
        assert_eq!(
            HookOutput::block("r").to_json().unwrap().to_string(),
            r#"{"decision":"block","reason":"r"}"#
        );
        let both = HookOutput::Block {
            reason: "r".into(),
            system_message: Some("m".into()),
        };
        assert_eq!(
            both.to_json().unwrap().to_string(),
            r#"{"decision":"block","reason":"r","systemMessage":"m"}"#
        );
    }

    #[test]
    fn session_start_context() {
        let out = HookOutput::Context {
            event: "SessionStart",
            context: "c".into(),
            system_message: None,
        };
        assert_eq!(
            out.to_json().unwrap().to_string(),
            r#"{"hookSpecificOutput":{"additionalContext":"c","hookEventName":"SessionStart"}}"#
        );
    }

    #[test]
    fn lines_are_added_to_the_message() {
        let out = HookOutput::Nothing
            .with_message_line("a")
            .with_message_line("b");
        assert_eq!(out, HookOutput::allow("a\nb"));
        let block = HookOutput::block("r").with_message_line("a");
        assert_eq!(
            block.to_json().unwrap().to_string(),
            r#"{"decision":"block","reason":"r","systemMessage":"a"}"#
        );
    }

    #[test]
    fn a_panic_fails_open() {
        let out = fail_open("it broke", || panic!("bug"));
        assert_eq!(out, HookOutput::allow("it broke"));
        assert_eq!(fail_open("x", || HookOutput::Nothing), HookOutput::Nothing);
    }
}
