//! The Stop's decision: pure. [`judge`] applies the rules in their order and
//! says what happens as data (an [`StopOutcome`]); `text::render` words it into
//! a [`Decision`]. The order, for a loop this session owns:
//!
//! 1. what the user queued meanwhile comes first: a `/cancel-ralph` ends the
//!    loop, any other message (not a status or help request, which is
//!    answered with the decision) lets the turn end without advancing it;
//!    then a cancelled state (`active: false`) ends the loop;
//!    then a loop paused for the user (a blocker) stays paused until the
//!    user resumes it;
//! 2. plain mode: completion (see `completion`), then the cap, then the
//!    budgets (tokens, cost, runtime), then the no-progress breaker; else the
//!    prompt is fed again. A blocker is ignored (removed, and the model told
//!    why): only the user ends a loop;
//! 3. PRD mode: an unreadable PRD is fed back for repair (the cap still
//!    applies); a blocker naming a failing story pauses the loop for the
//!    user (one naming a passing story is removed, one naming no story is
//!    ignored as in plain mode); then completion, the cap, the budgets, the
//!    breaker; then the next runnable story is fed, or the vanished stories,
//!    or a dependency deadlock for repair (the PRD had none at start, so an
//!    edit made it);
//! 4. whatever is fed again and again (a story, a repair) stops the loop
//!    after `max_story_attempts` feeds in a row.
//!
//! Pure.

use super::completion::{self, Completion, JudgedPrd, Refusal};
use super::gather::StopInputs;
use super::measure::Scored;
pub(crate) use super::next::Decision;
pub(crate) use super::next::{Next, Then};
use super::plan::{Plan, ReviewStage};
pub(crate) use super::workers::Workers;
use crate::activity::Code;
use crate::blocker::Blocker;
use crate::budget::{Budget, Budgets};
use crate::prd::PrdReadError;
use crate::prd::{Prd, Story};
use crate::promise;
use crate::queued::QueueAction;
use crate::reinject::Injected;
use crate::review::{ReviewVerdict, Standing};
use crate::state::LoopState;
use crate::verify::CheckResult;

/// Everything the decision depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StopContext<'a> {
    pub state: &'a LoopState,
    /// The assistant's text of this turn, as far as it could be seen.
    pub said: Option<&'a str>,
    /// PRD mode: the PRD as judged now, or why it cannot be read.
    pub prd: Option<Result<&'a JudgedPrd<'a>, &'a PrdReadError>>,
    pub blocker: Option<&'a Blocker>,
    pub last_injected: Option<&'a Injected>,
    pub completion: &'a Completion,
    /// Where the review of a completion claim stands (`--review`).
    pub review: &'a ReviewStage,
    /// Review rounds run so far.
    pub review_rounds: u32,
    /// What the user queued meanwhile asks for.
    pub queue: &'a QueueAction,
    /// Iterations in a row, this one included, that left the tree unchanged.
    pub stalls: u32,
    /// The budgets with this turn's spending added.
    pub budgets: &'a Budgets,
    /// Seconds since the loop started, when known.
    pub elapsed_secs: Option<u64>,
    /// This Stop's score and what it means (`stop::measure`).
    pub scored: Option<&'a Scored>,
    /// The loop's scores before this Stop.
    pub scores: &'a crate::score::history::History,
    /// `--parallel`: the stories whose worker still runs.
    pub in_flight: &'a [Option<String>],
    /// How busy the loop's workers are (`--fresh`, `--parallel`).
    pub(crate) workers: Workers,
    /// The project root (the workers' tasks name the PRD by its path).
    pub root: &'a std::path::Path,
    /// Where the user reads the Stop's words (a session, or `ralph run`'s terminal).
    pub(crate) reader: crate::hook_output::Reader,
}

