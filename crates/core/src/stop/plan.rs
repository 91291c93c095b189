//! The plan of one Stop, from its inputs: pure. What to do about messages the
//! user queued meanwhile, how many turns in a row left the tree unchanged,
//! which checks must run before deciding (and which results are reused),
//! the verdict on completion (see `completion`), and the state the Stop
//! leaves. (Who owns the loop and when the tree is looked at decide what is
//! read: they are `inputs`' rules.)
//! Pure.

use super::completion::{self, Completion, JudgedPrd};
use super::gather::{StopInputs, queue_action};
use super::jobs::{Jobs, ReviewJob};
use super::measure::{self, ScoreRun, Scored};
use super::suite_claims;
use super::workers::Workers;
use crate::breaker::{self, TurnEffect};
use crate::budget::{self, Budgets};
use crate::prd::Prd;
use crate::prd::PrdReadError;
use crate::queued::{self, QueueAction};
use crate::records::{LoopRecord, RecordGens};
use crate::review::reviewers::Brief;
use crate::review::{self, ReviewLog, ReviewVerdict, Standing};
use crate::state::LoopState;
use crate::verify::{CheckResult, VerifyLog};
use std::time::Duration;

/// Checks run in earlier rounds of this Stop.
#[derive(Debug, Default)]
pub struct Ran {
    /// The story checks have run (they run once per Stop).
    pub stories_done: bool,
    pub stories: Vec<(String, CheckResult)>,
    pub loop_check: Option<CheckResult>,
    /// The final reviewers ran (once per Stop).
    pub reviews_done: bool,
    /// The story reviewers ran (once per Stop).
    pub story_reviews_done: bool,
    /// The verdicts of either, by reviewer (`story:ID` for a story's).
    pub reviews: Vec<(String, ReviewVerdict)>,
    /// The measure's score, once it ran (once per Stop).
    pub(crate) score: Option<ScoreRun>,
    /// The commands whose baseline this Stop waited for (or took): once.
    pub(crate) baselines_awaited: Vec<String>,
    /// The agent's processes that held the loop's lock, stopped to take
    /// it (`lock_holders`), in words: told and logged by `apply`.
    pub lock_freed: Vec<String>,
}

impl Ran {
    /// Checks ran at this Stop: their results are saved.
    fn checks(&self) -> bool {
        self.stories_done || self.loop_check.is_some() || self.score.is_some()
    }

    /// Reviewers ran at this Stop: their verdicts are saved.
    fn saves_reviews(&self) -> bool {
        self.reviews_done || self.story_reviews_done
    }
}

/// Where the review of a completion claim stands (`--review`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewStage {
    /// No review: completion stands on its own.
    Off,
    /// Every reviewer approved the current tree.
    Approved(Standing),
    /// A reviewer rejected it (or gave no verdict); rounds are left.
    Rejected(Standing),
    /// Still rejected after `max_reviews` rounds.
    Exhausted(Standing),
}

/// What a Stop will do before deciding, and what it found.
#[derive(Debug)]
pub struct Plan<'a> {
    /// This session takes a loop no session owned yet.
    pub claims: bool,
    /// What this Stop does about the user's queued messages.
    pub queue: QueueAction,
    /// The newest queued message acted on, remembered so it is acted on once.
    pub queue_seen: Option<String>,
    /// Iterations in a row, this one included, that left the tree unchanged.
    pub stalls: u32,
    /// The check results on file, with this Stop's.
    pub verify_log: VerifyLog,
    /// Checks ran at this Stop: the log is saved.
    pub ran_checks: bool,
    /// Reviewers ran at this Stop: the verdicts on file with theirs, to save.
    pub reviews_to_save: Option<ReviewLog>,
    /// Review rounds run so far, this Stop's included.
    pub review_rounds: u32,
    /// Where the review of a completion claim stands.
    pub(crate) review: ReviewStage,
    /// PRD mode: the PRD as the loop judges it, or why it cannot be read.
    pub prd: Option<Result<JudgedPrd<'a>, &'a PrdReadError>>,
    pub completion: Completion,
    /// Checks to run first; the Stop is decided once they have run.
    pub(crate) jobs: Option<Jobs>,
    /// A second Stop for the turn the last Stop answered (the same
    /// `turn_key`): it is answered again and nothing advances.
    pub duplicate: bool,
    /// How busy the loop's workers are: whether the Stop waits for them.
    pub(crate) workers: Workers,
    /// The budgets with this turn's tokens and cost added.
    pub budgets: Budgets,
    /// Seconds since the loop started (`None` when its start is not known).
    pub elapsed_secs: Option<u64>,
    /// The iteration's score and what it means (`stop::measure`), when
    /// this Stop scored one.
    pub(crate) scored: Option<Scored>,
    /// The generation of each record once this Stop's are written (the
    /// state saved holds it: `records`).
    pub(crate) records: RecordGens,
    /// The suite's memory with this Stop's runs (`stop::suite_claims`), to save.
    pub(crate) suite_to_save: Option<crate::suite::Suite>,
    /// A standing claim: the tests that failed at the baseline and pass
    /// now (named at the end when their file changed: `suite::changed`).
    pub(crate) turned: Vec<crate::suite::changed::Candidate>,
    /// The agent's processes that held the loop's lock, stopped (`Ran`).
    pub(crate) lock_freed: Vec<String>,
}

