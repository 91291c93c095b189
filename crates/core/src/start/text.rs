//! Every word a start and `show` say, to the user and to the model's first
//! turn. Pure.

use super::FullGate;
use super::rules::Prior;
use crate::blocker::Blocker;
use crate::budget::{Budgets, PRICES_DATE};
use crate::fmt::{duration, one_line, plural, short_session};
use crate::paths::STATE_FILE;
use crate::prd::Prd;
use crate::run::units::human_duration;
use crate::state::{DEFAULT_PRD_PROMPT, LoopState};
use crate::stop::text::story_prompt;
use std::path::Path;
use std::time::Duration;

/// What a start tells the user: where and for whom it started, what it
/// replaced, warnings, and the settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StartReport<'a> {
    pub root: &'a Path,
    pub session: &'a str,
    pub state: &'a LoopState,
    pub prd: Option<&'a Prd>,
    pub prior: &'a Prior,
    /// The policy's gate, when it gave the `verify` command.
    pub gate: Option<&'a FullGate>,
    pub blocker: Option<&'a Blocker>,
    /// The configuration files changed since the last loop, one line each
    /// (`config_seen`).
    pub config: &'a [String],
}

impl StartReport<'_> {
    pub(crate) fn summary(&self) -> String {
        let state = self.state;
        let for_session = match self.session {
            "" => String::new(),
            s => format!(" for session {}", short_session(s)),
        };
        let mut lines = vec![format!(
            "🔄 Ralph loop started{for_session} in {}.",
            self.root.display()
        )];
        lines.extend(prior_note(self.prior));
        if let Some(gate) = self.gate {
            lines.push(format!(
                "Verification command taken from the [gates] full row of {}.",
                gate.file
            ));
        }
        lines.extend(warnings(state));
        lines.extend(self.config.iter().cloned());
        if let Some(b) = self.blocker {
            lines.push(format!(
                "⚠️ .ralph-blocker.md is present (story {}): the loop halts at its first stop unless that story passes or you delete the file.",
                if b.story_id.is_empty() { "?" } else { &b.story_id }
            ));
        }
        if state.prompt != DEFAULT_PRD_PROMPT {
            lines.push(format!("Prompt: {}", prompt_preview(&state.prompt)));
        }
        let mut out = lines.join("\n") + "\n";
        out.push_str(&settings(state, self.prd));
        out
    }
}

/// What a start did to the loop that was there before, if anything.
pub(crate) fn prior_note(prior: &Prior) -> Option<String> {
    Some(match prior {
        Prior::Fresh => return None,
        Prior::ReplacedOwn { iteration } => {
            format!("Replaced this session's running loop (it was at iteration {iteration}).")
        }
        Prior::ReplacedStale { session, age_secs } => format!(
            "Replaced a stale loop of session {} (no decision for {}).",
            short_session(session),
            duration(*age_secs)
        ),
        Prior::ReplacedOther { session } => format!(
            "Replaced the running loop of session {} (--replace).",
            short_session(session)
        ),
        Prior::ReplacedUnclaimed { iteration } => {
            format!("Replaced a loop no session had claimed yet (iteration {iteration}).")
        }
        Prior::ReplacedCorrupt(kept) => {
            format!("The old state file did not parse; it was kept as {kept}.")
        }
    })
}

/// Warnings to print with a start (e.g. a loop with no way to end but
/// cancel). A budget bounds a loop as a cap does.
pub(crate) fn warnings(state: &LoopState) -> Vec<String> {
    let mut out = Vec::new();
    if state.max_iterations == 0 && !state.budgets.any() {
        let budget =
            " Or give it a budget: --max-tokens 2000000, --max-runtime 4h or --max-cost 25.";
        out.push(match &state.completion_promise {
            Some(_) => format!("⚠️ No iteration cap (--max-iterations 0): only the promise or /cancel-ralph ends this loop. Consider --max-iterations 30.{budget}"),
            None => format!("⚠️ No iteration cap and no completion promise: this loop runs until you type /cancel-ralph. Consider --max-iterations 30.{budget}"),
        });
    }
    out
}

