//! The words of a feed: what the model is fed when the loop goes on (the
//! prompt, a story, a dispatch, a repair) and what the user is told with it.
//! Pure.

use super::{cx_rounds, prd_name, progress, quoted_title, refusal_report, refusal_status};
use crate::activity::Code;
use crate::fmt::plural;
use crate::prd::Story;
use crate::reinject::Injected;
use crate::review::ReviewVerdict;
use crate::state::{DEFAULT_PRD_PROMPT, LoopState};
use crate::stop::completion::Refusal;
use crate::stop::decide::{PrdProgress, StopContext, StopOutcome};
use crate::verify::CheckResult;

/// What the model is fed (`reason`) and what the user is told, when the loop goes on.
pub(super) fn feeding(cx: &StopContext, outcome: &StopOutcome) -> (String, String) {
    let state = cx.state;
    let label = state.iteration_label(state.iteration.saturating_add(1));
    let prd_name = prd_name(state);
    let footer = footer(state, None);
    match outcome {
        StopOutcome::Prompt {
            refused,
            mismatched_tag,
        } => prompt(state, *refused, *mismatched_tag),
        StopOutcome::PrdInvalid(why) => (
            format!(
                "Ralph loop: {prd_name} can no longer be read: {why}\n\nRestore {prd_name} to valid JSON with every story it had (keep every `id`), then continue with the next story whose `passes` is false.{footer}"
            ),
            format!(
                "⚠️ Ralph iteration {label}: {prd_name} is not readable ({why}); the agent was asked to repair it."
            ),
        ),
        StopOutcome::ReviewRejected(standing) => {
            let round = cx_rounds(cx);
            (
                format!(
                    "Ralph loop: the work was claimed complete and its checks pass, but independent review rejected it (round {round} of {}). Fix every finding below, then claim completion again; the reviewers look again at the changed tree.\n\n{}{footer}",
                    state.review.max_rounds,
                    standing.findings_text()
                ),
                format!(
                    "🔁 Ralph iteration {label}: review rejected the work (round {round} of {}, {} open)",
                    state.review.max_rounds,
                    plural(standing.open_findings() as u64, "finding")
                ),
            )
        }
        StopOutcome::FinalCheckFailed(refusal) => final_check_failed(state, refusal, &footer),
        StopOutcome::Deadlock(unmet) => {
            let waits: Vec<String> = unmet
                .iter()
                .filter(|(_, on)| !on.is_empty())
                .map(|(id, on)| format!("{id} waits on {}", on.join(", ")))
                .collect();
            let waits = waits.join("; ");
            (
                format!(
                    "Ralph loop: no failing story in {prd_name} can run, because of its dependencies: {waits}. They were changed during the loop (at start every `dependsOn` named a story in the file, without cycles). Restore them: every `dependsOn` must name a story of {prd_name} and no story may wait on itself through others. Then continue with the next story whose `passes` is false.{footer}"
                ),
                format!(
                    "⚠️ Ralph iteration {label}: no story in {prd_name} can run ({waits}); the agent was asked to repair the dependencies."
                ),
            )
        }
        StopOutcome::Vanished(standing) => (
            format!("Ralph loop: {}{footer}", preface(state, standing)),
            format!(
                "⚠️ Ralph iteration {label}: stories vanished from {prd_name}: {}; the agent was asked to restore them. ({})",
                standing.vanished.join(", "),
                progress(standing)
            ),
        ),
        StopOutcome::Story {
            story,
            standing,
            refused,
            review,
        } => story_feed(cx, outcome, story, standing, *refused, *review),
        StopOutcome::Dispatch { stories, standing } => dispatch_feed(cx, stories, standing),
        end => unreachable!("not a feed: {end:?}"),
    }
}

/// `--parallel`: stories out to workers at once. Short: every word stays in
/// the main thread's context; each worker reads its story itself.
fn dispatch_feed(cx: &StopContext, stories: &[&Story], standing: &PrdProgress) -> (String, String) {
    let state = cx.state;
    let label = state.iteration_label(state.iteration.saturating_add(1));
    let reason = crate::parallel::dispatch(
        state.parallel,
        cx.root,
        prd_name(state),
        stories,
        cx.in_flight.len(),
        &preface(state, standing),
    );
    let ids: Vec<&str> = stories.iter().map(|s| s.id.as_str()).collect();
    let running: Vec<&str> = cx.in_flight.iter().flatten().map(String::as_str).collect();
    let running = if running.is_empty() {
        String::new()
    } else {
        format!(" · in flight: {}", running.join(", "))
    };
    let message = format!(
        "🔄 Ralph iteration {label} · parallel: {} out{running} · {}",
        ids.join(", "),
        progress(standing)
    );
    (reason, message)
}