impl<'a> Plan<'a> {
    pub fn new(inputs: &'a StopInputs, ran: &Ran) -> Plan<'a> {
        let state = &inputs.state;
        let fingerprint = inputs.fingerprint.as_deref();
        let workers = Workers::of(state, &inputs.in_flight, inputs.fresh_worker);
        // Every place taken: the Stop waits, whatever else it is.
        let duplicate = is_duplicate(inputs) && workers != Workers::AllBusy;
        // Nor is the queue acted on then: the next Stop that decides does.
        let (queue, queue_seen) = queue_of(inputs, duplicate || workers == Workers::AllBusy);
        let stalls = stalls(inputs);
        let (log, review_log) = logs_with(inputs, ran);
        let prd = judged_prd(inputs, &log, &review_log);
        // A queued cancel or message is acted on at once, a duplicate Stop
        // is answered again: no check runs. Nor while workers run: their
        // merges change the tree under a check (each merged story was
        // checked in the merge queue; all of them are again at the end).
        let not_now = queue.preempts() || duplicate || workers != Workers::Idle;
        let no_checks = ran.stories_done || not_now;
        let score_job = measure::job(inputs, ran.score.is_some() || not_now);
        let story_jobs = match (&inputs.prd, no_checks) {
            (Some(Ok(p)), false) => stories_to_check(p, &log, fingerprint),
            _ => Vec::new(),
        };
        let claimed = claimed(inputs, prd.as_ref());
        let loop_check = ran
            .loop_check
            .as_ref()
            .or_else(|| reusable_loop_check(state, &log, fingerprint));
        // After the score: the same command on the same tree is not run twice.
        let loop_verify = state
            .verify
            .clone()
            .filter(|_| claimed && loop_check.is_none() && story_jobs.is_empty())
            .filter(|_| !queue.preempts() && !duplicate && score_job.is_none());
        let quiet = story_jobs.is_empty() && !queue.preempts() && !duplicate;
        let story_review = story_review_due(inputs, prd.as_ref(), ran, quiet);
        let loop_verify = loop_verify.filter(|_| story_review.is_none());
        let baselines = suite_claims::baselines_due(inputs, ran, claimed && !not_now);
        let due = (story_jobs, loop_verify, story_review, score_job, baselines);
        let jobs = Jobs::of(inputs, due);
        let budgets = state.budgets_after(&inputs.usage);
        let scored = (!not_now && jobs.is_none())
            .then(|| measure::of_stop(inputs, ran.score.as_ref(), &budgets))
            .flatten();
        let (completion, turned) =
            verdict(inputs, ran, &log, (claimed, loop_check), scored.as_ref());
        let quiet = jobs.is_none() && !(queue.preempts() || duplicate);
        let (review, jobs) =
            review_due(inputs, &completion, quiet, &review_log, ran, &turned, jobs);
        let suite_to_save = suite_claims::suite_after(inputs, ran).filter(|_| jobs.is_none());
        Plan {
            lock_freed: ran.lock_freed.clone(),
            turned,
            records: records_after(inputs, ran, scored.is_some(), suite_to_save.is_some()),
            suite_to_save,
            scored,
            claims: state.session_id.is_empty() && !inputs.session.is_empty(),
            queue,
            queue_seen,
            stalls,
            ran_checks: ran.checks(),
            review_rounds: review_log.rounds,
            reviews_to_save: ran.saves_reviews().then_some(review_log),
            review,
            verify_log: log,
            prd,
            completion,
            // Nothing runs while the Stop waits for its workers.
            jobs: jobs.filter(|_| workers != Workers::AllBusy),
            duplicate,
            workers,
            budgets,
            elapsed_secs: budget::elapsed_secs(state.started_at.as_deref(), inputs.now),
        }
    }
}

/// The records' generations once this Stop's writes are made: the state's,
/// or a newer one found in a record's seal (written after the state was
/// saved), and one generation above them all for each record it writes.
fn records_after(inputs: &StopInputs, ran: &Ran, scores: bool, suite: bool) -> RecordGens {
    let found = inputs
        .records_found
        .with(LoopRecord::Suite, inputs.suite_found);
    let known = inputs.state.records.max(found);
    let next = known.next();
    [
        (LoopRecord::Verify, ran.checks()),
        (LoopRecord::Review, ran.saves_reviews()),
        (LoopRecord::Scores, scores),
        (LoopRecord::Suite, suite),
    ]
    .into_iter()
    .filter(|(_, writes)| *writes)
    .fold(known, |gens, (record, _)| gens.with(record, next))
}

/// The verdict on completion: the claim (and the loop's check on this
/// tree, `claim.1`), then the tests that passed before and fail now, then
/// the suite's inventory; for a claim that stands, the tests that failed
/// at the baseline and pass now (named when their file changed).
fn verdict(
    inputs: &StopInputs,
    ran: &Ran,
    log: &VerifyLog,
    claim: (bool, Option<&CheckResult>),
    scored: Option<&Scored>,
) -> (Completion, Vec<crate::suite::changed::Candidate>) {
    let completion = completion::judge(&inputs.state, claim.0, claim.1);
    let completion = measure::with_regressions(completion, scored, inputs);
    if completion != Completion::Complete {
        return (completion, Vec::new());
    }
    let findings = suite_claims::findings(inputs, ran, log);
    let completion = suite_claims::with_inventory(completion, &findings);
    let turned = match completion {
        Completion::Complete => suite_claims::turned(inputs, ran, log),
        _ => Vec::new(),
    };
    (completion, turned)
}

/// Whether this turn claims completion (the promise, or every story).
fn claimed(inputs: &StopInputs, prd: Option<&Result<JudgedPrd, &PrdReadError>>) -> bool {
    let prd = prd.map(|p| p.as_ref().map_err(|e| *e));
    completion::claimed(&inputs.state, inputs.said.as_deref(), prd)
}

/// PRD mode: the PRD as the loop judges it (with the stories' reviews under
/// `--review story`), or why it cannot be read.
fn judged_prd<'a>(
    inputs: &'a StopInputs,
    log: &VerifyLog,
    review_log: &ReviewLog,
) -> Option<Result<JudgedPrd<'a>, &'a PrdReadError>> {
    let state = &inputs.state;
    inputs.prd.as_ref().map(|read| {
        read.as_ref().map(|prd| {
            let judged = JudgedPrd::new(prd, state, log);
            if state.review.reviews_stories() {
                judged.with_story_reviews(review_log, inputs.fingerprint.as_deref())
            } else {
                judged
            }
        })
    })
}