/// The loop's budgets, one line ("" when it has none): what the user is
/// shown at start, and the model is reminded of.
pub(crate) fn budget_line(b: &Budgets) -> String {
    let mut parts = Vec::new();
    if let Some(n) = b.max_tokens {
        parts.push(format!("{n} tokens (--max-tokens)"));
    }
    if let Some(secs) = b.max_runtime_secs {
        parts.push(format!(
            "{} of wall time (--max-runtime)",
            human_duration(Duration::from_secs(secs))
        ));
    }
    if let Some(usd) = b.max_cost {
        let model = b.model.as_deref().unwrap_or("?");
        parts.push(format!(
            "{usd} (--max-cost, at {model}'s prices as of {PRICES_DATE})"
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("Budget: the loop stops after {}.\n", parts.join(", "))
    }
}

/// What the loop will do, for the user and for the model's first turn.
pub fn describe(state: &LoopState, prd: Option<&Prd>, root: &std::path::Path) -> String {
    settings(state, prd) + &task(state, prd, root)
}

/// The prompt in one line of at most 160 characters, for the user's summary.
pub(crate) fn prompt_preview(prompt: &str) -> String {
    one_line(prompt, 160)
}

/// The loop's settings: cap, promise, PRD progress (what the user is shown at start).
pub(crate) fn settings(state: &LoopState, prd: Option<&Prd>) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Iterations: {}\n",
        if state.max_iterations == 0 {
            "no cap".to_string()
        } else {
            format!("at most {}", state.max_iterations)
        }
    ));
    match &state.completion_promise {
        Some(p) if prd.is_some() => out.push_str(&format!(
            "Completion: the loop ends by itself when every story passes; <promise>{p}</promise> is refused while any story fails.\n"
        )),
        Some(p) => out.push_str(&format!(
            "Completion promise: print <promise>{p}</promise> only when that statement is completely and unequivocally true; never to escape the loop.\n"
        )),
        None => out.push_str("Completion promise: none (the loop ends at its cap or on /cancel-ralph).\n"),
    }
    if let Some(v) = &state.verify {
        out.push_str(&format!(
            "Verification: `{v}` must exit 0 (within {} s) before the loop counts as complete.\n",
            state.verify_timeout
        ));
    }
    out.push_str(&budget_line(&state.budgets));
    out.push_str(sandbox_line(state.sandbox));
    let review = &state.review;
    if review.is_on() {
        let by = match &review.command {
            Some(cmd) => format!("`{cmd}`"),
            None => "fresh read-only `claude -p` sessions".to_string(),
        };
        out.push_str(&format!(
            "Review: when the work is claimed done and passes its checks, {} ({by}) review it; all must approve (at most {} rounds, {} s each).\n",
            review.reviewers.join(", "),
            review.max_rounds,
            review.timeout_secs
        ));
    }
    out.push_str(&measure_line(state, prd));
    out.push_str(&suite_line(state));
    if state.max_stalls > 0 {
        out.push_str(&format!(
            "No-progress breaker: the loop stops after {} in a row that leave the working tree unchanged (git repositories).\n",
            plural(u64::from(state.max_stalls), "iteration")
        ));
    }
    if state.parallel > 0 {
        out.push_str(&format!(
            "Parallel (--parallel {}): up to {} at once, each worked by a {} subagent in its own git worktree; a story counts once ralph has merged it into this branch and its check passes here. This thread only dispatches.\n",
            state.parallel,
            plural(u64::from(state.parallel), "story"),
            crate::parallel::WORKER_TYPE
        ));
    } else if state.fresh {
        out.push_str(&format!(
            "Fresh context (--fresh): each {} is worked by a {} subagent; this thread only dispatches and reads its report (its own writes are refused).\n",
            if prd.is_some() { "story" } else { "iteration" },
            crate::fresh::WORKER_TYPE
        ));
    }
    if let (Some(prd), Some(file)) = (prd, &state.prd_file) {
        let (pass, total) = prd.progress();
        out.push_str(&format!(
            "PRD: {file}: {}, {pass} passing.\n",
            plural(total as u64, "story")
        ));
        match prd.next_runnable() {
            Some(story) => out.push_str(&format!("First story: {} {}\n", story.id, story.title)),
            None => out.push_str("No story can run now (all pass, or dependencies block them).\n"),
        }
    }
    out
}

