//! One Stop of a Ralph loop, as a pipeline:
//!
//! ```text
//! stdin ─▶ gather ─▶ plan ─▶ (checks, outside the lock) ─▶ decide ─▶ apply ─▶ stdout
//! ```
//!
//! - [`inputs`]: `StopInputs::gather`, the one place that reads files for a
//!   Stop, with the rules for what it reads (whose loop, when to look at the
//!   working tree).
//! - [`plan`]: pure; what to do about messages the user queued meanwhile,
//!   the stall count, which checks run first and which results are reused.
//! - [`completion`]: pure; when a loop is complete, the one place that says it.
//! - [`workers`]: pure; when a Stop waits for the loop's workers (the one
//!   rule the plan works out and `decide` and `apply` follow).
//! - [`decide`]: pure; the rules in their order, giving an `StopOutcome`, and
//!   what happens next ([`next`]: `Then`); [`decision`] words it with `text`.
//! - [`text`]: every word the model or the user reads, and only words.
//! - [`apply`]: the one place that writes (with `--parallel`, also what
//!   `gather` found of workers gone: their lanes, worktrees, stray branches).
//!
//! A Stop delivered twice for one turn (the same `gather::turn_key`) is
//! answered again without advancing anything.
//!
//! [`step`] runs one pass under the loop lock. When the plan has checks to
//! run, the pass stops there: the binary releases the lock (a cancel must
//! not wait for a test suite), runs them, and calls `step` again, which
//! reads the state afresh with their results.
//! Does I/O: gather and apply, under the lock (the checks it hands back run in the binary).

pub(crate) mod apply;
pub mod completion;
pub(crate) mod decide;
pub mod gather;
pub mod jobs;
pub(crate) mod measure;
pub(crate) mod next;
pub mod plan;
pub(crate) mod suite_claims;
pub mod text;
pub(crate) mod workers;

use crate::hook_input::HookInput;
use crate::hook_output::HookOutput;
use crate::notify::Pending;
use crate::paths::LoopPaths;
use crate::pins::disk::Guarded;
use crate::queued::QueueAction;
use crate::review;
use crate::state::LoopState;
use crate::store::StoreError;
use crate::tamper;
use crate::transcript::{self, Awaited, Written};
use completion::Completion;
use decide::{Decision, StopContext};
use gather::{Gathered, StopInputs};
use jobs::Jobs;
use plan::{Plan, Ran};
use std::cell::OnceCell;
use std::time::Duration;

/// How many passes of [`step`] a Stop makes at most: round 1 may find a
/// Stop that looks like the last one answered and wait for the client to
/// write a newer turn ([`Step::AwaitNewerTurn`]), the next may run story
/// checks and the iteration's score (`measure`), then the reviews of the
/// stories that now pass them (`--review story`), the loop's own check
/// (whether completion is claimed can depend on the stories), the final
/// reviewers (once completion stands), and the last decides.
/// `docs/architecture.md` says the same (a test holds the two together).
pub const MAX_ROUNDS: usize = 6;

/// How long a Stop waits for the client to write the turn it ends to the
/// transcript. Measured on 2.1.328 (docs/client-measurements.md, 250
/// Stops): the turn's last line landed up to 90 ms after the hook started
/// under `-p` on a quiet machine (107 in an earlier sample), up to 89 ms
/// with both cores loaded, up to 118 ms in the interactive client; 2.1.332
/// writes it before the hook starts. About nine times the slowest seen, and
/// short beside a model's turn; a Stop that passes it is decided on the
/// client's words and logged (`transcript_late_ms`).
pub(crate) const TRANSCRIPT_BOUND: Duration = Duration::from_millis(1_000);

/// The Stop's transcript once it holds the turn the client says ended (its
/// `last_assistant_message` as the newest text), or once the bound passed.
/// Waited for before the lock is taken: nothing else waits on it.
pub fn await_transcript(input: &HookInput) -> Written {
    let awaited = input
        .last_assistant_message
        .as_deref()
        .map_or(Awaited::Nothing, Awaited::LastText);
    let path = input.transcript_path.as_deref().map(std::path::Path::new);
    transcript::written(path, awaited, TRANSCRIPT_BOUND)
}