/// What the user's queued messages ask (nothing for a Stop that does not
/// decide: a duplicate, or one waiting for its workers), and the newest one seen.
fn queue_of(inputs: &StopInputs, not_now: bool) -> (QueueAction, Option<String>) {
    let state = &inputs.state;
    let queue = if not_now {
        QueueAction::None
    } else {
        queue_action(state, &inputs.queued)
    };
    let seen = match queue {
        QueueAction::None => state.queue_seen.clone(),
        _ => queued::newest(&inputs.queued).map(str::to_string),
    };
    (queue, seen)
}

/// The no-progress count after this turn. The turn after a yield answered
/// the user: it is not judged as work.
fn stalls(inputs: &StopInputs) -> u32 {
    let state = &inputs.state;
    if state.yielded {
        return state.stalls;
    }
    breaker::stalls_after(
        inputs.effect,
        state.stalls,
        inputs.fingerprint.as_deref(),
        state.last_fingerprint.as_deref(),
    )
}

/// The check results and review verdicts as saved, with this Stop's runs in.
fn logs_with(inputs: &StopInputs, ran: &Ran) -> (VerifyLog, ReviewLog) {
    let mut log = inputs.verify_log.clone();
    for (id, result) in &ran.stories {
        log.stories.insert(id.clone(), result.clone());
    }
    if let Some(r) = &ran.loop_check {
        log.r#loop = Some(r.clone());
    } else if let Some(s) = &ran.score
        && Some(&s.result.command) == inputs.state.verify.as_ref()
    {
        // The loop's check ran as the score: its result on this tree.
        log.r#loop = Some(s.result.clone());
    }
    let mut review_log = inputs.review_log.clone();
    if ran.reviews_done {
        review_log.rounds = review_log.rounds.saturating_add(1);
    }
    for (name, verdict) in &ran.reviews {
        review_log.verdicts.insert(name.clone(), verdict.clone());
    }
    (log, review_log)
}

