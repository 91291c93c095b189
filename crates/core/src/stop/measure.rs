//! The loop's measure at a Stop: which command scores the iteration (the
//! `--score` command, else the current story's check, else the loop's
//! `verify`), whether it runs (a turn that changed the tree, on a tree this
//! command has not scored: at most once per tree state), and what its score
//! means (the history with it, the tests that passed before and fail now,
//! the plateau). Pure.

use super::completion::{Completion, Refusal};
use super::gather::StopInputs;
use crate::breaker::TurnEffect;
use crate::score::history::{History, IterationScore, Regression, ScoreStanding};
use crate::verify::CheckResult;

/// The command that measures the loop now, and for which story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Measure {
    pub command: String,
    /// PRD mode: the story whose check measures.
    pub story: Option<String>,
    /// A `--score` command: the last number it prints counts.
    pub numbered: bool,
}

/// A score run at this Stop (outside the lock), with the tree it ran on.
#[derive(Debug, Clone)]
pub(crate) struct ScoreRun {
    pub measure: Measure,
    pub result: CheckResult,
    /// The tree and ralph's commit of it (`score::tree::snapshot`).
    pub tree: Option<String>,
    pub commit: Option<String>,
    /// For each earlier iteration a failing test passed at: the files
    /// changed since (`score::tree::changed`).
    pub changed: Vec<(u64, Vec<String>)>,
    /// The measure run again on the same tree, when the first run named a
    /// regression: a test that passes then is flaky, not a regression.
    pub rerun: Option<CheckResult>,
}

impl ScoreRun {
    /// The tests that failed in the run and passed when run again.
    pub(crate) fn flaky(&self) -> Vec<String> {
        let Some(again) = self.rerun.as_ref().and_then(|r| r.score.as_deref()) else {
            return Vec::new();
        };
        let first = self.result.score_as(self.measure.numbered);
        first
            .failing
            .iter()
            .filter(|t| again.passing().any(|p| p == t.as_str()))
            .cloned()
            .collect()
    }
}

/// What this Stop's score means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scored {
    /// The loop's scores with this one: saved by `apply`.
    pub history: History,
    /// Tests failing now that passed at an earlier iteration.
    pub regressions: Vec<Regression>,
    /// The files changed since each of those iterations.
    pub changed: Vec<(u64, Vec<String>)>,
    /// This score is the measure's best yet (its run moved `refs/ralph/best`
    /// to its commit, outside the lock: `stop::score_run`).
    pub new_best: bool,
    /// Tests this Stop found flaky: failed, then passed when run again.
    pub flaky: Vec<String>,
}

impl Scored {
    /// The measure's best, and the scored iterations since.
    pub(crate) fn standing(&self) -> Option<ScoreStanding<'_>> {
        self.history.standing()
    }

    /// The score as the log line carries it.
    pub(crate) fn log_score(&self) -> Option<crate::activity::LogScore> {
        let newest = self.history.newest()?;
        Some(crate::activity::LogScore {
            at: newest.iteration,
            text: newest.score.label(),
            milli: (newest.score.points() * 1000.0).round() as i64,
            regressions: self.regressions.len() as u32,
            best: self.new_best,
        })
    }

    /// `max_plateau` scored iterations in a row did not beat the best (a
    /// measure that can rise step by step only: a pass/fail check cannot).
    pub(crate) fn plateaued(&self, max_plateau: u32) -> bool {
        max_plateau > 0
            && self
                .standing()
                .is_some_and(|s| s.best.score.reader.graded() && s.since_best >= max_plateau)
    }
}

/// The measure of this loop now, if it has one.
pub(crate) fn measure(inputs: &StopInputs) -> Option<Measure> {
    let state = &inputs.state;
    if let Some(command) = &state.score {
        return Some(Measure {
            command: command.clone(),
            story: None,
            numbered: true,
        });
    }
    // A `--parallel` loop's stories are worked in their own worktrees: the
    // loop's check measures the merged tree.
    if let Some(Ok(prd)) = &inputs.prd
        && state.parallel == 0
        && let Some(story) = prd.next_runnable()
        && let Some(command) = &story.verify
    {
        return Some(Measure {
            command: command.clone(),
            story: Some(story.id.clone()),
            numbered: false,
        });
    }
    state.verify.clone().map(|command| Measure {
        command,
        story: None,
        numbered: false,
    })
}

/// The score to run at this Stop (none once it ran, or when the Stop acts
/// on something else first: `not_now`).
pub(crate) fn job(inputs: &StopInputs, not_now: bool) -> Option<Measure> {
    if not_now {
        return None;
    }
    due(inputs, measure(inputs).as_ref())
}

