//! The Stop hook's decision: a pure function of the loop state, what the
//! assistant said this turn, and (in PRD mode) the PRD, blocker and
//! re-injection counter. The binary reads those, calls [`decide`], and
//! applies the returned [`Decision`] (write state, log, print).

use crate::blocker::Blocker;
use crate::fmt::plural;
use crate::paths::PrdReadError;
use crate::prd::{Prd, Story};
use crate::promise;
use crate::reinject::Injected;
use crate::state::{DEFAULT_PRD_PROMPT, LoopState};
use crate::verify::{self, CheckResult, VerifyLog};

/// Everything the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct StopContext<'a> {
    pub state: &'a LoopState,
    /// The assistant's text of this turn, as far as it could be seen.
    pub assistant_text: Option<&'a str>,
    /// PRD mode: the PRD as read now, or why it could not be read.
    pub prd: Option<&'a Result<Prd, PrdReadError>>,
    pub blocker: Option<&'a Blocker>,
    pub last_injected: Option<&'a Injected>,
    /// Check results so far (stories, and the loop's own `verify`).
    pub verify_log: Option<&'a VerifyLog>,
    /// The loop's `verify`, run at this Stop because completion was claimed.
    pub loop_check: Option<&'a CheckResult>,
    /// Iterations in a row, this one included, that left the tree unchanged.
    pub stalls: u32,
}

/// Why the hook decided what it did: the `reason` code in the activity log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Plain mode: the prompt is fed again.
    Continue,
    /// PRD mode: the next story is fed.
    Story,
    /// PRD mode: the promise was printed while stories still fail.
    PromiseRefused,
    /// PRD mode: prd.json cannot be read; the agent is asked to repair it.
    PrdInvalid,
    /// PRD mode: stories recorded at start are gone and nothing else can run.
    StoriesVanished,
    /// Completion (or a story) was claimed, and its check failed.
    VerifyFailed,
    Complete,
    AllStoriesPass,
    MaxIterations,
    Cancelled,
    Blocked,
    Deadlock,
    StoryStuck,
    /// The no-progress breaker: the tree did not change for `max_stalls` iterations.
    Stalled,
    /// The state file does not parse (decided from the file alone, before `decide`).
    Corrupt,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Continue => "continue",
            Code::Story => "story",
            Code::PromiseRefused => "promise_refused",
            Code::PrdInvalid => "prd_invalid",
            Code::StoriesVanished => "stories_vanished",
            Code::VerifyFailed => "verify_failed",
            Code::Complete => "complete",
            Code::AllStoriesPass => "all_stories_pass",
            Code::MaxIterations => "max_iterations",
            Code::Cancelled => "cancelled",
            Code::Blocked => "blocked",
            Code::Deadlock => "deadlock",
            Code::StoryStuck => "story_stuck",
            Code::Stalled => "stalled",
            Code::Corrupt => "corrupt",
        }
    }
}

/// What to do, and what to tell the model and the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Block the stop and feed `reason` as the next user turn.
    Continue {
        code: Code,
        /// The iteration the next turn will be.
        next_iteration: u64,
        reason: String,
        system_message: String,
        story: Option<String>,
        /// The new re-injection counter (PRD mode), to be written.
        injected: Option<Injected>,
        remove_blocker: bool,
    },
    /// Let the session stop: the loop is over.
    End {
        code: Code,
        /// Iterations done.
        iterations: u64,
        system_message: String,
        story: Option<String>,
        remove_blocker: bool,
    },
}

impl Decision {
    pub fn code(&self) -> Code {
        match self {
            Decision::Continue { code, .. } | Decision::End { code, .. } => *code,
        }
    }
}

/// Decide one Stop of a loop this session owns.
pub fn decide(cx: &StopContext) -> Decision {
    let state = cx.state;
    let n = state.iteration;
    if !state.active {
        return end(
            Code::Cancelled,
            n,
            format!("Ralph loop ended: it was cancelled (active: false) at iteration {n}."),
        );
    }
    match cx.prd {
        Some(prd) => decide_prd(cx, prd),
        None => decide_plain(cx),
    }
}