/// The review of a claim, once completion stands, the loop has final
/// reviewers and nothing else runs first (`quiet`): where it stands, and
/// the reviewers to run; else no review and `jobs` as they are.
fn review_due(
    inputs: &StopInputs,
    completion: &Completion,
    quiet: bool,
    log: &ReviewLog,
    ran: &Ran,
    turned: &[crate::suite::changed::Candidate],
    jobs: Option<Jobs>,
) -> (ReviewStage, Option<Jobs>) {
    let reviewers = !inputs.state.review.final_reviewers().is_empty();
    if *completion == Completion::Complete && reviewers && quiet {
        review_stage(inputs, log, ran.reviews_done, turned)
    } else {
        (ReviewStage::Off, jobs)
    }
}

/// Where the review of a standing completion claim is: its verdicts on this
/// tree (those this Stop ran count whatever the tree), or the reviewers to
/// run now, or, with no round left, the last verdicts.
fn review_stage(
    inputs: &StopInputs,
    log: &ReviewLog,
    ran_now: bool,
    turned: &[crate::suite::changed::Candidate],
) -> (ReviewStage, Option<Jobs>) {
    let config = &inputs.state.review;
    let reviewers = config.final_reviewers();
    let fingerprint = inputs.fingerprint.as_deref();
    let on_this_tree = if ran_now {
        review::standing(log, &reviewers, None)
    } else {
        fingerprint.and_then(|f| review::standing(log, &reviewers, Some(f)))
    };
    let exhausted = log.rounds >= config.max_rounds;
    let gate = |s: Standing| {
        if s.all_approved() {
            ReviewStage::Approved(s)
        } else if exhausted {
            ReviewStage::Exhausted(s)
        } else {
            ReviewStage::Rejected(s)
        }
    };
    if let Some(s) = on_this_tree {
        return (gate(s), None);
    }
    if exhausted {
        // No round left for this tree: the last verdicts stand.
        let last = reviewers
            .iter()
            .filter_map(|n| log.verdicts.get(n).map(|v| (n.clone(), v.clone())))
            .collect();
        return (ReviewStage::Exhausted(Standing { verdicts: last }), None);
    }
    let names: Vec<String> = if fingerprint.is_some() {
        log.due(&reviewers, fingerprint)
            .into_iter()
            .map(str::to_string)
            .collect()
    } else {
        reviewers.clone()
    };
    let whole = Brief {
        turned: turned.to_vec(),
        ..brief(inputs)
    };
    let jobs = Jobs {
        stories: Vec::new(),
        loop_verify: None,
        score: None,
        baselines: Vec::new(),
        iteration: inputs.state.iteration,
        timeout: Duration::from_secs(inputs.state.verify_timeout),
        fingerprint: inputs.fingerprint.clone(),
        reviews: Some(ReviewJob {
            reviews: names.into_iter().map(|n| (n, whole.clone())).collect(),
            command: config.command.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            stories: false,
        }),
    };
    (ReviewStage::Off, Some(jobs))
}

/// A story that passes its checks is reviewed before anything else is
/// judged of it (`--review story`), once per Stop, when nothing else runs
/// first (`quiet`).
fn story_review_due(
    inputs: &StopInputs,
    prd: Option<&Result<JudgedPrd, &PrdReadError>>,
    ran: &Ran,
    quiet: bool,
) -> Option<ReviewJob> {
    let awaiting: &[String] = match prd {
        Some(Ok(j)) if quiet && !ran.story_reviews_done => &j.awaiting_review,
        _ => &[],
    };
    (!awaiting.is_empty()).then(|| story_review_job(inputs, awaiting))
}

