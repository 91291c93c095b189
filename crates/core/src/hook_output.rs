//! What a hook answers on stdout, as one type for every ralph hook, and the
//! wrapper that makes a hook fail open. Does I/O: printing, and reading
//! `AI_AGENT` (which client runs the hook) to choose a feed's form.
//!
//! Claude Code reads one JSON object (or nothing) from a hook's stdout, exit
//! status 0. For a UserPromptSubmit hook, `{"decision":"block","reason":R}`
//! drops the prompt and shows R to the user. `systemMessage` is shown to the
//! user either way; nothing at all means "go on as if the hook were not there".
//! A SessionStart hook adds text to the model's context with
//! `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":T}}`.
//!
//! A Stop or SubagentStop hook keeps the model going (a [`HookOutput::Feed`])
//! in one of two forms, [`FeedForm`]: both continue the turn, both count
//! toward the client's cap of 8 continuations without a tool call, but only
//! the block is shown to the user as "Stop hook reported a problem".

use serde::Serialize;
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

/// The hook that keeps the model going with a feed: its event name is the
/// `hookEventName` of the context form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedHook {
    /// The main thread's Stop.
    Stop,
    /// A subagent's stop (a `--fresh` or `--parallel` worker).
    SubagentStop,
}

impl FeedHook {
    fn event(self) -> &'static str {
        match self {
            FeedHook::Stop => "Stop",
            FeedHook::SubagentStop => "SubagentStop",
        }
    }
}

/// Where the user reads a hook's words, and so how ralph's commands are
/// named to them: typed in a Claude Code session, or in the terminal where
/// `ralph run` drives the loop (its Stop hook holds the run's pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    Session,
    Terminal,
}

impl Reader {
    /// The command that goes on after a pause.
    pub(crate) fn resume(self) -> &'static str {
        match self {
            Reader::Session => "/ralph-resume",
            Reader::Terminal => "`ralph resume`",
        }
    }

    /// The command that ends the loop.
    pub(crate) fn cancel(self) -> &'static str {
        match self {
            Reader::Session => "/cancel-ralph",
            Reader::Terminal => "`ralph cancel`",
        }
    }
}

/// How a feed is printed. Measured in 2.1.328 and 2.1.332, for Stop and
/// SubagentStop, in `-p` and interactive (docs/client-measurements.md,
/// "Feeding an iteration").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedForm {
    /// `{"hookSpecificOutput":{"hookEventName":E,"additionalContext":T}}`:
    /// the screen shows "Stop hook says: T"; the model reads T once, as
    /// `<system-reminder>\nStop hook additional context: T\n</system-reminder>`
    /// (`SubagentStop hook additional context: ` for a worker).
    Context,
    /// `{"decision":"block","reason":T}`: the screen shows "Stop hook reported
    /// a problem" and T; the model reads T twice (`Stop hook feedback:\nT` as
    /// a user turn, and a system message `Stop hook blocking error from
    /// command: "…": T`). Kept for a client older than the first one
    /// measured to take the context form, or one that does not say its
    /// version: the only form such a client is known to continue on.
    Block,
}

/// The first client measured to continue a Stop and a SubagentStop on
/// `additionalContext` (2.1.328, the pinned one; 2.1.332 does the same).
pub(crate) const CONTEXT_FEED_SINCE: (u32, u32, u32) = (2, 1, 328);

impl FeedForm {
    /// The form for the client named by `AI_AGENT` (Claude Code sets it for
    /// its hooks: `claude-code_2-1-328_harness`): the context form from
    /// [`CONTEXT_FEED_SINCE`] on, the block for an older or unnamed client.
    pub(crate) fn for_agent(ai_agent: Option<&str>) -> FeedForm {
        match ai_agent.and_then(client_version) {
            Some(v) if v >= CONTEXT_FEED_SINCE => FeedForm::Context,
            _ => FeedForm::Block,
        }
    }

    /// The form for the client that runs this hook (its environment).
    pub(crate) fn of_this_client() -> FeedForm {
        FeedForm::for_agent(std::env::var("AI_AGENT").ok().as_deref())
    }
}

