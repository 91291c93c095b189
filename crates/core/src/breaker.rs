//! The no-progress breaker's judgement of one turn: did it change the
//! working tree? Pure; the Stop hook supplies the tools the guard recorded
//! for the turn (`turn_tools`), the transcript's last turn and, only when
//! these cannot tell, a git fingerprint.
//!
//! The agent's tools are the only thing changing the tree during a turn. A
//! turn that called a file-writing tool made progress; a turn that called no
//! tool, or only tools that read, cannot have changed anything; anything else
//! (Bash, an unknown tool, no evidence) needs a look at the tree (git,
//! 2 to 10 ms, measured), and only then is git asked.
//!
//! The guard's record comes first: it is complete when the Stop runs, while
//! the transcript can lag behind it (a talk-only turn whose transcript still
//! showed the previous turn's Write was once counted as progress).

use crate::transcript::Turn;

/// Tools whose call changes files.
pub(crate) const WRITING_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];
/// The tools the guard runs before, and so records.
pub(crate) const GUARDED_TOOLS: [&str; 5] = ["Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"];
/// Tools that only read or talk: a turn using nothing else changes no file.
pub(crate) const READING_TOOLS: [&str; 9] = [
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

/// Judge the last turn, from the guard's record of its tools when there is
/// one (`recorded`), else from the transcript.
///
/// With a record: an edit is progress, a Bash call asks the tree, and no
/// guarded call is a stall, unless the transcript (when fresh) shows a tool
/// the guard does not see that may write (an MCP tool, say): then the tree.
/// The transcript is trusted only when its last text is the
/// `last_assistant_message` the client sent; without that message, only when
/// the turn's start was found.
pub(crate) fn turn_effect(
    recorded: Option<&[String]>,
    turn: Option<&Turn>,
    last_message: Option<&str>,
) -> TurnEffect {
    let fresh = turn.filter(|t| is_fresh(t, last_message));
    let Some(recorded) = recorded else {
        return fresh.map_or(TurnEffect::Unknown, |t| by_tools(&t.tools));
    };
    match by_tools(recorded) {
        TurnEffect::Unchanged => {
            let unseen = fresh.into_iter().flat_map(|t| &t.tools);
            let unseen: Vec<String> = unseen
                .filter(|t| !GUARDED_TOOLS.contains(&t.as_str()))
                .cloned()
                .collect();
            by_tools(&unseen)
        }
        effect => effect,
    }
}

fn is_fresh(turn: &Turn, last_message: Option<&str>) -> bool {
    match last_message {
        Some(last) => turn
            .last_text
            .as_deref()
            .is_some_and(|t| t.trim() == last.trim()),
        None => turn.complete,
    }
}

fn by_tools(tools: &[String]) -> TurnEffect {
    let tools = || tools.iter().map(String::as_str);
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
pub(crate) fn stalls_after(
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
            ..Turn::default()
        }
    }

    #[test]
    fn tools_decide_when_the_transcript_is_fresh() {
        let said = Some("done");
        assert_eq!(
            turn_effect(None, Some(&turn(&["Read", "Edit"], "done")), said),
            TurnEffect::Edited
        );
        assert_eq!(
            turn_effect(None, Some(&turn(&[], "done")), said),
            TurnEffect::Unchanged
        );
        assert_eq!(
            turn_effect(None, Some(&turn(&["Read", "Grep"], "done")), said),
            TurnEffect::Unchanged
        );
        assert_eq!(
            turn_effect(None, Some(&turn(&["Bash"], "done")), said),
            TurnEffect::Unknown
        );
        assert_eq!(
            turn_effect(None, Some(&turn(&["Task"], "done")), said),
            TurnEffect::Unknown
        );
    }

    #[test]
    fn a_lagging_or_missing_transcript_means_look_at_the_tree() {
        // The transcript still ends on the previous turn's words.
        assert_eq!(
            turn_effect(None, Some(&turn(&[], "older words")), Some("done")),
            TurnEffect::Unknown
        );
        assert_eq!(turn_effect(None, None, Some("done")), TurnEffect::Unknown);
        let mut partial = turn(&[], "x");
        partial.complete = false;
        assert_eq!(turn_effect(None, Some(&partial), None), TurnEffect::Unknown);
    }

    #[test]
    fn the_guards_record_decides_whatever_the_transcript_shows() {
        let rec = |tools: &[&str]| tools.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let lagging = turn(&["Write"], "older words");
        let said = Some("now");
        // A talk-only turn whose transcript still shows the previous Write.
        assert_eq!(
            turn_effect(Some(&rec(&[])), Some(&lagging), said),
            TurnEffect::Unchanged
        );
        assert_eq!(
            turn_effect(Some(&rec(&["Edit"])), None, said),
            TurnEffect::Edited
        );
        assert_eq!(
            turn_effect(Some(&rec(&["Bash"])), None, said),
            TurnEffect::Unknown
        );
        // A fresh transcript adds the tools the guard does not see.
        let mcp = turn(&["Read", "mcp__db__write"], "now");
        assert_eq!(
            turn_effect(Some(&rec(&[])), Some(&mcp), said),
            TurnEffect::Unknown
        );
        let reads = turn(&["Read", "Bash"], "now");
        assert_eq!(
            turn_effect(Some(&rec(&[])), Some(&reads), said),
            TurnEffect::Unchanged,
            "a Bash call in the transcript that the guard did not record was denied"
        );
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
