//! The hand-off between iterations: `.claude/ralph-handoff.md`, written by
//! the agent (its working set: what it did, what is left), with a section the
//! runner rewrites after every iteration (last commit, current story, last
//! check). Every next iteration's prompt carries it.
//! Pure.

/// The hand-off file, relative to the project root.
pub const HANDOFF_FILE: &str = ".claude/ralph-handoff.md";

/// The line that starts the runner's section; everything from it on is the
/// runner's and is rewritten, everything above it is the agent's.
pub(crate) const RUNNER_MARK: &str =
    "<!-- ralph run: the section below is rewritten by the runner after every iteration -->";

/// What the runner knows after an iteration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunnerNotes {
    pub run_id: String,
    /// The iteration that just ended.
    pub iteration: u64,
    /// `git log -1 --format='%h %s'`.
    pub last_commit: Option<String>,
    /// The story the loop feeds next, with PRD progress.
    pub story: Option<String>,
    /// The latest check result, in one line.
    pub last_check: Option<String>,
    /// Why this iteration was rotated, when it was.
    pub rotated: Option<String>,
}

/// The agent's part of a hand-off file (without the runner's section).
pub(crate) fn agent_part(text: &str) -> &str {
    match text.find(RUNNER_MARK) {
        Some(i) => text[..i].trim_end(),
        None => text.trim_end(),
    }
}

/// The hand-off file with the runner's section replaced by `notes`.
pub fn with_runner_notes(existing: Option<&str>, notes: &RunnerNotes) -> String {
    let agent = existing.map(agent_part).unwrap_or("");
    let mut out = String::new();
    if !agent.is_empty() {
        out.push_str(agent);
        out.push_str("\n\n");
    }
    out.push_str(RUNNER_MARK);
    out.push_str(&format!(
        "\n## State after iteration {} (ralph run {})\n",
        notes.iteration, notes.run_id
    ));
    let mut line = |label: &str, value: Option<&String>| {
        if let Some(v) = value {
            out.push_str(&format!("- {label}: {v}\n"));
        }
    };
    line("last commit", notes.last_commit.as_ref());
    line("current story", notes.story.as_ref());
    line("last check", notes.last_check.as_ref());
    line("rotated", notes.rotated.as_ref());
    out
}

/// An iteration's prompt: the loop's prompt (the task or the Stop hook's
/// next prompt), the hand-off when there is one, and how the runner works.
pub fn prompt(base: &str, handoff: Option<&str>) -> String {
    let mut out = base.trim_end().to_string();
    if let Some(h) = handoff.map(str::trim).filter(|h| !h.is_empty()) {
        out.push_str(&format!(
            "\n\n---\nHand-off from the previous iterations ({HANDOFF_FILE}):\n\n{h}\n---"
        ));
    }
    out.push_str(&format!(
        "\n\n[ralph run: each iteration is a fresh session; what earlier iterations did is in the files and in {HANDOFF_FILE}. Before you end a turn with work left, update that file for the next session (with a Bash command: the client asks approval for its file tools in `.claude/`).]"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes() -> RunnerNotes {
        RunnerNotes {
            run_id: "r1".into(),
            iteration: 2,
            last_commit: Some("abc123 Add parser".into()),
            story: Some("US-2 Parser (1/3 stories pass)".into()),
            last_check: None,
            rotated: Some("context reached 130k tokens".into()),
        }
    }

    #[test]
    fn the_runner_section_is_replaced_and_the_agent_part_kept() {
        let first = with_runner_notes(Some("# Notes\nNext: wire the CLI.\n"), &notes());
        assert!(first.starts_with("# Notes\nNext: wire the CLI.\n\n<!-- ralph run"));
        assert!(first.contains("- last commit: abc123 Add parser\n"));
        assert!(first.contains("- rotated: context reached 130k tokens\n"));
        assert!(!first.contains("last check"));
        let mut later = notes();
        later.iteration = 3;
        later.rotated = None;
        let second = with_runner_notes(Some(&first), &later);
        assert_eq!(second.matches(RUNNER_MARK).count(), 1);
        assert!(second.contains("after iteration 3"));
        assert!(!second.contains("rotated"));
        assert!(second.starts_with("# Notes\nNext: wire the CLI.\n\n"));
        // No agent part: only the runner's.
        assert!(with_runner_notes(None, &notes()).starts_with(RUNNER_MARK));
    }

    #[test]
    fn prompts_carry_the_handoff() {
        let p = prompt("Do the task.\n", Some("# Notes\nhalf done\n"));
        assert!(p.starts_with("Do the task.\n\n---\nHand-off from the previous iterations"));
        assert!(p.contains("# Notes\nhalf done\n---"));
        let bare = prompt("Do the task.", Some("  \n"));
        assert!(!bare.contains("Hand-off from"));
        assert!(bare.contains("[ralph run: each iteration is a fresh session"));
    }
}