impl<'a> StopContext<'a> {
    pub(crate) fn new(inputs: &'a StopInputs, plan: &'a Plan<'a>) -> StopContext<'a> {
        StopContext {
            state: &inputs.state,
            said: inputs.said.as_deref(),
            prd: plan.prd.as_ref().map(|p| p.as_ref().map_err(|e| *e)),
            blocker: inputs.blocker.as_ref(),
            last_injected: inputs.last_injected.as_ref(),
            completion: &plan.completion,
            review: &plan.review,
            review_rounds: plan.review_rounds,
            queue: &plan.queue,
            stalls: plan.stalls,
            budgets: &plan.budgets,
            elapsed_secs: plan.elapsed_secs,
            scored: plan.scored.as_ref(),
            scores: &inputs.scores,
            in_flight: &inputs.in_flight,
            workers: plan.workers,
            root: &inputs.root,
            reader: inputs.reader,
        }
    }
}

/// What a PRD loop feeds; the re-injection counter counts feeds of the
/// same key in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FeedKey {
    Story(String),
    /// The loop's final check failed while every story passes.
    FinalCheck,
    /// The PRD cannot be read.
    PrdInvalid,
    /// Stories vanished and nothing else can run.
    Vanished,
    /// No failing story can run: its dependencies were changed.
    Deadlock,
    /// Every story passes, but a reviewer rejected the work.
    Review,
}

impl FeedKey {
    /// As kept in the counter file: the story id, or a name in parentheses.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            FeedKey::Story(id) => id,
            FeedKey::FinalCheck => "(verify)",
            FeedKey::PrdInvalid => "(prd-invalid)",
            FeedKey::Vanished => "(vanished)",
            FeedKey::Deadlock => "(deadlock)",
            FeedKey::Review => "(review)",
        }
    }
}

/// How far a PRD's stories are, as the model is told with a feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrdProgress<'a> {
    pub passing: usize,
    /// Stories in all, the vanished ones included.
    pub total: usize,
    pub vanished: &'a [String],
    /// The promise was printed while these stories fail: refused.
    pub early_promise: Option<Vec<&'a str>>,
}