/// How the loop is measured at each iteration that changes the code, and
/// the plateau rule ("" without a measure).
fn measure_line(state: &LoopState, prd: Option<&Prd>) -> String {
    let by = match (&state.score, prd, &state.verify) {
        (Some(cmd), _, _) => format!("`{cmd}` (its tests' counts, else the last number it prints)"),
        (None, Some(p), _) if p.stories.iter().any(|s| s.verify.is_some()) => {
            "each story's check (its tests' counts where the runner prints them)".to_string()
        }
        (None, _, Some(v)) => format!("`{v}` (its tests' counts where the runner prints them)"),
        _ => return String::new(),
    };
    let rule = if state.max_plateau > 0 {
        format!(
            "; the loop stops after {} in a row that change the code without beating the best score (--max-plateau {}, 0 turns it off), and the best tree is kept as {}",
            plural(u64::from(state.max_plateau), "iteration"),
            state.max_plateau,
            crate::score::tree::BEST_REF
        )
    } else {
        String::new()
    };
    format!("Score: each iteration that changes the code is measured by {by}{rule}.\n")
}

/// The suite's baseline: each command that measures the loop run once on
/// the tree as it is now, in ralph's own worktree, while the first turn
/// goes on; what ralph adds to a runner it knows ("" without a measure).
pub(crate) fn suite_line(state: &LoopState) -> String {
    let mut commands: Vec<&String> = Vec::new();
    for c in state.score.iter().chain(&state.verify) {
        if !commands.contains(&c) {
            commands.push(c);
        }
    }
    if commands.is_empty() && state.story_checks.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = commands
        .iter()
        .map(|c| {
            let runs = crate::score::launch::shown(c);
            if runs == **c {
                format!("`{c}`")
            } else {
                format!("`{c}` (run as `{runs}`: the runner writes its report for ralph)")
            }
        })
        .collect();
    let what = if shown.is_empty() {
        "each story's check, at the story's first feed,".to_string()
    } else {
        shown.join(" and ")
    };
    format!(
        "Suite: {what} runs once on the tree as it is now, in ralph's own copy of it, while Claude works: the baseline. A claim is refused while a test from it, or one that passed since, is missing or newly skipped (you accept a removal with /ralph-accept ID).\n"
    )
}

/// Whether the agent's commands run in Claude Code's sandbox, as seen at
/// the start ("" when not known: a loop started from a terminal).
pub(crate) fn sandbox_line(sandbox: Option<bool>) -> &'static str {
    match sandbox {
        Some(true) => {
            "Sandbox: on. The agent's Bash commands run in Claude Code's sandbox: ralph's folder is out of their reach, and pinned files are put back before each check.\n"
        }
        Some(false) => {
            "Sandbox: off. The agent's commands run with your rights: ralph's guard reads each one, and a write it cannot see (an interpreter's) is caught afterwards and pauses the loop. Claude Code's sandbox would keep ralph's files out of the agent's reach: /sandbox in a session (ralph run uses it unless --no-sandbox).\n"
        }
        None => "",
    }
}