fn decide_plain(cx: &StopContext) -> Decision {
    let state = cx.state;
    let n = state.iteration;
    let said = cx.assistant_text.unwrap_or("");
    let mut refused: Option<String> = None;
    if let Some(p) = &state.completion_promise
        && promise::is_kept(said, p)
    {
        match check_verdict(state, cx.loop_check) {
            Ok(verified) => {
                return end(
                    Code::Complete,
                    n,
                    format!(
                        "✅ Ralph loop complete after {}: the completion promise <promise>{p}</promise> was printed{verified}.",
                        plural(n, "iteration")
                    ),
                );
            }
            Err(report) => refused = Some(report),
        }
    }
    if let Some(blocker) = cx.blocker {
        return end_blocked(n, blocker);
    }
    // The cap first: when both apply on the same turn, the user's own limit
    // is the reason to give.
    if let Some(end) = cap_reached(state).or_else(|| stalled(state, cx.stalls)) {
        return end;
    }
    let next = n.saturating_add(1);
    // Trailing newlines are dropped so one blank line separates the footer.
    let mut reason = state.prompt.trim_end().to_string();
    let mut code = Code::Continue;
    let mut system_message = format!(
        "🔄 Ralph iteration {}{}",
        state.iteration_label(next),
        promise_hint(state)
    );
    if let Some(report) = &refused {
        reason.push_str(&format!(
            "\n\nCompletion refused: you printed the promise, but the loop's check failed. {report}\nFix what fails, then print the promise again."
        ));
        code = Code::VerifyFailed;
        system_message = format!(
            "🔁 Ralph iteration {}: completion refused, the check failed ({})",
            state.iteration_label(next),
            check_status(state, cx.loop_check)
        );
    } else if let Some(p) = &state.completion_promise
        && promise::has_any_tag(said)
    {
        reason.push_str(&format!(
            "\n\n(Ralph: your <promise> tag did not match the completion promise \"{p}\", so the loop goes on.)"
        ));
    }
    reason.push_str(&footer(state, next, None));
    Decision::Continue {
        code,
        next_iteration: next,
        system_message,
        reason,
        story: None,
        injected: None,
        remove_blocker: false,
    }
}

