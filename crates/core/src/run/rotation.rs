//! Context rotation: when one iteration's context grows past `--rotate-at`,
//! the agent is asked to write its hand-off and end its turn; past
//! `--rotate-hard` the client is stopped. The next iteration starts a fresh
//! session with the hand-off.
//!
//! The request reaches the running client as a user message on its stdin
//! (`--input-format stream-json`). Measured on 2.1.328: written while the
//! turn runs tools, it is delivered with the next tool result ("The user sent
//! a new message while you were working: ..."); written during a turn that
//! makes no more tool calls, it becomes the next turn of the same session.
//! Either way the agent gets it before the client exits.
//! Pure.

use super::handoff::HANDOFF_FILE;
use super::tokens::human;

/// Default `--rotate-at`: 120k tokens. Models work best well inside their
/// window (200k for most Claude models), the hand-off turn still needs room,
/// and the client's own auto-compaction (near the end of the window)
/// summarises the context in ways a loop cannot see.
pub(crate) const DEFAULT_ROTATE_AT: u64 = 120_000;
/// Default `--rotate-hard`: 160k, below the point where the client compacts
/// by itself in a 200k window, and 40k above the soft threshold so a hand-off
/// turn fits between the two.
pub(crate) const DEFAULT_ROTATE_HARD: u64 = 160_000;

/// The thresholds; 0 turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub soft: u64,
    pub hard: u64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            soft: DEFAULT_ROTATE_AT,
            hard: DEFAULT_ROTATE_HARD,
        }
    }
}

impl Thresholds {
    /// Both given thresholds must leave room for the hand-off turn.
    pub fn validate(&self) -> Result<(), String> {
        if self.soft > 0 && self.hard > 0 && self.hard <= self.soft {
            return Err(format!(
                "--rotate-hard ({}) must be above --rotate-at ({}), or 0 (off)",
                self.hard, self.soft
            ));
        }
        Ok(())
    }
}

/// What to do about the context a request just carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    Nothing,
    /// Ask the agent for its hand-off (once per iteration).
    AskHandoff,
    /// Stop the client now.
    Stop,
}

/// Judge the context of the latest request; `asked` is whether this
/// iteration was already asked for its hand-off.
pub fn check(t: Thresholds, context: u64, asked: bool) -> Rotation {
    if t.hard > 0 && context >= t.hard {
        Rotation::Stop
    } else if t.soft > 0 && context >= t.soft && !asked {
        Rotation::AskHandoff
    } else {
        Rotation::Nothing
    }
}

/// What the agent is told when its context passes the soft threshold.
pub fn handoff_request(context: u64, t: Thresholds) -> String {
    format!(
        "ralph run: this session's context has reached {} tokens (rotation at {}). Finish the step you are on, then write your hand-off to {HANDOFF_FILE} (with a Bash command such as `cat > {HANDOFF_FILE} <<'EOF'`: the client asks approval for its file tools in `.claude/`): what you did, what is left, the files and commands that matter, and anything the next session must know. Then end your turn. The next iteration starts a fresh session that reads that file. Print the completion promise only if the whole task is really complete.",
        human(context),
        human(t.soft)
    )
}

/// A user message as one line of `--input-format stream-json`.
pub fn user_message_line(text: &str) -> String {
    serde_json::json!({"type": "user", "message": {"role": "user", "content": text}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        let t = Thresholds {
            soft: 100,
            hard: 150,
        };
        assert_eq!(check(t, 99, false), Rotation::Nothing);
        assert_eq!(check(t, 100, false), Rotation::AskHandoff);
        assert_eq!(check(t, 120, true), Rotation::Nothing);
        assert_eq!(check(t, 150, true), Rotation::Stop);
        assert_eq!(check(t, 150, false), Rotation::Stop);
        let off = Thresholds { soft: 0, hard: 0 };
        assert_eq!(check(off, u64::MAX, false), Rotation::Nothing);
        assert!(t.validate().is_ok());
        assert!(Thresholds { soft: 10, hard: 10 }.validate().is_err());
        assert!(Thresholds { soft: 10, hard: 0 }.validate().is_ok());
        assert!(Thresholds::default().validate().is_ok());
    }

    #[test]
    fn the_request_names_the_file_and_the_line_is_stream_json() {
        let text = handoff_request(130_000, Thresholds::default());
        assert!(text.contains(".claude/ralph-handoff.md"), "{text}");
        assert!(text.contains("130k tokens (rotation at 120k)"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&user_message_line("a\nb")).unwrap();
        assert_eq!(v["message"]["content"], "a\nb");
        assert_eq!(v["type"], "user");
    }
}
