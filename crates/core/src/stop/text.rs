//! Every word a Stop says: to the model (the `reason` that becomes its next
//! turn) and to the user (`systemMessage`). Pure. The judgement is made in
//! `decide`; this module only words it.

use super::completion::Refusal;
use super::decide::{Decision, IgnoredBlocker, Judgement, Next, Outcome, Standing, StopContext};
use super::plan::ReviewGate;
use crate::activity::Code;
use crate::blocker::Blocker;
use crate::control::{self, status};
use crate::fmt::plural;
use crate::paths::{Mirror, STATE_FILE};
use crate::pause::Pause;
use crate::prd::Story;
use crate::reinject::Injected;
use crate::review::Verdict;
use crate::state::{DEFAULT_PRD_PROMPT, LoopState};
use crate::verify::CheckResult;

/// Shown when the Stop hook panics.
pub const INTERNAL_ERROR: &str = "ralph: the Stop hook hit an internal error (a bug: please report it); this stop is allowed and the loop state was left as it was.";
/// Shown when the Stop hook's watchdog fires.
pub const TOO_SLOW: &str = "ralph: the Stop hook took too long (a blocked file or disk?); this stop is allowed and the loop was not advanced.";
/// Shown when the state changed under every round of checks.
pub const KEPT_CHANGING: &str =
    "ralph: the loop state kept changing while its checks ran; this stop is allowed.";

/// The hook input could not be read.
pub fn bad_input(e: &dyn std::fmt::Display) -> String {
    format!("ralph: {e}; the loop in {STATE_FILE} was not advanced and this stop is allowed.")
}

/// The loop lock could not be taken.
pub fn lock_failed(e: &dyn std::fmt::Display) -> String {
    format!("ralph: {e}. This stop is allowed.")
}

/// A loop file could not be read or written.
pub fn paused(e: &dyn std::fmt::Display) -> String {
    format!(
        "ralph: {e}. The loop is paused and this stop is allowed; fix the file, or cancel with /ralph:cancel-ralph."
    )
}

/// A corrupt state file, kept aside as `kept`.
/// Told to the model when the project's copy of the loop's state was changed
/// (by the agent, as far as ralph can tell): it was put back.
pub fn tampered(mirror: Mirror) -> String {
    let what = match mirror {
        Mirror::Missing => "was deleted",
        Mirror::Unsafe => {
            "was replaced by a link or a special file (ralph never writes through one: a plain copy took its place)"
        }
        Mirror::Differs | Mirror::Same => "was edited",
    };
    format!(
        "⚠️ {STATE_FILE} {what}. It is only a copy: the loop's state is kept outside the project and the copy has been restored. Only the user ends a loop (/cancel-ralph); the loop goes on."
    )
}

pub fn corrupt(iteration: u64, why: &str, kept: &str) -> String {
    let at = if iteration > 0 {
        format!(" at iteration {iteration}")
    } else {
        String::new()
    };
    format!(
        "⚠️ Ralph loop stopped{at}: the loop's state (in ralph's data folder, copied to {STATE_FILE}) is corrupt: {why}. The file was kept as {kept}; fix it and move it back to {STATE_FILE} to resume, or start a new loop with /ralph:ralph-loop."
    )
}

/// The answer to a Stop delivered twice for one turn: the same as the first.
pub fn repeated(message: &str) -> String {
    format!("{message} (this Stop came twice for one turn: answered again, not counted)")
}

/// The loop goes on after a pause on an API error.
pub fn resumed(pause: &Pause, message: &str) -> String {
    format!("{}\n{message}", control::resumed(pause))
}

/// Word a judgement.
pub fn render(cx: &StopContext, j: Judgement) -> Decision {
    let state = cx.state;
    let code = j.outcome.code();
    let story = j.outcome.story();
    let (system_message, next) = match &j.outcome {
        Outcome::Yield => (yielded(state), Next::Pause),
        Outcome::CancelledByUser(typed) => (control::cancelled(state, Some(typed)), Next::Cancel),
        Outcome::Blocked(blocker) => {
            let why = blocked_why(blocker);
            (waiting_for_user(state, &why), Next::Hold { why })
        }
        Outcome::WaitForWorkers => (String::new(), Next::Wait),
        Outcome::StillPaused(why) => (
            waiting_for_user(state, why),
            Next::Hold {
                why: (*why).to_string(),
            },
        ),
        end if end.ends() => {
            let iterations = state.iteration;
            (ending(cx, end), Next::End { iterations })
        }
        feed => {
            let (reason, message) = feeding(cx, feed);
            // --fresh: the main thread hands the feed to a worker.
            // (a story's feed is already a short dispatch: see story_feed)
            let reason = if state.fresh
                && !matches!(feed, Outcome::Story { .. } | Outcome::Dispatch { .. })
            {
                crate::fresh::dispatch(&reason, story.as_deref())
            } else {
                reason
            };
            // The model is told first why its blocker did nothing.
            let reason = match &j.ignored_blocker {
                Some(ignored) => format!("{}\n\n{reason}", blocker_ignored(ignored)),
                None => reason,
            };
            let next = Next::Feed {
                iteration: state.iteration.saturating_add(1),
                reason,
                injected: j.injected,
            };
            (message, next)
        }
    };
    Decision {
        code,
        system_message,
        story,
        remove_blocker: j.remove_blocker,
        next,
    }
}