/// The Stop's transcript once it holds a turn newer than the line the last
/// Stop answered (`answered`, from [`Step::AwaitNewerTurn`]) that ends with
/// the words the client handed over, or once the bound passed with none
/// (`Written::found_no_newer`: the turn that ended is the one answered, a
/// Stop delivered twice). Waited for with the lock released.
pub fn await_newer_turn(input: &HookInput, answered: &str) -> Written {
    let text = input.last_assistant_message.as_deref().unwrap_or("");
    let awaited = Awaited::LastTextPast { text, answered };
    let path = input.transcript_path.as_deref().map(std::path::Path::new);
    transcript::written(path, awaited, TRANSCRIPT_BOUND)
}

/// Where a pass of [`step`] got to.
#[derive(Debug)]
pub enum Step {
    /// Decided and applied: the hook's answer.
    Done(HookOutput),
    /// These checks must run (outside the lock) before the Stop is decided.
    RunChecks(Jobs),
    /// The turn read is the one the last Stop answered (its line, this
    /// `uuid`, and its words): a Stop delivered twice, or a new turn that
    /// ends with the same words and is not written yet (2.1.328 writes a
    /// turn after its Stop hooks start). Wait for a newer line with the
    /// lock released ([`await_newer_turn`]), then step again.
    AwaitNewerTurn(String),
}

/// One pass of a Stop, under the loop lock; `ran` holds the checks of earlier passes.
/// The first pass that finds this session's loop sets `notify` (its
/// `--notify` command, with the log as it was before this Stop wrote to it).
pub fn step(
    paths: &LoopPaths,
    input: &HookInput,
    transcript: &Written,
    ran: &Ran,
    notify: &OnceCell<Option<Pending>>,
) -> Result<Step, StoreError> {
    let inputs = match StopInputs::gather(paths, input, transcript)? {
        Gathered::NotOurs => return Ok(Step::Done(HookOutput::Nothing)),
        Gathered::Corrupt(corrupt) => {
            return apply::corrupt(paths, input.session(), &corrupt).map(Step::Done);
        }
        Gathered::Tampered(t) => {
            let reader = gather::reader(paths);
            return Ok(Step::Done(tamper::answer(
                paths,
                input.session(),
                &t,
                reader,
            )));
        }
        Gathered::Loop(inputs) => inputs,
    };
    notify.get_or_init(|| Pending::for_loop(paths, inputs.state.notify.as_deref()));
    // Whether the Stop waits for its workers is the plan's (`workers::Workers`):
    // a Stop that waits is no duplicate and runs no check.
    let mut plan = Plan::new(&inputs, ran);
    if plan.duplicate
        && !transcript.found_no_newer()
        && let Some(line) = &inputs.newest_line
    {
        return Ok(Step::AwaitNewerTurn(line.clone()));
    }
    if plan.duplicate {
        let again = repeat_decision(&inputs, &plan);
        return Ok(Step::Done(apply::repeat(paths, &inputs, again)));
    }
    if let Some(jobs) = plan.jobs.take() {
        // Workers gone are cleaned up before the checks run, as at every round.
        apply::workers(paths, &inputs);
        return Ok(Step::RunChecks(jobs));
    }
    let decision = decision(&StopContext::new(&inputs, &plan));
    let out = apply::apply(paths, &inputs, &plan, decision)?;
    Ok(Step::Done(apply::answer_queued(paths, out, &plan.queue)))
}

/// Decide one Stop of a loop this session owns: judge, then word it.
pub(crate) fn decision(cx: &StopContext) -> Decision {
    text::render(cx, decide::judge(cx))
}

/// A second Stop for the turn the last Stop answered: that answer, judged
/// again from the loop as it was before it advanced (its iteration, stall
/// count and budgets as saved), with no check run and nothing claimed.
fn repeat_decision(inputs: &StopInputs, plan: &Plan) -> Decision {
    let state = &inputs.state;
    let rewound = LoopState {
        iteration: state.iteration.saturating_sub(1).max(1),
        ..state.clone()
    };
    decision(&StopContext {
        state: &rewound,
        completion: &Completion::NotClaimed,
        queue: &QueueAction::None,
        stalls: state.stalls,
        budgets: &state.budgets,
        ..StopContext::new(inputs, plan)
    })
}