/// The reviews of the stories that pass their checks and wait for one:
/// each told its own story and acceptance criteria.
fn story_review_job(inputs: &StopInputs, awaiting: &[String]) -> ReviewJob {
    let state = &inputs.state;
    let prd = inputs.prd.as_ref().and_then(|p| p.as_ref().ok());
    let reviews = awaiting
        .iter()
        .filter_map(|id| prd.and_then(|p| p.story(id)))
        .map(|s| {
            let mut task = format!("Story {}: {}\n", s.id, s.title);
            if !s.description.trim().is_empty() {
                task.push_str(&format!("{}\n", s.description.trim()));
            }
            let brief = Brief {
                task,
                acceptance_criteria: s.acceptance_criteria.clone(),
                base: state.review.base.clone(),
                turned: Vec::new(),
            };
            (review::story_key(&s.id), brief)
        })
        .collect();
    ReviewJob {
        reviews,
        command: state.review.command.clone(),
        timeout: Duration::from_secs(state.review.timeout_secs),
        stories: true,
    }
}

/// What the reviewers are told the loop was for: the task, or every story
/// of the PRD with its acceptance criteria.
pub(crate) fn brief(inputs: &StopInputs) -> Brief {
    let state = &inputs.state;
    let (task, acceptance_criteria) = match &inputs.prd {
        Some(Ok(prd)) => {
            let mut task = format!("{}\nThe stories:\n", state.prompt.trim_end());
            let mut criteria = Vec::new();
            for s in &prd.stories {
                task.push_str(&format!("- {}: {}", s.id, s.title));
                if !s.description.trim().is_empty() {
                    task.push_str(&format!(" - {}", s.description.trim()));
                }
                task.push('\n');
                criteria.extend(
                    s.acceptance_criteria
                        .iter()
                        .map(|c| format!("{}: {c}", s.id)),
                );
            }
            (task, criteria)
        }
        _ => (state.prompt.clone(), Vec::new()),
    };
    Brief {
        task,
        acceptance_criteria,
        base: state.review.base.clone(),
        turned: Vec::new(),
    }
}

/// The turn the last Stop answered, again: the same key, and no tool
/// called since (the Stop it repeats emptied the guard's record).
fn is_duplicate(inputs: &StopInputs) -> bool {
    let key = inputs.turn_key.as_ref();
    key.is_some() && key == inputs.state.turn_key.as_ref() && !inputs.called_tools
}

impl Plan<'_> {
    /// The state as this Stop leaves it, at `iteration`: claimed, with the
    /// stall count and the tree it judged, the queue acted on.
    pub(crate) fn state_after(&self, inputs: &StopInputs, iteration: u64) -> LoopState {
        let state = &inputs.state;
        LoopState {
            iteration,
            stalls: self.stalls,
            last_fingerprint: match (&inputs.fingerprint, inputs.effect) {
                (Some(now), _) => Some(now.clone()),
                // The tree changed and was not looked at: no baseline, so
                // the next turn judged by the tree sets one (and counts as
                // progress) rather than be compared with the tree before
                // this edit.
                (None, TurnEffect::Edited) => None,
                (None, _) => state.last_fingerprint.clone(),
            },
            yielded: false,
            ..self.state_yielded(inputs)
        }
    }

    /// The state as a Stop that yields to the user leaves it: the same
    /// iteration and stall count, claimed, the queue acted on, `yielded`.
    pub(crate) fn state_yielded(&self, inputs: &StopInputs) -> LoopState {
        let state = &inputs.state;
        LoopState {
            session_id: if self.claims {
                inputs.session.clone()
            } else {
                state.session_id.clone()
            },
            queue_seen: self.queue_seen.clone(),
            yielded: true,
            turn_key: inputs.turn_key.clone().or_else(|| state.turn_key.clone()),
            api_error_pause: None,
            budgets: self.budgets.clone(),
            records: self.records,
            story_checks: match &inputs.prd {
                Some(Ok(prd)) => prd.checks_to_record(&state.story_checks),
                _ => state.story_checks.clone(),
            },
            ..state.clone()
        }
    }
}