/// The task as the model starts on it: the prompt, or the first story's prompt.
pub(crate) fn task(state: &LoopState, prd: Option<&Prd>, root: &std::path::Path) -> String {
    let mut out = String::new();
    if let (Some(prd), Some(file), true) = (prd, &state.prd_file, state.parallel > 0) {
        let stories = crate::parallel::pick(prd, &[], state.parallel);
        if !stories.is_empty() {
            out.push('\n');
            out.push_str(&crate::parallel::dispatch(
                state.parallel,
                root,
                file,
                &stories,
                0,
                "",
            ));
            out.push('\n');
        }
    } else if let (Some(prd), Some(file)) = (prd, &state.prd_file) {
        let (pass, total) = prd.progress();
        if let Some(story) = prd.next_runnable() {
            let progress = format!("{pass}/{total} stories pass");
            let prompt = story_prompt(file, story, &progress, state, None);
            out.push('\n');
            if state.fresh {
                out.push_str(&crate::fresh::dispatch_story(
                    file,
                    &story.id,
                    &story.title,
                    "",
                ));
                out.push('\n');
            } else {
                out.push_str(&prompt);
            }
        }
    } else if state.fresh {
        out.push('\n');
        out.push_str(&crate::fresh::dispatch(&state.prompt, None));
        if !state.prompt.ends_with('\n') {
            out.push('\n');
        }
    } else {
        out.push_str("\nTask:\n");
        out.push_str(&state.prompt);
        if !state.prompt.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// What a session that may have lost track of its loop is told at its start
/// (after a compaction, a resume, or a `/clear` that handed it the loop):
/// that it is in a loop (`why`: what happened to the session, in words),
/// the iteration, the settings (how to finish, the cap, budgets, checks),
/// the rules, and the task or current story.
pub(crate) fn reminder(
    state: &LoopState,
    prd: Option<&Prd>,
    why: &str,
    root: &std::path::Path,
) -> String {
    format!(
        "[Ralph loop reminder: {why}.] You are working in a Ralph loop, at iteration {}. Each time you end your turn, the Stop hook gives you the task again, until it is really done.\n{}Rules: work on the task below; never edit, move or delete the loop's files (.claude/ralph-loop.*) or fake progress; print the completion promise only when it is completely true, never to leave the loop; the user ends the loop with /cancel-ralph.\n{}",
        state.iteration_label(state.iteration),
        settings(state, prd),
        task(state, prd, root).trim_start()
    )
}

/// `show` with a loop running: the loop, as the model should start on it.
pub(crate) fn show(state: &LoopState, prd: Option<&Prd>, root: &std::path::Path) -> String {
    format!(
        "A Ralph loop is active (iteration {}).\n{}",
        state.iteration_label(state.iteration),
        describe(state, prd, root)
    )
}

/// `show` with no loop: the start did not happen.
pub(crate) fn show_none(root: &Path) -> String {
    format!(
        "ralph: no loop is active in {}: the start did not happen (see the message above; is the ralph plugin's UserPromptSubmit hook enabled?). Tell the user and stop.\n",
        root.display()
    )
}

/// `show` with a state file that cannot be used.
pub(crate) fn show_corrupt(why: &dyn std::fmt::Display) -> String {
    format!("ralph: {STATE_FILE} is corrupt: {why}. Tell the user and stop.\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_command_line;
    use crate::start::rules::new_state;

    #[test]
    fn prd_loop_description() {
        let (s, prd) = crate::start::rules::tests::prd_loop();
        let text = describe(&s, Some(&prd), std::path::Path::new("/p"));
        assert!(text.contains("First story: A First"), "{text}");
        assert!(text.contains("at most 9"));
    }

    #[test]
    fn the_reminder_has_the_task_iteration_how_to_finish_and_the_rules() {
        let args =
            parse_command_line("Fix the parser --max-iterations 9 --completion-promise DONE")
                .unwrap();
        let mut s = new_state(&args, "Fix the parser".into(), None, None, "s", "t");
        s.iteration = 4;
        let text = reminder(
            &s,
            None,
            "the conversation was compacted",
            std::path::Path::new("/p"),
        );
        assert!(
            text.starts_with("[Ralph loop reminder: the conversation was compacted.]"),
            "{text}"
        );
        for part in [
            "at iteration 4/9",
            "print <promise>DONE</promise> only when",
            "Rules: ",
            "/cancel-ralph",
            "Task:\nFix the parser",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        let (prd_state, prd) = crate::start::rules::tests::prd_loop();
        let text = reminder(
            &prd_state,
            Some(&prd),
            "this session was resumed",
            std::path::Path::new("/p"),
        );
        assert!(text.contains("# Ralph loop: story A of prd.json"), "{text}");
    }

    #[test]
    fn preview_is_one_bounded_line() {
        assert_eq!(prompt_preview("a\n  b\tc"), "a b c");
        let long = "x".repeat(500);
        assert_eq!(prompt_preview(&long).chars().count(), 160);
    }

    #[test]
    fn unlimited_loops_warn_unless_a_budget_bounds_them() {
        let args = parse_command_line("x --max-iterations 0").unwrap();
        let mut s = new_state(&args, "x".into(), None, None, "", "t");
        let w = warnings(&s);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("Consider --max-iterations 30. Or give it a budget: --max-tokens"));
        s.budgets.max_runtime_secs = Some(14_400);
        assert!(warnings(&s).is_empty());
        assert_eq!(
            budget_line(&s.budgets),
            "Budget: the loop stops after 4 h 00 min of wall time (--max-runtime).\n"
        );
    }

    #[test]
    fn the_summary_says_where_and_what_it_replaced() {
        let args = parse_command_line("Fix it --max-iterations 3").unwrap();
        let s = new_state(&args, "Fix it".into(), None, None, "0123456789", "t");
        let prior = Prior::ReplacedStale {
            session: "abcdefghij".into(),
            age_secs: 2 * 86_400,
        };
        let report = StartReport {
            root: Path::new("/p"),
            session: "0123456789",
            state: &s,
            prd: None,
            prior: &prior,
            gate: None,
            blocker: None,
            config: &[],
        };
        let text = report.summary();
        assert!(
            text.starts_with("🔄 Ralph loop started for session 01234567 in /p.\nReplaced a stale loop of session abcdefgh (no decision for 2 days).\nPrompt: Fix it\nIterations: at most 3\n"),
            "{text}"
        );
    }
}