/// The loop waits while the model answers the user's message.
fn yielded(state: &LoopState) -> String {
    format!(
        "⏸ Ralph loop paused at iteration {} for your message; it goes on after Claude answers (/cancel-ralph ends it).",
        state.iteration_label(state.iteration)
    )
}

/// Why the loop ended, for the user.
fn ending(cx: &StopContext, outcome: &Outcome) -> String {
    let state = cx.state;
    let n = state.iteration;
    let after = plural(n, "iteration");
    match outcome {
        Outcome::Cancelled => {
            format!("Ralph loop ended: it was cancelled (active: false) at iteration {n}.")
        }
        Outcome::Complete => format!(
            "✅ Ralph loop complete after {after}: the completion promise <promise>{}</promise> was printed{}.",
            state.completion_promise.as_deref().unwrap_or_default(),
            verified_and_reviewed(cx)
        ),
        Outcome::AllStoriesPass { total } => format!(
            "✅ Ralph loop complete after {after}: all {} in {} pass{}.",
            plural(*total as u64, "story"),
            prd_name(state),
            verified_and_reviewed(cx)
        ),
        Outcome::ReviewsExhausted(standing) => format!(
            "⛔ Ralph loop stopped after {after}: review did not approve the work after {} (--max-reviews {}). Open findings:\n{}Fix them, then start the loop again.",
            plural(u64::from(state.review.max_rounds), "round"),
            state.review.max_rounds,
            standing.findings_text()
        ),
        Outcome::MaxIterations => cap_reached(state),
        Outcome::BudgetSpent(budget) => format!(
            "🛑 Ralph loop stopped after {after}: the {} is spent ({}). Start again with a larger {} to go on.",
            status::budget_name(*budget),
            status::spent_of(*budget, cx.budgets, cx.elapsed_secs),
            budget.flag()
        ),
        Outcome::Stalled => format!(
            "⛔ Ralph loop stopped after {after}: the working tree did not change for {} in a row (no-progress breaker, --max-stalls {}). Look at the last turns, adjust the prompt, and start again.",
            plural(u64::from(cx.stalls), "iteration"),
            state.max_stalls
        ),
        Outcome::StoryStuck(key) => format!(
            "⛔ Ralph loop halted after {after}: {} was fed {} times in a row without passing. Look at progress.txt and the last changes, adjust the story or write down what blocks it, then start the loop again.",
            key.as_str(),
            state.max_story_attempts
        ),
        feed => unreachable!("not an ending: {feed:?}"),
    }
}

