//! The help: `/ralph-help` (and `/ralph-loop --help`), `ralph start --help`
//! and the options part of `ralph run --help`, all from the one table of
//! options (`args::options`). Pure.

use crate::args::options::{self, DURATION_RULE, ZERO_RULE};

/// What a loop is, in one paragraph.
const WHAT: &str = "A Ralph loop: each time Claude tries to end its turn, the Stop hook feeds the task back (the same prompt, or the PRD's next story) until the completion promise is printed and true, every PRD story passes, or a cap or budget stops it.";

/// The options' rules, stated once.
fn rules() -> String {
    format!(
        "{DURATION_RULE} {ZERO_RULE}\n`--review` takes a list only as `--review=LIST`, or when nothing but options follows it; `-h` is help only alone."
    )
}

/// The options of a loop start (`run`: with `ralph run`'s own), aligned.
fn option_lines(run: bool) -> String {
    let mut lines = options::help_lines(run);
    let width = options::of(run).map(|o| o.usage().len()).max().unwrap_or(0) + 2;
    let end = if run {
        "the client's flags follow it (e.g. -- --model sonnet)"
    } else {
        "everything after it is prompt text"
    };
    lines.push_str(&format!("  {:width$}{end}\n", "--"));
    lines.push_str(&format!("  {:width$}this help\n", "--help"));
    lines
}

/// `/ralph-help`: the reference, for the user in Claude Code.
pub fn help_text() -> String {
    format!(
        "Usage: /ralph-loop PROMPT... [OPTIONS]   (in a terminal: ralph start, or ralph run for a headless loop)\n\n{WHAT}\n\nOptions:\n{}\n{}\n\n{}",
        option_lines(false),
        rules(),
        WHILE_IT_RUNS
    )
}

/// `ralph start --help` (`run`: `ralph run --help`'s usage and options).
pub fn terminal_help(run: bool) -> String {
    let usage = if run {
        "ralph run PROMPT... [OPTIONS] [-- CLIENT FLAGS]"
    } else {
        "ralph start PROMPT... [OPTIONS]   (the next Claude Code session that stops here takes the loop)"
    };
    format!(
        "Usage: {usage}\n\n{WHAT}\n\nOptions (as for /ralph-loop{}):\n{}\n{}",
        if run { ", then ralph run's own" } else { "" },
        option_lines(run),
        rules()
    )
}

/// What the user can do while a loop runs, and where its files are.
const WHILE_IT_RUNS: &str = "While a loop runs: /ralph-status shows it, /cancel-ralph ends it at the next stop, anything else you type reaches Claude at the next stop; Esc interrupts at once. In a terminal: ralph status, ralph cancel.
A blocker (.ralph-blocker.md naming a failing story) pauses the loop; /ralph-resume goes on once you have resolved it.
The loop's state is kept outside the project; .claude/ralph-loop.local.md is a copy (ralph puts it back if changed): cancel with /cancel-ralph.
/ralph-prd writes a prd.json; /ralph-statusline puts the loop in the status line (/ralph-statusline off takes it out).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_option_and_the_rules() {
        let help = help_text();
        for o in options::of(false) {
            assert!(help.contains(&format!("  {}", o.usage())), "{}", o.name);
        }
        assert!(!help.contains("--max-wait"), "a run option in /ralph-help");
        assert!(help.contains("0 turns a cap off") && help.contains("90s, 10m, 2h"));
        assert!(help.contains("pauses the loop"));
        let run = terminal_help(true);
        assert!(run.contains("--max-wait DURATION") && run.contains("--fresh"));
    }
}