/// A claim that stands is refused while a test that passed at an earlier
/// iteration fails now, by the newest score of the tree it is made on:
/// this Stop's, or, for a tree not changed since it was scored (a claim
/// the turn after a regression), the one taken then.
pub(crate) fn with_regressions(
    completion: Completion,
    scored: Option<&Scored>,
    inputs: &StopInputs,
) -> Completion {
    if completion != Completion::Complete {
        return completion;
    }
    let regressed: Vec<String> = match scored {
        Some(s) => s.regressions.iter().map(|r| r.test.clone()).collect(),
        None => regressed_on_this_tree(inputs),
    };
    if regressed.is_empty() {
        return completion;
    }
    Completion::Refused(Refusal {
        check: None,
        regressed,
        inventory: Vec::new(),
    })
}

/// The tests that the newest score of the tree as it is now found failing
/// after they had passed at an earlier iteration.
fn regressed_on_this_tree(inputs: &StopInputs) -> Vec<String> {
    let (Some(measure), Some(fingerprint)) = (measure(inputs), inputs.fingerprint.as_deref())
    else {
        return Vec::new();
    };
    let Some(entry) = inputs.scores.scored(fingerprint, &measure.command) else {
        return Vec::new();
    };
    inputs
        .scores
        .regressions(&entry.score)
        .into_iter()
        .filter(|r| r.passed_at < entry.iteration)
        .map(|r| r.test)
        .collect()
}

/// This Stop's score once no check is left to run, with what the loop had
/// spent by then (`budgets`: this turn's tokens added).
pub(crate) fn of_stop(
    inputs: &StopInputs,
    run: Option<&ScoreRun>,
    budgets: &crate::budget::Budgets,
) -> Option<Scored> {
    let cost = (budgets.max_cost.is_some() || budgets.cost > crate::budget::Usd(0))
        .then(|| budgets.cost.exact());
    scored(inputs, run, measure(inputs).as_ref(), budgets.tokens, cost)
}

/// The score to run at this Stop: the turn changed the tree (a turn that
/// only talked costs nothing), and this command has not scored this tree.
pub(crate) fn due(inputs: &StopInputs, measure: Option<&Measure>) -> Option<Measure> {
    let measure = measure?;
    let fingerprint = inputs.fingerprint.as_deref()?;
    if inputs.effect == TurnEffect::Unchanged {
        return None;
    }
    inputs
        .scores
        .scored(fingerprint, &measure.command)
        .is_none()
        .then(|| measure.clone())
}

/// This Stop's score and what it means: the run of this Stop, or a tree
/// this command scored before, come back to (it counts again, without a
/// run). `None` when nothing was scored.
pub(crate) fn scored(
    inputs: &StopInputs,
    run: Option<&ScoreRun>,
    measure: Option<&Measure>,
    tokens: u64,
    cost: Option<String>,
) -> Option<Scored> {
    let history = &inputs.scores;
    let iteration = inputs.state.iteration;
    let flaky = run.map(ScoreRun::flaky).unwrap_or_default();
    let history = &history.clone().with_flaky(&flaky);
    let (entry, passing, changed) = match run {
        Some(run) => {
            let score = run.result.score_as(run.measure.numbered);
            let passing: Vec<String> = score.passing().map(str::to_string).collect();
            let entry = IterationScore {
                iteration,
                time: run.result.time.clone(),
                story: run.measure.story.clone(),
                command: run.measure.command.clone(),
                fingerprint: run.result.fingerprint.clone().unwrap_or_default(),
                tree: run.tree.clone(),
                commit: run.commit.clone(),
                tokens,
                cost,
                score,
            };
            (entry, passing, run.changed.clone())
        }
        None => {
            let measure = measure?;
            let fingerprint = inputs.fingerprint.as_deref()?;
            let newest = history.newest()?;
            let seen = history.scored(fingerprint, &measure.command)?;
            // The newest: the tree did not change since it was scored.
            if std::ptr::eq(seen, newest) || inputs.effect == TurnEffect::Unchanged {
                return None;
            }
            let entry = IterationScore {
                iteration,
                tokens,
                cost,
                time: crate::clock::now_rfc3339(),
                story: measure.story.clone(),
                ..seen.clone()
            };
            (entry, Vec::new(), Vec::new())
        }
    };
    let regressions = history.regressions(&entry.score);
    let after = history.with(entry, &passing);
    let new_best = after.standing().is_some_and(|s| {
        s.since_best == 0
            && std::ptr::eq(s.best, s.newest)
            && s.best.score.reader != crate::score::Runner::Unread
    });
    Some(Scored {
        history: after,
        regressions,
        changed,
        new_best,
        flaky,
    })
}