fn decide_prd(cx: &StopContext, prd: &Result<Prd, PrdReadError>) -> Decision {
    let state = cx.state;
    let n = state.iteration;
    let prd_name = state.prd_file.as_deref().unwrap_or("prd.json");
    let prd = match prd {
        Ok(prd) => prd,
        Err(why) => {
            if let Some(end) = cap_reached(state) {
                return end;
            }
            let reason = format!(
                "Ralph loop: {prd_name} can no longer be read: {why}\n\nRestore {prd_name} to valid JSON with every story it had (keep every `id`), then continue with the next story whose `passes` is false.{}",
                footer(state, n.saturating_add(1), None)
            );
            return feed(
                cx,
                Code::PrdInvalid,
                "(prd-invalid)",
                reason,
                format!(
                    "⚠️ Ralph iteration {}: {prd_name} is not readable ({why}); the agent was asked to repair it.",
                    state.iteration_label(n.saturating_add(1))
                ),
                false,
            );
        }
    };
    // Stories with a `verify` command pass only when their check passed.
    let judged;
    let (prd, refused) = match cx.verify_log {
        Some(log) if verify::has_story_checks(prd) => {
            judged = verify::effective_prd(prd, log);
            (&judged, verify::refused_stories(prd, log))
        }
        _ => (prd, Default::default()),
    };
    let mut remove_blocker = false;
    if let Some(blocker) = cx.blocker {
        match prd.story(&blocker.story_id) {
            Some(story) if story.passes => remove_blocker = true,
            _ => return end_blocked(n, blocker),
        }
    }
    let vanished: Vec<&str> = state
        .story_ids
        .iter()
        .map(String::as_str)
        .filter(|id| prd.story(id).is_none())
        .collect();
    let (passing, total) = prd.progress();
    if vanished.is_empty() && prd.all_pass() {
        match check_verdict(state, cx.loop_check) {
            Ok(verified) => {
                return Decision::End {
                    code: Code::AllStoriesPass,
                    iterations: n,
                    system_message: format!(
                        "✅ Ralph loop complete after {}: all {} in {prd_name} pass{verified}.",
                        plural(n, "iteration"),
                        plural(total as u64, "story")
                    ),
                    story: None,
                    remove_blocker,
                };
            }
            Err(report) => {
                if let Some(end) = cap_reached(state).or_else(|| stalled(state, cx.stalls)) {
                    return end;
                }
                let reason = format!(
                    "Ralph loop: every story in {prd_name} is marked as passing, but the loop's final check failed. {report}\nFix what fails (reopen a story by setting its \"passes\" to false if it is not really done); the loop ends when the check passes.{}",
                    footer(state, n.saturating_add(1), None)
                );
                let message = format!(
                    "🔁 Ralph iteration {}: all stories claim to pass, but the final check failed ({})",
                    state.iteration_label(n.saturating_add(1)),
                    check_status(state, cx.loop_check)
                );
                return feed(
                    cx,
                    Code::VerifyFailed,
                    "(verify)",
                    reason,
                    message,
                    remove_blocker,
                );
            }
        }
    }
    // The cap first: when both apply on the same turn, the user's own limit
    // is the reason to give.
    if let Some(end) = cap_reached(state).or_else(|| stalled(state, cx.stalls)) {
        return end;
    }
    let total_all = total + vanished.len();
    let progress = format!("{passing}/{total_all} stories pass");
    let mut preface = String::new();
    if let Some(p) = &state.completion_promise
        && promise::is_kept(cx.assistant_text.unwrap_or(""), p)
    {
        let failing: Vec<&str> = prd
            .stories
            .iter()
            .filter(|s| !s.passes)
            .map(|s| s.id.as_str())
            .chain(vanished.iter().copied())
            .collect();
        preface.push_str(&format!(
            "Completion refused: you printed <promise>{p}</promise>, but {} of {total_all} stories in {prd_name} do not pass yet ({}). The loop ends by itself when every story has \"passes\": true.\n\n",
            failing.len(),
            failing.join(", ")
        ));
    }
    if !vanished.is_empty() {
        preface.push_str(&format!(
            "Stories removed from {prd_name} since the loop started count as not passing: {}. Put them back (with their ids) and finish them.\n\n",
            vanished.join(", ")
        ));
    }
    let mut code = if preface.starts_with("Completion refused") {
        Code::PromiseRefused
    } else {
        Code::Story
    };
    let Some(story) = prd.next_runnable() else {
        if !vanished.is_empty() {
            let reason = format!(
                "Ralph loop: {preface}{}",
                footer(state, n.saturating_add(1), None)
            );
            let mut d = feed(
                cx,
                Code::StoriesVanished,
                "(vanished)",
                reason,
                format!(
                    "⚠️ Ralph iteration {}: stories vanished from {prd_name}: {}; the agent was asked to restore them.",
                    state.iteration_label(n.saturating_add(1)),
                    vanished.join(", ")
                ),
                remove_blocker,
            );
            if let Decision::Continue { system_message, .. } = &mut d {
                system_message.push_str(&format!(" ({progress})"));
            }
            return d;
        }
        let waits: Vec<String> = prd
            .unmet_dependencies()
            .into_iter()
            .map(|(id, unmet)| format!("{id} waits on {}", unmet.join(", ")))
            .collect();
        return Decision::End {
            code: Code::Deadlock,
            iterations: n,
            system_message: format!(
                "⛔ Ralph loop halted after {}: dependency deadlock in {prd_name}, no failing story can run ({}). Fix the dependencies, then start the loop again.",
                plural(n, "iteration"),
                waits.join("; ")
            ),
            story: None,
            remove_blocker,
        };
    };
    let story_refusal = refused.get(&story.id);
    if let Some(check) = story_refusal {
        preface.push_str(&format!(
            "Your claim that {} passes was refused: its check {}\nFix it; the story counts once its check passes.\n\n",
            story.id,
            check.failure_report(state.verify_timeout)
        ));
        code = Code::VerifyFailed;
    }
    let reason = format!(
        "{preface}{}{}",
        story_prompt(prd_name, story, &progress, state, cx.last_injected).trim_end(),
        footer(state, n.saturating_add(1), Some((&story.id, &progress)))
    );
    let mut system_message = format!(
        "🔄 Ralph iteration {} · story {} {} · {progress}",
        state.iteration_label(n.saturating_add(1)),
        story.id,
        quoted_title(story)
    );
    if code == Code::PromiseRefused {
        system_message.push_str(" · early completion refused");
    }
    if let Some(check) = story_refusal {
        system_message.push_str(&format!(
            " · its check failed ({})",
            check.status_text(state.verify_timeout)
        ));
    }
    if !vanished.is_empty() {
        system_message.push_str(&format!(" · vanished: {}", vanished.join(", ")));
    }
    feed(cx, code, &story.id, reason, system_message, remove_blocker)
}