/// The loop's own check, when it already ran (the same command) on this very tree.
fn reusable_loop_check<'l>(
    state: &LoopState,
    log: &'l VerifyLog,
    fingerprint: Option<&str>,
) -> Option<&'l CheckResult> {
    log.r#loop.as_ref().filter(|r| {
        Some(&r.command) == state.verify.as_ref()
            && fingerprint.is_some()
            && r.fingerprint.as_deref() == fingerprint
    })
}

/// Which story checks to run now: `(story id, command)`.
///
/// A story claiming `passes: true` with a `verify` command is checked when it
/// has no result yet, or when its last result failed on another tree. A
/// passing result is reused, except when every story claims to pass (a
/// completion claim) and the tree changed since: then it is run again.
pub(crate) fn stories_to_check(
    prd: &Prd,
    log: &VerifyLog,
    fingerprint: Option<&str>,
) -> Vec<(String, String)> {
    let completion_claimed = prd.all_pass();
    prd.stories
        .iter()
        .filter(|s| s.passes)
        .filter_map(|s| s.verify.as_ref().map(|cmd| (s, cmd)))
        .filter(|(s, cmd)| {
            let same_tree =
                |r: &CheckResult| fingerprint.is_some() && r.fingerprint.as_deref() == fingerprint;
            match log.story(&s.id, cmd) {
                None => true,
                Some(r) if r.passed() => completion_claimed && !same_tree(r),
                Some(r) => !same_tree(r),
            }
        })
        .map(|(s, cmd)| (s.id.clone(), cmd.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(cmd: &str, exit: i32, fp: &str) -> CheckResult {
        CheckResult {
            command: cmd.into(),
            exit: Some(exit),
            timed_out: false,
            output_tail: String::new(),
            fingerprint: Some(fp.into()),
            time: "t".into(),
            duration_ms: 1,
            pinned: false,
            put_back: Vec::new(),
            score: None,
            not_run: false,
        }
    }

    fn prd(passes: [bool; 2]) -> Prd {
        Prd::parse(&format!(
            r#"{{"stories":[{{"id":"A","passes":{},"verify":"check a"}},{{"id":"B","passes":{}}}]}}"#,
            passes[0], passes[1]
        ))
        .unwrap()
    }

    #[test]
    fn new_claims_are_checked_and_results_reused_on_the_same_tree() {
        let p = prd([true, false]);
        let mut log = VerifyLog::default();
        assert_eq!(
            stories_to_check(&p, &log, Some("f1")),
            [("A".to_string(), "check a".to_string())]
        );
        log.stories.insert("A".into(), result("check a", 1, "f1"));
        assert!(
            stories_to_check(&p, &log, Some("f1")).is_empty(),
            "failed on this tree: not re-run"
        );
        assert_eq!(
            stories_to_check(&p, &log, Some("f2")).len(),
            1,
            "tree changed: re-run"
        );
        log.stories.insert("A".into(), result("check a", 0, "f2"));
        assert!(
            stories_to_check(&p, &log, Some("f3")).is_empty(),
            "passed: reused until completion is claimed"
        );
    }

    #[test]
    fn completion_claim_rechecks_passes_from_another_tree() {
        let p = prd([true, true]);
        let mut log = VerifyLog::default();
        log.stories.insert("A".into(), result("check a", 0, "f1"));
        assert!(stories_to_check(&p, &log, Some("f1")).is_empty());
        assert_eq!(stories_to_check(&p, &log, Some("f2")).len(), 1);
        // A changed command is a new check.
        log.stories.insert("A".into(), result("old cmd", 0, "f2"));
        assert_eq!(stories_to_check(&p, &log, Some("f2")).len(), 1);
    }

    #[test]
    fn the_loop_check_is_reused_only_on_the_same_tree_and_command() {
        let mut s = crate::state::sample(1, 0, None);
        s.verify = Some("make".into());
        let log = VerifyLog {
            r#loop: Some(result("make", 1, "f1")),
            ..VerifyLog::default()
        };
        assert!(reusable_loop_check(&s, &log, Some("f1")).is_some());
        assert!(reusable_loop_check(&s, &log, Some("f2")).is_none());
        assert!(reusable_loop_check(&s, &log, None).is_none());
        s.verify = Some("make test".into());
        assert!(reusable_loop_check(&s, &log, Some("f1")).is_none());
    }
}