/// `claude-code_2-1-328_harness` → (2, 1, 328) (dots read as dashes).
fn client_version(ai_agent: &str) -> Option<(u32, u32, u32)> {
    let version = ai_agent.strip_prefix("claude-code_")?.split('_').next()?;
    let mut parts = version.split(['-', '.']).map(|p| p.parse::<u32>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutput {
    /// Print nothing: the client goes on (a Stop stops, a prompt is sent).
    Nothing,
    /// Let the client go on, and show the user a message.
    Allow { system_message: String },
    /// Keep the model going (a Stop's or a SubagentStop's): `text` is what
    /// it reads next, in the client's [`FeedForm`].
    Feed {
        hook: FeedHook,
        text: String,
        system_message: Option<String>,
    },
    /// Block: the prompt is not sent (the reason is shown to the user), or a
    /// Stop does not happen (prefer [`HookOutput::Feed`]).
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

    /// Feed the main thread's model `text` at a Stop, and show `message`.
    pub(crate) fn stop_feed(text: String, message: String) -> HookOutput {
        HookOutput::Feed {
            hook: FeedHook::Stop,
            text,
            system_message: Some(message),
        }
    }

    /// What a feed (or a block) gives the model, to be added to.
    pub(crate) fn fed_text(&self) -> Option<&str> {
        match self {
            HookOutput::Feed { text, .. } | HookOutput::Block { reason: text, .. } => Some(text),
            _ => None,
        }
    }

    /// The same answer with what it feeds the model changed by `edit`.
    pub(crate) fn map_fed(self, edit: impl FnOnce(String) -> String) -> HookOutput {
        match self {
            HookOutput::Feed {
                hook,
                text,
                system_message,
            } => HookOutput::Feed {
                hook,
                text: edit(text),
                system_message,
            },
            HookOutput::Block {
                reason,
                system_message,
            } => HookOutput::Block {
                reason: edit(reason),
                system_message,
            },
            other => other,
        }
    }

    /// The JSON object it prints, a feed in `form` (the tests read it so).
    #[cfg(test)]
    fn to_json_as(&self, form: FeedForm) -> Option<serde_json::Value> {
        self.line(form)
            .map(|line| serde_json::to_value(line).unwrap_or_default())
    }

    /// The answer as the fields of its JSON line (in the order Claude Code
    /// documents them), a feed in `form`, borrowed: printing it copies no text.
    fn line(&self, form: FeedForm) -> Option<Line<'_>> {
        match self {
            HookOutput::Feed {
                hook,
                text,
                system_message,
            } => Some(match form {
                FeedForm::Block => Line {
                    decision: Some("block"),
                    reason: Some(text),
                    system_message: system_message.as_deref(),
                    specific: None,
                },
                FeedForm::Context => Line {
                    decision: None,
                    reason: None,
                    system_message: system_message.as_deref(),
                    specific: Some(Specific {
                        event: hook.event(),
                        context: text,
                    }),
                },
            }),
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
    pub(crate) fn with_message_line(self, line: &str) -> HookOutput {
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
            HookOutput::Feed {
                hook,
                text,
                system_message,
            } => HookOutput::Feed {
                hook,
                text,
                system_message: Some(join(system_message.unwrap_or_default())),
            },
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
        if let Some(line) = self.line(FeedForm::of_this_client()) {
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
        assert_eq!(HookOutput::Nothing.to_json_as(FeedForm::Context), None);
        assert_eq!(
            HookOutput::allow("m")
                .to_json_as(FeedForm::Block)
                .unwrap()
                .to_string(),
            r#"{"systemMessage":"m"}"#
        );
        assert_eq!(
            HookOutput::block("r")
                .to_json_as(FeedForm::Block)
                .unwrap()
                .to_string(),
            r#"{"decision":"block","reason":"r"}"#
        );
        let both = HookOutput::Block {
            reason: "r".into(),
            system_message: Some("m".into()),
        };
        assert_eq!(
            both.to_json_as(FeedForm::Block).unwrap().to_string(),
            r#"{"decision":"block","reason":"r","systemMessage":"m"}"#
        );
    }

    #[test]
    fn a_feed_in_either_form() {
        let feed = HookOutput::stop_feed("the prompt".into(), "🔄 iteration 2".into());
        assert_eq!(
            feed.to_json_as(FeedForm::Context).unwrap().to_string(),
            r#"{"hookSpecificOutput":{"additionalContext":"the prompt","hookEventName":"Stop"},"systemMessage":"🔄 iteration 2"}"#
        );
        assert_eq!(
            feed.to_json_as(FeedForm::Block).unwrap().to_string(),
            r#"{"decision":"block","reason":"the prompt","systemMessage":"🔄 iteration 2"}"#
        );
        let worker = HookOutput::Feed {
            hook: FeedHook::SubagentStop,
            text: "t".into(),
            system_message: None,
        };
        assert_eq!(
            worker.to_json_as(FeedForm::Context).unwrap().to_string(),
            r#"{"hookSpecificOutput":{"additionalContext":"t","hookEventName":"SubagentStop"}}"#
        );
        let edited = feed.map_fed(|t| format!("first\n\n{t}"));
        assert_eq!(edited.fed_text(), Some("first\n\nthe prompt"));
        assert_eq!(HookOutput::allow("m").fed_text(), None);
    }

    #[test]
    fn the_form_follows_the_clients_version() {
        let form = |a: &str| FeedForm::for_agent(Some(a));
        assert_eq!(form("claude-code_2-1-328_harness"), FeedForm::Context);
        assert_eq!(form("claude-code_2-1-332_harness"), FeedForm::Context);
        assert_eq!(form("claude-code_2-2-0_agent"), FeedForm::Context);
        assert_eq!(form("claude-code_3-0-1_harness"), FeedForm::Context);
        assert_eq!(form("claude-code_2.1.330_harness"), FeedForm::Context);
        assert_eq!(form("claude-code_2-1-327_harness"), FeedForm::Block);
        assert_eq!(form("claude-code_2-0-99_harness"), FeedForm::Block);
        for unknown in [
            "",
            "claude-code",
            "claude-code_2-1_harness",
            "cursor_1-0-0",
            "claude-code_2-1-x_harness",
        ] {
            assert_eq!(form(unknown), FeedForm::Block, "{unknown}");
        }
        assert_eq!(FeedForm::for_agent(None), FeedForm::Block);
    }

    #[test]
    fn session_start_context() {
        let out = HookOutput::Context {
            event: "SessionStart",
            context: "c".into(),
            system_message: None,
        };
        assert_eq!(
            out.to_json_as(FeedForm::Block).unwrap().to_string(),
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
            block.to_json_as(FeedForm::Block).unwrap().to_string(),
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