impl Jobs {
    /// Run the checks in the project (no lock held), adding their results
    /// to `ran`; `pins` says what was put back before them (see
    /// `pins::disk::before_checks`).
    pub fn run(self, paths: &LoopPaths, pins: &Guarded, ran: &mut Ran) {
        let root = &paths.root;
        // A claim's baselines first: taken on the starting tree, they do
        // not wait on the checks of this one.
        for command in &self.baselines {
            crate::suite::baseline::await_or_take(paths, command);
            ran.baselines_awaited.push(command.clone());
        }
        ran.stories_done = true;
        let reports = Some(paths.reports.as_path());
        let check =
            |cmd: &str| pins.run_check(root, cmd, self.timeout, self.fingerprint.clone(), reports);
        for (id, cmd) in &self.stories {
            ran.stories.push((id.clone(), check(cmd)));
        }
        if let Some(cmd) = &self.loop_verify {
            ran.loop_check = Some(check(cmd));
        }
        if let Some(measure) = self.score.clone() {
            let result = check(&measure.command);
            // A test that passed before and fails now is run again once,
            // on the same tree, before it is named: one that passes then
            // is flaky.
            let rerun = regresses(paths, &measure, &result).then(|| check(&measure.command));
            ran.score = Some(score_run(paths, measure, (result, rerun), self.iteration));
        }
        if let Some(r) = self.reviews {
            if r.stories {
                ran.story_reviews_done = true;
            } else {
                ran.reviews_done = true;
            }
            // The `--review-cmd` program is pinned like a check's files: a
            // pinned copy ralph did not write runs no review.
            let verdicts = if r.command.is_some() && !pins.untrusted.is_empty() {
                let why = format!(
                    "ralph did not run the review command: its pinned copy of {} in the loop's folder was changed outside ralph",
                    pins.untrusted.join(", ")
                );
                review::reviewers::not_run(&r.reviews, &why, self.fingerprint.as_deref())
            } else {
                review::reviewers::review_all(
                    paths,
                    &r.reviews,
                    r.command.as_deref(),
                    r.timeout,
                    self.fingerprint.as_deref(),
                )
            };
            ran.reviews.extend(verdicts);
        }
    }
}

/// A score run's tree recorded (ralph's commit of it, `refs/ralph/best`
/// moved to it when it is the measure's best), and, for each earlier
/// iteration a test failing now passed at, the files changed since. Outside
/// the lock: git may take a while on a large tree.
fn score_run(
    paths: &LoopPaths,
    measure: measure::Measure,
    (result, rerun): (
        crate::verify::CheckResult,
        Option<crate::verify::CheckResult>,
    ),
    iteration: u64,
) -> measure::ScoreRun {
    use crate::score::tree;
    let label = result
        .score
        .as_ref()
        .map_or_else(|| "no score".to_string(), |s| s.label());
    let message = format!(
        "ralph: iteration {iteration}, {label}\n\n{}",
        measure.command
    );
    let (tree, commit) = tree::snapshot(&paths.root, &message).unzip();
    let history = crate::score::history::read(&paths.scores);
    let score = result.score_as(measure.numbered);
    if let Some(c) = &commit
        && history.would_be_best(&measure.command, measure.story.as_deref(), &score)
    {
        tree::set_best(&paths.root, c);
    }
    let mut changed: Vec<(u64, Vec<String>)> = Vec::new();
    for r in history.regressions(&score) {
        if changed.len() >= 3 || changed.iter().any(|(i, _)| *i == r.passed_at) {
            continue;
        }
        if let (Some(then), Some(now)) = (&r.tree, &tree) {
            changed.push((r.passed_at, tree::changed(&paths.root, then, now)));
        }
    }
    measure::ScoreRun {
        measure,
        result,
        tree,
        commit,
        changed,
        rerun,
    }
}

/// Whether the run names a test that passed at an earlier iteration (and
/// is not known to be flaky).
fn regresses(
    paths: &LoopPaths,
    measure: &measure::Measure,
    result: &crate::verify::CheckResult,
) -> bool {
    let score = result.score_as(measure.numbered);
    !score.failing.is_empty()
        && !crate::score::history::read(&paths.scores)
            .regressions(&score)
            .is_empty()
}