/// What a Stop does, as data.
#[derive(Debug, Clone)]
pub(crate) enum StopOutcome<'a> {
    /// The user queued this cancel command: the loop ends.
    CancelledByUser(&'a str),
    /// The user queued a message: the turn ends so the model gets it; the
    /// loop goes on at the next Stop.
    Yield,
    // The loop ends.
    Cancelled,
    Complete,
    AllStoriesPass {
        total: usize,
    },
    MaxIterations,
    /// A token, runtime or cost budget is spent.
    BudgetSpent(Budget),
    Stalled,
    /// `--max-plateau` scored iterations in a row changed the tree without
    /// beating the best score (`stop::measure`).
    Plateau,
    /// The reviewers still reject the work after `max_reviews` rounds.
    ReviewsExhausted(&'a Standing),
    // The loop waits for the user (it stays, and each Stop lets the session stop):
    /// A blocker names a failing story: the loop pauses.
    Blocked(&'a Blocker),
    /// Held by a blocker earlier (`blocked:` in the state), and not resumed yet: why.
    StillBlocked(&'a str),
    StoryStuck(FeedKey),
    // The loop goes on, fed with:
    /// Plain mode: the prompt, with why a claim was refused or a tag did not match.
    Prompt {
        refused: Option<&'a Refusal>,
        mismatched_tag: bool,
    },
    PrdInvalid(&'a PrdReadError),
    /// No failing story can run: each with the dependencies it waits on. The
    /// PRD had none at start (checked), so an edit made them: fed for repair.
    Deadlock(Vec<(String, Vec<String>)>),
    FinalCheckFailed(&'a Refusal),
    /// Completion stands and the checks pass, but a reviewer rejected the work.
    ReviewRejected(&'a Standing),
    Vanished(PrdProgress<'a>),
    Story {
        story: &'a Story,
        standing: PrdProgress<'a>,
        /// The story claims `passes`, but its check failed.
        refused: Option<&'a CheckResult>,
        /// The story claims `passes`, but its review did not approve it.
        review: Option<&'a ReviewVerdict>,
    },
    /// `--parallel`: these stories go out at once, each to its own worker.
    Dispatch {
        stories: Vec<&'a Story>,
        standing: PrdProgress<'a>,
    },
    // Nothing advances:
    /// `--parallel`: workers run and no other story can go out: the turn
    /// ends; a worker's report (or its merge) brings the next Stop.
    WaitForWorkers,
}

impl StopOutcome<'_> {
    pub(crate) fn code(&self) -> Code {
        match self {
            StopOutcome::CancelledByUser(_) | StopOutcome::Cancelled => Code::Cancelled,
            StopOutcome::Yield => Code::UserMessage,
            StopOutcome::Complete => Code::Complete,
            StopOutcome::AllStoriesPass { .. } => Code::AllStoriesPass,
            StopOutcome::MaxIterations => Code::MaxIterations,
            StopOutcome::BudgetSpent(Budget::Tokens) => Code::TokenBudget,
            StopOutcome::BudgetSpent(Budget::Runtime) => Code::RuntimeBudget,
            StopOutcome::BudgetSpent(Budget::Cost) => Code::CostBudget,
            StopOutcome::Stalled => Code::Stalled,
            StopOutcome::Plateau => Code::Plateau,
            // A story's review refused it only once its checks passed.
            StopOutcome::ReviewRejected(_)
            | StopOutcome::Story {
                review: Some(_), ..
            } => Code::ReviewRejected,
            StopOutcome::ReviewsExhausted(_) => Code::ReviewsExhausted,
            StopOutcome::Blocked(_) | StopOutcome::StillBlocked(_) => Code::Blocked,
            StopOutcome::Deadlock(_) => Code::Deadlock,
            StopOutcome::StoryStuck(_) => Code::StoryStuck,
            StopOutcome::Prompt { refused: None, .. } => Code::Continue,
            StopOutcome::Prompt {
                refused: Some(r), ..
            }
            | StopOutcome::FinalCheckFailed(r)
                if !r.inventory.is_empty() =>
            {
                Code::TestsGone
            }
            StopOutcome::Prompt {
                refused: Some(_), ..
            }
            | StopOutcome::FinalCheckFailed(_)
            | StopOutcome::Story {
                refused: Some(_), ..
            } => Code::VerifyFailed,
            StopOutcome::PrdInvalid(_) => Code::PrdInvalid,
            StopOutcome::Vanished(_) => Code::StoriesVanished,
            StopOutcome::Story { standing, .. } if standing.early_promise.is_some() => {
                Code::PromiseRefused
            }
            StopOutcome::Story { .. } => Code::Story,
            StopOutcome::Dispatch { .. } => Code::Dispatched,
            StopOutcome::WaitForWorkers => Code::WorkerRunning,
        }
    }

    /// Whether the loop ends here.
    pub(crate) fn ends(&self) -> bool {
        matches!(
            self,
            StopOutcome::CancelledByUser(_)
                | StopOutcome::Cancelled
                | StopOutcome::Complete
                | StopOutcome::AllStoriesPass { .. }
                | StopOutcome::MaxIterations
                | StopOutcome::ReviewsExhausted(_)
                | StopOutcome::BudgetSpent(_)
                | StopOutcome::Stalled
                | StopOutcome::Plateau
                | StopOutcome::StoryStuck(_)
        )
    }

    /// The story the log line is about.
    pub(crate) fn story(&self) -> Option<String> {
        match self {
            StopOutcome::Story { story, .. } => Some(story.id.clone()),
            StopOutcome::Dispatch { stories, .. } => Some(crate::parallel::batch_names(stories)),
            StopOutcome::StoryStuck(key) => Some(key.as_str().to_string()),
            StopOutcome::Blocked(b) => (!b.story_id.is_empty()).then(|| b.story_id.clone()),
            _ => None,
        }
    }
}

/// The judgement of a Stop: what happens, and what it changes besides.
#[derive(Debug, Clone)]
pub(crate) struct Judgement<'a> {
    pub outcome: StopOutcome<'a>,
    /// The new re-injection counter, to be written.
    pub injected: Option<Injected>,
    /// The blocker's story passes, or the blocker is ignored: the blocker
    /// file is removed.
    pub remove_blocker: bool,
    /// Why a blocker was ignored, for the model.
    pub(crate) ignored_blocker: Option<IgnoredBlocker>,
}

/// Why `.ralph-blocker.md` did not pause the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IgnoredBlocker {
    /// Only a PRD loop can be paused by a blocker.
    PlainMode,
    /// It names no story (`story_id:`), or one the PRD does not have.
    NoSuchStory(String),
}

/// The rules, in their order (see the module's doc).
pub(crate) fn judge<'a>(cx: &StopContext<'a>) -> Judgement<'a> {
    if cx.workers == Workers::AllBusy {
        return alone(StopOutcome::WaitForWorkers);
    }
    match cx.queue {
        QueueAction::Cancel { typed } => return alone(StopOutcome::CancelledByUser(typed)),
        QueueAction::Yield { .. } => return alone(StopOutcome::Yield),
        QueueAction::Answer { .. } | QueueAction::None => {}
    }
    if !cx.state.active {
        return alone(StopOutcome::Cancelled);
    }
    if let Some(why) = &cx.state.blocked {
        return alone(StopOutcome::StillBlocked(why));
    }
    match cx.prd {
        None => judge_plain(cx),
        Some(Err(why)) => match cap_reached(cx.state) {
            Some(end) => alone(end),
            None => feed(cx, FeedKey::PrdInvalid, StopOutcome::PrdInvalid(why), false),
        },
        Some(Ok(prd)) => judge_prd(cx, prd),
    }
}

fn judge_plain<'a>(cx: &StopContext<'a>) -> Judgement<'a> {
    let refused = match cx.completion {
        Completion::Complete => match reviewed(cx, StopOutcome::Complete) {
            Reviewed::Done(j) => return j,
            Reviewed::Feed(outcome) => {
                return match limit_reached(cx) {
                    Some(end) => alone(end),
                    None => alone(outcome),
                };
            }
        },
        Completion::Refused(refusal) => Some(refusal),
        Completion::NotClaimed => None,
    };
    let ignored_blocker = cx.blocker.map(|_| IgnoredBlocker::PlainMode);
    if let Some(end) = limit_reached(cx) {
        return alone(end);
    }
    let mismatched_tag = refused.is_none()
        && cx.state.completion_promise.is_some()
        && promise::has_any_tag(cx.said.unwrap_or(""));
    Judgement {
        outcome: StopOutcome::Prompt {
            refused,
            mismatched_tag,
        },
        injected: None,
        remove_blocker: ignored_blocker.is_some(),
        ignored_blocker,
    }
}

