//! The no-progress breaker's judgement of one turn: did it change the
//! working tree? Pure; the Stop hook supplies the transcript's last turn and,
//! only when this module cannot tell, a git fingerprint.
//!
//! The agent's tools are the only thing changing the tree during a turn. A
//! turn that called a file-writing tool made progress; a turn that called no
//! tool, or only tools that read, cannot have changed anything; anything else
//! (Bash, an unknown tool, no transcript) needs a look at the tree (git,
//! 2 to 10 ms, measured), and only then is git asked.

use crate::transcript::Turn;

/// Tools whose call changes files.
pub const WRITING_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];
/// Tools that only read or talk: a turn using nothing else changes no file.
pub const READING_TOOLS: [&str; 9] = [
    "Read",
    "Grep",
    "Glob",
    "LS",
    "NotebookRead",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "ToolSearch",
];

/// What a turn did to the working tree, as far as its transcript shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEffect {
    /// It called a file-writing tool.
    Edited,
    /// It called no tool, or only reading ones.
    Unchanged,
    /// Bash, an unknown tool, or a transcript that cannot be trusted: look at the tree.
    Unknown,
}

/// Judge the last turn. The transcript is trusted only when its last text is
/// the `last_assistant_message` the client sent (the transcript can lag
/// behind the Stop); without that message, only when the turn's start was found.
pub fn turn_effect(turn: Option<&Turn>, last_message: Option<&str>) -> TurnEffect {
    let Some(turn) = turn else {
        return TurnEffect::Unknown;
    };
    let fresh = match last_message {
        Some(last) => turn
            .last_text
            .as_deref()
            .is_some_and(|t| t.trim() == last.trim()),
        None => turn.complete,
    };
    if !fresh {
        return TurnEffect::Unknown;
    }
    let tools = || turn.tools.iter().map(String::as_str);
    if tools().any(|t| WRITING_TOOLS.contains(&t)) {
        TurnEffect::Edited
    } else if tools().all(|t| READING_TOOLS.contains(&t)) {
        TurnEffect::Unchanged
    } else {
        TurnEffect::Unknown
    }
}

/// Unchanged turns in a row, this one included. `now` and `before` are the
/// tree fingerprints, used only for an `Unknown` turn.
pub fn stalls_after(
    effect: TurnEffect,
    stalls: u32,
    now: Option<&str>,
    before: Option<&str>,
) -> u32 {
    match effect {
        TurnEffect::Edited => 0,
        TurnEffect::Unchanged => stalls.saturating_add(1),
        TurnEffect::Unknown => match (now, before) {
            (Some(n), Some(b)) if n == b => stalls.saturating_add(1),
            _ => 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(tools: &[&str], last_text: &str) -> Turn {
        Turn {
            text: Some(last_text.into()),
            last_text: Some(last_text.into()),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            complete: true,
            queue: Vec::new(),
        }
    }

    #[test]
    fn tools_decide_when_the_transcript_is_fresh() {
        let said = Some("done");
        assert_eq!(
            turn_effect(Some(&turn(&["Read", "Edit"], "done")), said),
            TurnEffect::Edited
        );
        assert_eq!(
            turn_effect(Some(&turn(&[], "done")), said),
            TurnEffect::Unchanged
        );
        assert_eq!(
            turn_effect(Some(&turn(&["Read", "Grep"], "done")), said),
            TurnEffect::Unchanged
        );
        assert_eq!(
            turn_effect(Some(&turn(&["Bash"], "done")), said),
            TurnEffect::Unknown
        );
        assert_eq!(
            turn_effect(Some(&turn(&["Task"], "done")), said),
            TurnEffect::Unknown
        );
    }

    #[test]
    fn a_lagging_or_missing_transcript_means_look_at_the_tree() {
        // The transcript still ends on the previous turn's words.
        assert_eq!(
            turn_effect(Some(&turn(&[], "older words")), Some("done")),
            TurnEffect::Unknown
        );
        assert_eq!(turn_effect(None, Some("done")), TurnEffect::Unknown);
        let mut partial = turn(&[], "x");
        partial.complete = false;
        assert_eq!(turn_effect(Some(&partial), None), TurnEffect::Unknown);
    }

    #[test]
    fn stall_counting() {
        assert_eq!(stalls_after(TurnEffect::Edited, 5, None, None), 0);
        assert_eq!(stalls_after(TurnEffect::Unchanged, 1, None, None), 2);
        assert_eq!(
            stalls_after(TurnEffect::Unknown, 1, Some("a"), Some("a")),
            2
        );
        assert_eq!(
            stalls_after(TurnEffect::Unknown, 1, Some("a"), Some("b")),
            0
        );
        assert_eq!(stalls_after(TurnEffect::Unknown, 1, None, Some("b")), 0);
    }
}