/// `--parallel`: the turn ends while workers run; where the stories stand.
pub(crate) fn waiting_for_workers(
    in_flight: &[Option<String>],
    board: &crate::parallel::Board,
    passing: &str,
) -> String {
    let running: Vec<&str> = in_flight
        .iter()
        .map(|s| s.as_deref().unwrap_or("?"))
        .collect();
    let mut out = format!(
        "⏳ Ralph: {} at work ({}){passing}",
        plural(running.len() as u64, "worker"),
        running.join(", ")
    );
    if !board.merged.is_empty() {
        out.push_str(&format!(" · merged: {}", board.merged.join(", ")));
    }
    if !board.sent_back.is_empty() {
        let back: Vec<String> = board
            .sent_back
            .iter()
            .map(|(s, n)| format!("{s} ({n}x)"))
            .collect();
        out.push_str(&format!(" · sent back: {}", back.join(", ")));
    }
    out
}

/// PRD mode: every story passes, but the loop's check (or its suite) does not.
fn final_check_failed(state: &LoopState, refusal: &Refusal, footer: &str) -> (String, String) {
    let label = state.iteration_label(state.iteration.saturating_add(1));
    let prd_name = prd_name(state);
    if !refusal.inventory.is_empty() {
        return (
            format!(
                "Ralph loop: every story in {prd_name} is marked as passing, but tests of the suite are gone. {}{footer}",
                refusal_report(state, refusal)
            ),
            format!(
                "🔁 Ralph iteration {label}: all stories claim to pass, but {}",
                refusal_status(state, refusal)
            ),
        );
    }
    (
        format!(
            "Ralph loop: every story in {prd_name} is marked as passing, but the loop's final check failed. {}\nFix what fails (reopen a story by setting its \"passes\" to false if it is not really done); the loop ends when the check passes.{footer}",
            refusal_report(state, refusal)
        ),
        format!(
            "🔁 Ralph iteration {label}: all stories claim to pass, but the final check failed ({})",
            refusal_status(state, refusal)
        ),
    )
}

/// Why a claim was refused, in a few words.
fn refusal_why(refusal: &Refusal) -> &'static str {
    if !refusal.inventory.is_empty() {
        "tests of the suite are gone"
    } else if !refusal.regressed.is_empty() {
        "a test that passed before fails now"
    } else {
        "the loop's check failed"
    }
}

/// Plain mode: the prompt again.
fn prompt(state: &LoopState, refused: Option<&Refusal>, mismatched_tag: bool) -> (String, String) {
    let label = state.iteration_label(state.iteration.saturating_add(1));
    // Trailing newlines are dropped so one blank line separates the footer.
    let mut reason = state.prompt.trim_end().to_string();
    let message = match refused {
        Some(refusal) => {
            let why = refusal_why(refusal);
            reason.push_str(&format!(
                "\n\nCompletion refused: you printed the promise, but {why}. {}\nFix it, then print the promise again.",
                refusal_report(state, refusal)
            ));
            format!(
                "🔁 Ralph iteration {label}: completion refused, {why} ({})",
                refusal_status(state, refusal)
            )
        }
        None => {
            if mismatched_tag {
                reason.push_str(&format!(
                    "\n\n(Ralph: your <promise> tag did not match the completion promise \"{}\", so the loop goes on.)",
                    state.completion_promise.as_deref().unwrap_or_default()
                ));
            }
            let hint = match &state.completion_promise {
                Some(p) => format!(" · ends on <promise>{p}</promise>"),
                None => String::new(),
            };
            format!("🔄 Ralph iteration {label}{hint}")
        }
    };
    reason.push_str(&footer(state, None));
    (reason, message)
}

/// PRD mode: the next story, with what the model must know first.
fn story_feed(
    cx: &StopContext,
    outcome: &StopOutcome,
    story: &Story,
    standing: &PrdProgress,
    refused: Option<&CheckResult>,
    review: Option<&ReviewVerdict>,
) -> (String, String) {
    let state = cx.state;
    let label = state.iteration_label(state.iteration.saturating_add(1));
    let progress = progress(standing);
    let mut preface = preface(state, standing);
    if let Some(check) = refused {
        preface.push_str(&format!(
            "Your claim that {} passes was refused: its check {}\nFix it; the story counts once its check passes.\n\n",
            story.id,
            check.failure_report(state.verify_timeout)
        ));
    }
    if let Some(verdict) = review {
        let standing = crate::review::Standing {
            verdicts: vec![(crate::review::story_key(&story.id), verdict.clone())],
        };
        preface.push_str(&format!(
            "Your claim that {} passes was not approved by its review:\n{}Fix every finding; the story counts once a reviewer approves it (it is reviewed again when you mark it passing on a changed tree).\n\n",
            story.id,
            standing.findings_text()
        ));
    }
    let prompt = story_prompt(prd_name(state), story, &progress, state, cx.last_injected);
    let reason = if state.fresh {
        format!(
            "{}{}",
            crate::fresh::dispatch_story(prd_name(state), &story.id, &story.title, &preface),
            footer(state, Some((&story.id, &progress)))
        )
    } else {
        format!(
            "{preface}{}{}",
            prompt.trim_end(),
            footer(state, Some((&story.id, &progress)))
        )
    };
    let mut message = format!(
        "🔄 Ralph iteration {label} · story {} {} · {progress}",
        story.id,
        quoted_title(story)
    );
    if outcome.code() == Code::PromiseRefused {
        message.push_str(" · early completion refused");
    }
    if let Some(check) = refused {
        message.push_str(&format!(
            " · its check failed ({})",
            check.status_text(state.verify_timeout)
        ));
    }
    if let Some(verdict) = review {
        message.push_str(&format!(
            " · its review rejected it ({} finding(s))",
            verdict.findings.len()
        ));
    }
    if !standing.vanished.is_empty() {
        message.push_str(&format!(" · vanished: {}", standing.vanished.join(", ")));
    }
    (reason, message)
}

