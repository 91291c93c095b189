//! Every word a Stop says: to the model (the `reason` it is fed next, in
//! whichever form `next::feed` prints) and to the user (`systemMessage`).
//! Pure. The judgement is made in `decide`; this module only words it.

use super::completion::Refusal;
use super::decide::{
    Decision, IgnoredBlocker, Judgement, Next, PrdProgress, StopContext, StopOutcome, Then,
};
use super::plan::ReviewStage;
use crate::blocker::Blocker;
use crate::control::{self, status};
use crate::fmt::plural;
use crate::hook_output::Reader;
use crate::paths::STATE_FILE;
use crate::pause::Pause;
use crate::prd::Story;
use crate::state::LoopState;
use crate::state_file::Mirror;

mod feed;
mod score_words;

use feed::feeding;
pub(crate) use feed::{story_prompt, waiting_for_workers};

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

/// A loop file could not be read or written: the stop is allowed (the
/// loop's state is left as it was).
pub fn file_failed(e: &dyn std::fmt::Display) -> String {
    format!(
        "ralph: {e}. The loop is paused and this stop is allowed; fix the file, or cancel with /cancel-ralph."
    )
}

/// A corrupt state file, kept aside as `kept`.
/// Told to the model when the project's copy of the loop's state was changed
/// (by the agent, as far as ralph can tell): it was put back.
pub(crate) fn tampered(mirror: Mirror) -> String {
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

/// Told to the model when git's own files or the client's settings changed
/// during its turn (`what`), and what ralph put back (`put_back`).
pub(crate) fn outside_the_work(what: &[String], put_back: &[String]) -> String {
    let back = if put_back.is_empty() {
        String::new()
    } else {
        format!(
            " ralph put back {}, which makes a program run.",
            put_back.join(", ")
        )
    };
    format!(
        "⚠️ Refused work: you (or a program you started) {}: git's own files and the client's settings are not the work, and the user's next git command (or session) would run what was planted there.{back} Leave them alone; the user is told.",
        what.join(", ")
    )
}

pub(crate) fn corrupt(iteration: u64, why: &str, kept: &str) -> String {
    let at = if iteration > 0 {
        format!(" at iteration {iteration}")
    } else {
        String::new()
    };
    format!(
        "⚠️ Ralph loop stopped{at}: the loop's state (in ralph's data folder, copied to {STATE_FILE}) is corrupt: {why}. The file was kept as {kept}; fix it and move it back to {STATE_FILE} to resume, or start a new loop with /ralph-loop."
    )
}

/// The answer to a Stop delivered twice for one turn: the same as the first.
pub(crate) fn repeated(message: &str) -> String {
    format!("{message} (this Stop came twice for one turn: answered again, not counted)")
}

/// The loop goes on after a pause on an API error.
pub(crate) fn resumed(pause: &Pause, message: &str) -> String {
    format!("{}\n{message}", control::resumed(pause))
}

/// Word a judgement: what happens next is the judgement's (`Judgement::then`).
pub(crate) fn render(cx: &StopContext, j: Judgement) -> Decision {
    let state = cx.state;
    let code = j.outcome.code();
    let story = j.outcome.story();
    let (system_message, next) = match (j.then(state), &j.outcome) {
        (Then::Yield, _) => (yielded(state), Next::Yield),
        (Then::Cancel, outcome) => {
            let typed = match outcome {
                StopOutcome::CancelledByUser(typed) => Some(*typed),
                _ => None,
            };
            (control::cancelled(state, typed), Next::Cancel)
        }
        (Then::Hold, outcome) => {
            let why = held_why(outcome);
            (waiting_for_user(state, &why, cx.reader), Next::Hold { why })
        }
        (Then::Wait, _) => (String::new(), Next::Wait),
        (Then::End { iterations }, end) => {
            let mut words = ending(cx, end);
            if matches!(
                end,
                StopOutcome::MaxIterations
                    | StopOutcome::BudgetSpent(_)
                    | StopOutcome::Stalled
                    | StopOutcome::StoryStuck(_)
            ) {
                words.push_str(&score_words::best_at_end(cx));
            }
            (words, Next::End { iterations })
        }
        (
            Then::Feed {
                iteration,
                injected,
                to_worker,
            },
            feed,
        ) => {
            let (reason, mut message) = feeding(cx, feed);
            // The iteration's score, its trend and what regressed.
            let reason = match score_words::note(cx) {
                Some(note) => format!("{reason}\n\n{note}"),
                None => reason,
            };
            if let Some(short) = score_words::short(cx) {
                message.push_str(&format!(" · {short}"));
            }
            let reason = if to_worker {
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
                iteration,
                reason,
                injected,
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

/// Why the loop is held for the user, as the state keeps it (`blocked:`).
fn held_why(outcome: &StopOutcome) -> String {
    match outcome {
        StopOutcome::Blocked(blocker) => blocked_why(blocker),
        StopOutcome::StillBlocked(why) => (*why).to_string(),
        other => unreachable!("not a hold: {other:?}"),
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
fn ending(cx: &StopContext, outcome: &StopOutcome) -> String {
    let state = cx.state;
    let n = state.iteration;
    let after = plural(n, "iteration");
    match outcome {
        StopOutcome::Cancelled => {
            format!("Ralph loop ended: it was cancelled (active: false) at iteration {n}.")
        }
        StopOutcome::Complete => format!(
            "✅ Ralph loop complete after {after}: the completion promise <promise>{}</promise> was printed{}.",
            state.completion_promise.as_deref().unwrap_or_default(),
            verified_and_reviewed(cx)
        ),
        StopOutcome::AllStoriesPass { total } => format!(
            "✅ Ralph loop complete after {after}: all {} in {} pass{}.",
            plural(*total as u64, "story"),
            prd_name(state),
            verified_and_reviewed(cx)
        ),
        StopOutcome::ReviewsExhausted(standing) => format!(
            "⛔ Ralph loop stopped after {after}: review did not approve the work after {} (--max-reviews {}). Open findings:\n{}Fix them, then start the loop again.",
            plural(u64::from(state.review.max_rounds), "round"),
            state.review.max_rounds,
            standing.findings_text()
        ),
        StopOutcome::MaxIterations => cap_reached(state),
        StopOutcome::BudgetSpent(budget) => format!(
            "🛑 Ralph loop stopped after {after}: the {} is spent ({}). Start again with a larger {} to go on.",
            status::budget_name(*budget),
            status::spent_of(*budget, cx.budgets, cx.elapsed_secs),
            budget.flag()
        ),
        StopOutcome::Plateau => score_words::plateau_end(cx, &after),
        StopOutcome::Stalled => format!(
            "⛔ Ralph loop stopped after {after}: the working tree did not change for {} in a row (no-progress breaker, --max-stalls {}). Look at the last turns, adjust the prompt, and start again.",
            plural(u64::from(cx.stalls), "iteration"),
            state.max_stalls
        ),
        StopOutcome::StoryStuck(key) => format!(
            "⛔ Ralph loop halted after {after}: {} was fed {} times in a row without passing. Look at progress.txt and the last changes, adjust the story or write down what blocks it, then start the loop again.",
            key.as_str(),
            state.max_story_attempts
        ),
        feed => unreachable!("not an ending: {feed:?}"),
    }
}

/// The review rounds run so far (at least one: a rejection was recorded).
fn cx_rounds(cx: &StopContext) -> u32 {
    cx.review_rounds.max(1)
}

/// ` and verified (...) and approved by the acceptance and security reviewers`.
fn verified_and_reviewed(cx: &StopContext) -> String {
    let mut out = verified(cx.state);
    if let ReviewStage::Approved(s) = cx.review {
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
    if !refusal.inventory.is_empty() {
        return crate::suite::gone_words::report(&refusal.inventory);
    }
    match &refusal.check {
        _ if !refusal.regressed.is_empty() => format!(
            "{} that passed at an earlier iteration {} now: {}.",
            plural(refusal.regressed.len() as u64, "test"),
            if refusal.regressed.len() == 1 {
                "fails"
            } else {
                "fail"
            },
            refusal.regressed.join(", ")
        ),
        Some(c) => c.failure_report(state.verify_timeout),
        None => format!(
            "`{}` could not be run.",
            state.verify.as_deref().unwrap_or_default()
        ),
    }
}

fn refusal_status(state: &LoopState, refusal: &Refusal) -> String {
    if !refusal.inventory.is_empty() {
        return crate::suite::gone_words::status(&refusal.inventory);
    }
    if !refusal.regressed.is_empty() {
        return format!(
            "{} regressed",
            plural(refusal.regressed.len() as u64, "test")
        );
    }
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
fn waiting_for_user(state: &LoopState, why: &str, reader: Reader) -> String {
    format!(
        "⏸ Ralph loop paused at iteration {}: {why} Resolve it, then type {} to go on (or {} to end the loop).",
        state.iteration_label(state.iteration),
        reader.resume(),
        reader.cancel(),
    )
}

/// Why a blocker did not pause the loop, for the model.
pub(crate) fn blocker_ignored(ignored: &IgnoredBlocker) -> String {
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

fn progress(standing: &PrdProgress) -> String {
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