fn judge_prd<'a>(cx: &StopContext<'a>, judged: &'a JudgedPrd<'a>) -> Judgement<'a> {
    let prd = judged.prd.as_ref();
    let (remove_blocker, ignored_blocker) = match blocker_rule(cx, prd) {
        Ok(found) => found,
        Err(blocker) => return alone(StopOutcome::Blocked(blocker)),
    };
    // What is fed, with the blocker's removal and why it was ignored.
    let fed = |key, outcome| {
        with_ignored(
            feed(cx, key, outcome, remove_blocker),
            ignored_blocker.clone(),
        )
    };
    match cx.completion {
        Completion::Complete => {
            let total = prd.stories.len();
            return match reviewed(cx, StopOutcome::AllStoriesPass { total }) {
                Reviewed::Done(j) => Judgement {
                    remove_blocker,
                    ignored_blocker: ignored_blocker.clone(),
                    ..j
                },
                Reviewed::Feed(outcome) => match limit_reached(cx) {
                    Some(end) => alone(end),
                    None => fed(FeedKey::Review, outcome),
                },
            };
        }
        Completion::Refused(refusal) => {
            return match limit_reached(cx) {
                Some(end) => alone(end),
                None => fed(FeedKey::FinalCheck, StopOutcome::FinalCheckFailed(refusal)),
            };
        }
        Completion::NotClaimed => {}
    }
    if let Some(end) = limit_reached(cx) {
        return alone(end);
    }
    let standing = prd_progress(cx, judged);
    if cx.state.parallel > 0 {
        let stories = crate::parallel::pick(prd, cx.in_flight, cx.state.parallel);
        if !stories.is_empty() {
            let key = FeedKey::Story(crate::parallel::batch_key(&stories));
            return fed(key, StopOutcome::Dispatch { stories, standing });
        }
        if cx.workers != Workers::Idle {
            return alone(StopOutcome::WaitForWorkers);
        }
    }
    let Some(story) = prd.next_runnable() else {
        if !standing.vanished.is_empty() {
            return fed(FeedKey::Vanished, StopOutcome::Vanished(standing));
        }
        return fed(
            FeedKey::Deadlock,
            StopOutcome::Deadlock(prd.unmet_dependencies()),
        );
    };
    let outcome = StopOutcome::Story {
        story,
        standing,
        refused: judged.refused.get(&story.id),
        review: judged.review_refused.get(&story.id),
    };
    fed(FeedKey::Story(story.id.clone()), outcome)
}