/// Block with `reason`, counting consecutive feeds of `key`; stop when the
/// same key was fed more than `max_story_attempts` times in a row.
fn feed(
    cx: &StopContext,
    code: Code,
    key: &str,
    reason: String,
    system_message: String,
    remove_blocker: bool,
) -> Decision {
    let state = cx.state;
    let injected = Injected::next(cx.last_injected, key);
    if injected.count > state.max_story_attempts {
        return Decision::End {
            code: Code::StoryStuck,
            iterations: state.iteration,
            system_message: format!(
                "⛔ Ralph loop halted after {}: {key} was fed {} times in a row without passing. Look at progress.txt and the last changes, adjust the story or write down what blocks it, then start the loop again.",
                plural(state.iteration, "iteration"),
                state.max_story_attempts
            ),
            story: Some(key.to_string()),
            remove_blocker,
        };
    }
    // Keys in parentheses are not stories: "(verify)", "(prd-invalid)".
    let story = (!key.starts_with('(')).then(|| key.to_string());
    Decision::Continue {
        code,
        next_iteration: state.iteration.saturating_add(1),
        reason,
        system_message,
        story,
        injected: Some(injected),
        remove_blocker,
    }
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

fn footer(state: &LoopState, next: u64, story: Option<(&str, &str)>) -> String {
    let mut parts = vec![format!("iteration {}", state.iteration_label(next))];
    if let Some((id, progress)) = story {
        parts.push(format!("story {id}"));
        parts.push(progress.to_string());
        parts.push("the loop ends by itself when every story passes".into());
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
    format!("\n\n[Ralph loop · {}]", parts.join(" · "))
}

fn promise_hint(state: &LoopState) -> String {
    match &state.completion_promise {
        Some(p) => format!(" · ends on <promise>{p}</promise>"),
        None => String::new(),
    }
}

/// `Ok(note)` when completion may stand: no `verify`, or its check passed;
/// `Err(report)` for the model when the check failed or did not run.
fn check_verdict(state: &LoopState, check: Option<&CheckResult>) -> Result<String, String> {
    let Some(cmd) = &state.verify else {
        return Ok(String::new());
    };
    match check {
        Some(c) if c.passed() => Ok(format!(" and verified (`{cmd}` exited 0)")),
        Some(c) => Err(c.failure_report(state.verify_timeout)),
        None => Err(format!("`{cmd}` could not be run.")),
    }
}

fn check_status(state: &LoopState, check: Option<&CheckResult>) -> String {
    check
        .map(|c| c.status_text(state.verify_timeout))
        .unwrap_or_else(|| "not run".into())
}

/// The no-progress breaker.
fn stalled(state: &LoopState, stalls: u32) -> Option<Decision> {
    (state.max_stalls > 0 && stalls >= state.max_stalls).then(|| {
        end(
            Code::Stalled,
            state.iteration,
            format!(
                "⛔ Ralph loop stopped after {}: the working tree did not change for {} in a row (no-progress breaker, --max-stalls {}). Look at the last turns, adjust the prompt, and start again.",
                plural(state.iteration, "iteration"),
                plural(u64::from(stalls), "iteration"),
                state.max_stalls
            ),
        )
    })
}

fn cap_reached(state: &LoopState) -> Option<Decision> {
    let n = state.iteration;
    (state.max_iterations > 0 && n >= state.max_iterations).then(|| {
        let unmet = match (&state.completion_promise, &state.prd_file) {
            (_, Some(prd)) => format!(" before every story in {prd} passed"),
            (Some(p), None) => format!(" without the promise <promise>{p}</promise>"),
            (None, None) => String::new(),
        };
        end(Code::MaxIterations, n, format!(
            "🛑 Ralph loop stopped: reached the iteration cap ({}) after {}{unmet}. Start again with a higher --max-iterations to go on.",
            state.max_iterations,
            plural(n, "iteration")
        ))
    })
}

fn end_blocked(n: u64, blocker: &Blocker) -> Decision {
    let who = if blocker.story_id.is_empty() {
        "the agent".to_string()
    } else {
        format!("story {}", blocker.story_id)
    };
    Decision::End {
        code: Code::Blocked,
        iterations: n,
        system_message: format!(
            "⛔ Ralph loop halted after {}: {who} is blocked (.ralph-blocker.md): {} Resolve it, delete .ralph-blocker.md, then start the loop again.",
            plural(n, "iteration"),
            blocker.summary
        ),
        story: (!blocker.story_id.is_empty()).then(|| blocker.story_id.clone()),
        remove_blocker: false,
    }
}

fn end(code: Code, iterations: u64, system_message: String) -> Decision {
    Decision::End {
        code,
        iterations,
        system_message,
        story: None,
        remove_blocker: false,
    }
}

fn quoted_title(story: &Story) -> String {
    if story.title.is_empty() {
        String::new()
    } else {
        format!("«{}»", story.title)
    }
}

#[cfg(test)]
#[path = "decision_tests.rs"]
mod tests;
