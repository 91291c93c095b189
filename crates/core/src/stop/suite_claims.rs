//! The suite's inventory at a Stop: which runs a claim is judged by (each
//! command that measures it, on the tree as it is now: this Stop's run, or
//! the command's newest run when it ran on this very tree), the baselines
//! a claim waits for, the suite's memory with this Stop's runs, and the
//! claim refused while a test from the baseline, or one that passed since,
//! is missing or newly skipped (`suite::inventory`). Pure.

use super::completion::{Completion, Refusal};
use super::gather::StopInputs;
use super::plan::Ran;
use crate::suite::changed::Candidate;
use crate::suite::inventory::{self, InventoryFinding};
use crate::suite::{BaselineState, Inventory, Suite};
use crate::verify::{CheckResult, VerifyLog};

/// The commands that judge a claim on this loop: `--score`, the loop's
/// check, and in PRD mode each story's recorded check.
pub(crate) fn judging_commands(inputs: &StopInputs) -> Vec<String> {
    let state = &inputs.state;
    let mut out: Vec<String> = Vec::new();
    let stories = state.story_checks.values();
    for c in state.score.iter().chain(&state.verify).chain(stories) {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// The claim's commands whose baseline is still to be taken or being
/// taken: the claim (`claimed`, when the Stop acts on it) waits for them
/// (once a Stop).
pub(crate) fn baselines_due(inputs: &StopInputs, ran: &Ran, claimed: bool) -> Vec<String> {
    let Some(suite) = inputs.suite.as_ref().filter(|_| claimed) else {
        return Vec::new();
    };
    judging_commands(inputs)
        .into_iter()
        .filter(|c| !ran.baselines_awaited.contains(c))
        .filter(|c| {
            suite
                .baselines
                .get(c)
                .is_some_and(|b| matches!(b.state, BaselineState::Pending { .. }))
        })
        .collect()
}

/// Each check this Stop ran, with its command and what it read.
fn this_stops_runs(ran: &Ran) -> impl Iterator<Item = &CheckResult> {
    let stories = ran.stories.iter().map(|(_, r)| r);
    let score = ran.score.as_ref().map(|s| &s.result);
    stories.chain(&ran.loop_check).chain(score)
}

/// The suite's memory with this Stop's runs in it (the tests each saw
/// pass, its newest run: one that counted no test too, for status and
/// `--all` to name); `None` when no check ran.
pub(crate) fn suite_after(inputs: &StopInputs, ran: &Ran) -> Option<Suite> {
    let suite = inputs.suite.as_ref()?;
    let mut next: Option<Suite> = None;
    for result in this_stops_runs(ran) {
        let Some(score) = result.score.as_deref() else {
            continue;
        };
        let base = next.as_ref().unwrap_or(suite);
        let fingerprint = result.fingerprint.as_deref();
        next = Some(base.with_run(&result.command, score, fingerprint, inputs.state.iteration));
    }
    next
}

/// What each command that judges a claim finds on the tree as it is now:
/// this Stop's run, else the newest run of the command on this tree, else
/// the counts of the check's result on file for this tree. A run that
/// counted no test (its runner's words did not add up) hides the suite:
/// it is judged as such, never passed over.
pub(crate) fn findings(
    inputs: &StopInputs,
    ran: &Ran,
    log: &VerifyLog,
) -> Vec<(String, InventoryFinding)> {
    let Some(suite) = &inputs.suite else {
        return Vec::new();
    };
    let fingerprint = inputs.fingerprint.as_deref();
    judging_commands(inputs)
        .into_iter()
        .filter_map(|command| {
            let run = run_on_this_tree(suite, ran, log, &command, fingerprint)?;
            let found = inventory::judge(suite, &command, &run);
            (!found.is_clear()).then_some((command, found))
        })
        .collect()
}

/// The run of `command` on the tree `fingerprint`, as the inventory reads it.
fn run_on_this_tree(
    suite: &Suite,
    ran: &Ran,
    log: &VerifyLog,
    command: &str,
    fingerprint: Option<&str>,
) -> Option<Inventory> {
    let read = |r: &CheckResult| {
        let s = r.score.as_deref()?;
        Some(Inventory::of(s, r.time.clone(), r.duration_ms))
    };
    // This Stop's runs of it: one that counted tests, else one that did not.
    let runs: Vec<Inventory> = this_stops_runs(ran)
        .filter(|r| r.command == command)
        .filter_map(read)
        .collect();
    if let Some(now) = runs.iter().find(|r| !r.unread).or(runs.first()) {
        return Some(now.clone());
    }
    let fingerprint = fingerprint?;
    if let Some(n) = suite.newest.get(command)
        && n.fingerprint.as_deref() == Some(fingerprint)
    {
        return Some(n.run.clone());
    }
    // A result on file without its tests (they are kept in memory only):
    // its counts.
    let on_file = log
        .r#loop
        .iter()
        .chain(log.stories.values())
        .filter(|r| r.command == command && r.fingerprint.as_deref() == Some(fingerprint))
        .find_map(read)?;
    Some(Inventory {
        named: false,
        tests: Default::default(),
        ..on_file
    })
}

/// The tests that failed at their command's baseline and pass in the
/// claim's run on this tree, with the baseline's commit: named at the end
/// and to the reviewers when their file changed (`suite::changed`). Where
/// the baseline names no tests but counted failures (`npm test` read by
/// its words), the check itself turned (the claim stands on it passing):
/// its command stands for the tests, with no file, so that the runner's
/// own files are still named.
pub(crate) fn turned(inputs: &StopInputs, ran: &Ran, log: &VerifyLog) -> Vec<Candidate> {
    let Some(suite) = &inputs.suite else {
        return Vec::new();
    };
    let fingerprint = inputs.fingerprint.as_deref();
    let mut out = Vec::new();
    for command in judging_commands(inputs) {
        let (Some(run), Some(b)) = (
            run_on_this_tree(suite, ran, log, &command, fingerprint),
            suite.baselines.get(&command),
        ) else {
            continue;
        };
        for (test, known) in inventory::turned_to_pass(suite, &command, &run) {
            if !out.iter().any(|c: &Candidate| &c.test == test) {
                out.push(Candidate {
                    test: test.clone(),
                    file: known.file.clone(),
                    commit: b.commit.clone(),
                });
            }
        }
        let counted_failures = suite
            .baseline_of(&command)
            .is_some_and(|start| !start.named && start.failed > 0);
        if counted_failures {
            out.push(Candidate {
                test: command.clone(),
                file: None,
                commit: b.commit.clone(),
            });
        }
    }
    out
}

/// A claim that stands is refused while a test is gone from the suite.
pub(crate) fn with_inventory(
    completion: Completion,
    findings: &[(String, InventoryFinding)],
) -> Completion {
    if completion != Completion::Complete || findings.is_empty() {
        return completion;
    }
    Completion::Refused(Refusal {
        check: None,
        regressed: Vec::new(),
        inventory: findings.to_vec(),
    })
}