/// What the model is told before a PRD feed: an early promise, vanished stories.
fn preface(state: &LoopState, standing: &PrdProgress) -> String {
    let prd_name = prd_name(state);
    let mut out = String::new();
    if let Some(failing) = &standing.early_promise {
        out.push_str(&format!(
            "Completion refused: you printed <promise>{}</promise>, but {} of {} stories in {prd_name} do not pass yet ({}). The loop ends by itself when every story has \"passes\": true.\n\n",
            state.completion_promise.as_deref().unwrap_or_default(),
            failing.len(),
            standing.total,
            failing.join(", ")
        ));
    }
    if !standing.vanished.is_empty() {
        out.push_str(&format!(
            "Stories removed from {prd_name} since the loop started count as not passing: {}. Put them back (with their ids) and finish them.\n\n",
            standing.vanished.join(", ")
        ));
    }
    out
}

/// The prompt that feeds one story (also shown when a PRD loop starts).
pub(crate) fn story_prompt(
    prd_name: &str,
    story: &Story,
    progress: &str,
    state: &LoopState,
    last: Option<&Injected>,
) -> String {
    let mut out = format!(
        "# Ralph loop: story {} of {prd_name}{}\n\nProgress: {progress}. Work on this one story only.\n",
        story.id,
        if story.title.is_empty() {
            String::new()
        } else {
            format!(": {}", story.title)
        },
    );
    let attempt = Injected::next(last, &story.id).count;
    if attempt > 1 {
        out.push_str(&format!(
            "\nThis is attempt {attempt} of {} at {}: it was fed before and still does not pass. Do not repeat the same approach: read progress.txt and the failing checks first. If something outside your control blocks the story, write .ralph-blocker.md with frontmatter `story_id: {}` and explain what is needed.\n",
            state.max_story_attempts, story.id, story.id
        ));
    }
    if !story.description.is_empty() {
        out.push_str(&format!("\n## Description\n{}\n", story.description));
    }
    if !story.acceptance_criteria.is_empty() {
        out.push_str("\n## Acceptance criteria\n");
        for c in &story.acceptance_criteria {
            out.push_str(&format!("- {c}\n"));
        }
    }
    if let Some(cmd) = &story.verify {
        out.push_str(&format!(
            "\n## Verification\nThe story counts only when `{cmd}` succeeds.\n"
        ));
    }
    if !story.notes.is_empty() {
        out.push_str(&format!("\n## Notes\n{}\n", story.notes));
    }
    out.push_str(&format!(
        "\n## When the story is done\n1. Check every acceptance criterion (run the project's tests and checks).\n2. Set \"passes\": true for {id} in {prd_name}. Keep the file valid JSON; do not change ids or remove stories.\n3. Append what you did and learned to progress.txt.\n4. Commit: `feat: {id} - {title}`.\n",
        id = story.id,
        title = if story.title.is_empty() { &story.id } else { &story.title },
    ));
    let instructions = state.prompt.trim();
    if !instructions.is_empty() && instructions != DEFAULT_PRD_PROMPT.trim() {
        out.push_str(&format!(
            "\n## Loop instructions\n{}\n",
            state.prompt.trim_end()
        ));
    }
    out
}

/// `[Ralph loop · iteration 3/30 · ...]`, after every feed.
fn footer(state: &LoopState, story: Option<(&str, &str)>) -> String {
    let next = state.iteration.saturating_add(1);
    let mut parts = vec![format!("iteration {}", state.iteration_label(next))];
    if let Some((id, progress)) = story {
        parts.push(format!("story {id}"));
        parts.push(progress.to_string());
        // --fresh: every word stays in the main thread's context; the worker
        // knows how a story ends.
        if !state.fresh {
            parts.push("the loop ends by itself when every story passes".into());
        }
    } else {
        match (&state.completion_promise, state.max_iterations) {
            (Some(p), _) => parts.push(format!(
                "to finish, print <promise>{p}</promise>, only when that statement is completely true"
            )),
            (None, 0) => parts.push(
                "no completion promise and no cap: only the user's /cancel-ralph ends this loop".into(),
            ),
            (None, _) => parts.push("no completion promise: the loop runs until its cap".into()),
        }
    }
    if state.review.is_on() {
        parts.push(format!(
            "then independent reviewers ({}) check the work before the loop ends",
            state.review.reviewers.join(", ")
        ));
    }
    format!("\n\n[Ralph loop · {}]", parts.join(" · "))
}