/// PRD mode: what the blocker does. A blocker naming a failing story holds
/// the loop (`Err`, that blocker); else whether the blocker file is
/// removed (its story passes, or it names none of the PRD's) and why it
/// was ignored.
fn blocker_rule<'a>(
    cx: &StopContext<'a>,
    prd: &Prd,
) -> Result<(bool, Option<IgnoredBlocker>), &'a Blocker> {
    let Some(blocker) = cx.blocker else {
        return Ok((false, None));
    };
    match prd.story(&blocker.story_id) {
        Some(story) if story.passes => Ok((true, None)),
        Some(_) => Err(blocker),
        None => Ok((
            true,
            Some(IgnoredBlocker::NoSuchStory(blocker.story_id.clone())),
        )),
    }
}

/// How far the PRD is: its passing stories, the vanished ones, and a
/// completion promise printed while some still fail.
fn prd_progress<'a>(cx: &StopContext<'a>, judged: &'a JudgedPrd<'a>) -> PrdProgress<'a> {
    let prd = judged.prd.as_ref();
    let (passing, total) = prd.progress();
    let vanished = judged.vanished.as_slice();
    let early_promise = completion::promise_kept(cx.state, cx.said).then(|| {
        let failing = prd.stories.iter().filter(|s| !s.passes);
        let ids = failing.map(|s| s.id.as_str());
        ids.chain(vanished.iter().map(String::as_str)).collect()
    });
    PrdProgress {
        passing,
        total: total + vanished.len(),
        vanished,
        early_promise,
    }
}

/// The judgement, with the model told why its blocker was ignored.
fn with_ignored(j: Judgement, ignored_blocker: Option<IgnoredBlocker>) -> Judgement {
    Judgement {
        ignored_blocker,
        ..j
    }
}

/// Feed `outcome`, counting consecutive feeds of `key`; stop when the same
/// key was fed more than `max_story_attempts` times in a row.
fn feed<'a>(
    cx: &StopContext,
    key: FeedKey,
    outcome: StopOutcome<'a>,
    remove_blocker: bool,
) -> Judgement<'a> {
    let injected = Injected::next(cx.last_injected, key.as_str());
    if injected.count > cx.state.max_story_attempts {
        return Judgement {
            outcome: StopOutcome::StoryStuck(key),
            injected: None,
            remove_blocker,
            ignored_blocker: None,
        };
    }
    Judgement {
        outcome,
        injected: Some(injected),
        remove_blocker,
        ignored_blocker: None,
    }
}

/// A completion that stands, through its review (`--review`).
enum Reviewed<'a> {
    /// Decided: complete (approved, or no review), or stopped (rejected too often).
    Done(Judgement<'a>),
    /// Rejected: fed back with the findings.
    Feed(StopOutcome<'a>),
}

fn reviewed<'a>(cx: &StopContext<'a>, complete: StopOutcome<'a>) -> Reviewed<'a> {
    match cx.review {
        ReviewStage::Off | ReviewStage::Approved(_) => Reviewed::Done(alone(complete)),
        ReviewStage::Rejected(s) => Reviewed::Feed(StopOutcome::ReviewRejected(s)),
        ReviewStage::Exhausted(s) => Reviewed::Done(alone(StopOutcome::ReviewsExhausted(s))),
    }
}

/// The cap first: when several apply on the same turn, the user's own limit
/// is the reason to give. Then the budgets, then the no-progress breaker,
/// then the plateau rule.
fn limit_reached<'a>(cx: &StopContext) -> Option<StopOutcome<'a>> {
    let state = cx.state;
    cap_reached(state)
        .or_else(|| {
            cx.budgets
                .spent(cx.elapsed_secs)
                .map(StopOutcome::BudgetSpent)
        })
        .or_else(|| {
            (state.max_stalls > 0 && cx.stalls >= state.max_stalls).then_some(StopOutcome::Stalled)
        })
        .or_else(|| {
            cx.scored
                .is_some_and(|s| s.plateaued(state.max_plateau))
                .then_some(StopOutcome::Plateau)
        })
}

fn cap_reached<'a>(state: &LoopState) -> Option<StopOutcome<'a>> {
    (state.max_iterations > 0 && state.iteration >= state.max_iterations)
        .then_some(StopOutcome::MaxIterations)
}

fn alone(outcome: StopOutcome) -> Judgement {
    Judgement {
        outcome,
        injected: None,
        remove_blocker: false,
        ignored_blocker: None,
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