/// What the model is fed (`reason`) and what the user is told, when the loop goes on.
fn feeding(cx: &StopContext, outcome: &Outcome) -> (String, String) {
    let state = cx.state;
    let label = state.iteration_label(state.iteration.saturating_add(1));
    let prd_name = prd_name(state);
    let footer = footer(state, None);
    match outcome {
        Outcome::Prompt {
            refused,
            mismatched_tag,
        } => prompt(state, *refused, *mismatched_tag),
        Outcome::PrdInvalid(why) => (
            format!(
                "Ralph loop: {prd_name} can no longer be read: {why}\n\nRestore {prd_name} to valid JSON with every story it had (keep every `id`), then continue with the next story whose `passes` is false.{footer}"
            ),
            format!(
                "⚠️ Ralph iteration {label}: {prd_name} is not readable ({why}); the agent was asked to repair it."
            ),
        ),
        Outcome::ReviewRejected(standing) => {
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
        Outcome::FinalCheckFailed(refusal) => (
            format!(
                "Ralph loop: every story in {prd_name} is marked as passing, but the loop's final check failed. {}\nFix what fails (reopen a story by setting its \"passes\" to false if it is not really done); the loop ends when the check passes.{footer}",
                refusal_report(state, refusal)
            ),
            format!(
                "🔁 Ralph iteration {label}: all stories claim to pass, but the final check failed ({})",
                refusal_status(state, refusal)
            ),
        ),
        Outcome::Deadlock(unmet) => {
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
        Outcome::Vanished(standing) => (
            format!("Ralph loop: {}{footer}", preface(state, standing)),
            format!(
                "⚠️ Ralph iteration {label}: stories vanished from {prd_name}: {}; the agent was asked to restore them. ({})",
                standing.vanished.join(", "),
                progress(standing)
            ),
        ),
        Outcome::Story {
            story,
            standing,
            refused,
            review,
        } => story_feed(cx, outcome, story, standing, *refused, *review),
        Outcome::Dispatch { stories, standing } => dispatch_feed(cx, stories, standing),
        end => unreachable!("not a feed: {end:?}"),
    }
}

/// `--parallel`: stories out to workers at once. Short: every word stays in
/// the main thread's context; each worker reads its story itself.
fn dispatch_feed(cx: &StopContext, stories: &[&Story], standing: &Standing) -> (String, String) {
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
pub fn waiting_for_workers(
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

/// Plain mode: the prompt again.
fn prompt(state: &LoopState, refused: Option<&Refusal>, mismatched_tag: bool) -> (String, String) {
    let label = state.iteration_label(state.iteration.saturating_add(1));
    // Trailing newlines are dropped so one blank line separates the footer.
    let mut reason = state.prompt.trim_end().to_string();
    let message = match refused {
        Some(refusal) => {
            reason.push_str(&format!(
                "\n\nCompletion refused: you printed the promise, but the loop's check failed. {}\nFix what fails, then print the promise again.",
                refusal_report(state, refusal)
            ));
            format!(
                "🔁 Ralph iteration {label}: completion refused, the check failed ({})",
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
    outcome: &Outcome,
    story: &Story,
    standing: &Standing,
    refused: Option<&CheckResult>,
    review: Option<&Verdict>,
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
fn preface(state: &LoopState, standing: &Standing) -> String {
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
pub fn story_prompt(
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
                "no completion promise and no cap: only the user's /ralph:cancel-ralph ends this loop".into(),
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

/// The review rounds run so far (at least one: a rejection was recorded).
fn cx_rounds(cx: &StopContext) -> u32 {
    cx.review_rounds.max(1)
}

/// ` and verified (...) and approved by the acceptance and security reviewers`.
fn verified_and_reviewed(cx: &StopContext) -> String {
    let mut out = verified(cx.state);
    if let ReviewGate::Approved(s) = cx.review {
        let names = s.approvers();
        let who = match names.as_slice() {
            [one] => format!("the {one} reviewer"),
            many => format!("the {} reviewers", many.join(", ")),
        };
        out.push_str(&format!(" and approved by {who}"));
    }
    out
}

/// " and verified (`cmd` exited 0)" for a loop with a check.
fn verified(state: &LoopState) -> String {
    match &state.verify {
        Some(cmd) => format!(" and verified (`{cmd}` exited 0)"),
        None => String::new(),
    }
}

/// The failed check, as the model should read it.
fn refusal_report(state: &LoopState, refusal: &Refusal) -> String {
    match &refusal.check {
        Some(c) => c.failure_report(state.verify_timeout),
        None => format!(
            "`{}` could not be run.",
            state.verify.as_deref().unwrap_or_default()
        ),
    }
}

fn refusal_status(state: &LoopState, refusal: &Refusal) -> String {
    refusal
        .check
        .as_ref()
        .map(|c| c.status_text(state.verify_timeout))
        .unwrap_or_else(|| "not run".into())
}

fn cap_reached(state: &LoopState) -> String {
    let unmet = match (&state.completion_promise, &state.prd_file) {
        (_, Some(prd)) => format!(" before every story in {prd} passed"),
        (Some(p), None) => format!(" without the promise <promise>{p}</promise>"),
        (None, None) => String::new(),
    };
    format!(
        "🛑 Ralph loop stopped: reached the iteration cap ({}) after {}{unmet}. Start again with a higher --max-iterations to go on.",
        state.max_iterations,
        plural(state.iteration, "iteration")
    )
}

/// What the state keeps as the reason a blocker paused the loop.
fn blocked_why(blocker: &Blocker) -> String {
    format!(
        "story {} needs a human (.ralph-blocker.md): {}",
        blocker.story_id, blocker.summary
    )
}

/// The loop waits for the user.
fn waiting_for_user(state: &LoopState, why: &str) -> String {
    format!(
        "⏸ Ralph loop paused at iteration {}: {why} Resolve it, then type /ralph-resume to go on (or /cancel-ralph to end the loop).",
        state.iteration_label(state.iteration)
    )
}

/// Why a blocker did not pause the loop, for the model.
pub fn blocker_ignored(ignored: &IgnoredBlocker) -> String {
    let why = match ignored {
        IgnoredBlocker::PlainMode => "a blocker pauses only a PRD loop".to_string(),
        IgnoredBlocker::NoSuchStory(id) if id.is_empty() => {
            "it names no story (`story_id:` in its frontmatter)".to_string()
        }
        IgnoredBlocker::NoSuchStory(id) => format!("the PRD has no story `{id}`"),
    };
    format!(
        "Ralph ignored .ralph-blocker.md and removed it: {why}. In a PRD loop, a blocker that names a failing story (`story_id: US-2` in its frontmatter) pauses the loop until the user resumes it; nothing else does. Only the user ends a loop. Go on with the task."
    )
}

fn progress(standing: &Standing) -> String {
    format!("{}/{} stories pass", standing.passing, standing.total)
}

fn prd_name(state: &LoopState) -> &str {
    state.prd_file.as_deref().unwrap_or("prd.json")
}

fn quoted_title(story: &Story) -> String {
    if story.title.is_empty() {
        String::new()
    } else {
        format!("«{}»", story.title)
    }
}
