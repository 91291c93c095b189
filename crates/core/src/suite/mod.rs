//! The suite is the user's: what a verdict counts is fixed by the loop,
//! not by the agent. `suite.json` in the loop's folder (sealed, a record
//! the state holds the generation of) keeps, for each command that
//! measures the loop, its **baseline** (every test's id and outcome on the
//! tree the loop started from, taken by [`baseline`] in a copy of it in
//! ralph's folder), the tests seen passing since, the removals the user
//! accepted, and the tests seen to flip on an unchanged tree (flaky).
//! [`inventory`] judges a claim's run against them (pure); [`baseline`]
//! takes the baselines (I/O); [`read`] and [`write`] are the file.
//! Does I/O: [`read`], [`write`], [`baseline`].

pub mod baseline;
pub(crate) mod changed;
pub(crate) mod gone_words;
pub(crate) mod inventory;
pub mod overview;

use crate::score::{Outcome, Reading, Score};
use crate::seal::{Seal, SealedText};
use crate::store::StoreError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How a test ended at the baseline, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Known {
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A command's run on the starting tree, read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Inventory {
    pub time: String,
    pub reading: Reading,
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// Every test counted is named in `tests` (else counts only).
    pub named: bool,
    /// By id, when named.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tests: BTreeMap<String, Known>,
    /// How long the run took.
    #[serde(default)]
    pub duration_ms: u64,
    /// The run counted no test: its runner's words did not add up (a test
    /// printed a summary of its own, the output was cut short) or were not
    /// there. Nothing of the suite can be seen in it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unread: bool,
}

impl Inventory {
    /// The baseline's reading of a run (`unread` when it counted no test).
    pub(crate) fn of(score: &Score, time: String, duration_ms: u64) -> Inventory {
        if !score.reader.counts_tests() {
            return Inventory {
                time,
                duration_ms,
                unread: true,
                ..Inventory::default()
            };
        }
        let named = score.names_every_test();
        let tests = if named {
            score
                .cases
                .iter()
                .map(|c| {
                    let known = Known {
                        outcome: c.outcome,
                        file: c.file.clone(),
                    };
                    (c.id.clone(), known)
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        Inventory {
            time,
            reading: score.reading,
            passed: score.passed,
            failed: score.failed,
            skipped: score.skipped,
            named,
            tests,
            duration_ms,
            unread: false,
        }
    }

    /// Tests counted in all.
    pub(crate) fn total(&self) -> u32 {
        self.passed + self.failed + self.skipped
    }
}

/// Where a command's baseline stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub(crate) enum BaselineState {
    /// To be taken, by the process `taker` names (started by ralph for
    /// it: none other takes it), since `since`.
    Pending {
        since: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        taker: Option<Taker>,
    },
    Done(Inventory),
    /// It could not be taken: the inventory is then the tests seen passing.
    Failed {
        why: BaselineFailure,
        time: String,
    },
}

/// Why a baseline could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub(crate) enum BaselineFailure {
    /// ralph's copy of the starting tree could not be made.
    Worktree(String),
    /// The command ran past `--verify-timeout`.
    TimedOut(u64),
    /// It printed nothing a runner's reading counts (no tests to hold).
    NothingCounted,
    /// Its process ended without a word (killed).
    Lost,
}

/// The process that takes a baseline: its pid and start time (0 where
/// the start time cannot be read), together one process for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Taker {
    pub pid: u32,
    #[serde(default)]
    pub start: u64,
}

/// One command's baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Baseline {
    /// The story whose first feed asked for it (PRD mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story: Option<String>,
    /// ralph's commit of the tree it measures.
    pub commit: String,
    /// The command's timeout, in seconds.
    pub timeout_secs: u64,
    #[serde(flatten)]
    pub state: BaselineState,
}

/// A test seen passing: at which iteration, in which file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeenPassing {
    pub iteration: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// The newest run of a command, on the tree it ran on: what a claim on
/// that tree is judged by when no check ran at its Stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NewestRun {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    pub iteration: u64,
    #[serde(flatten)]
    pub run: Inventory,
}

/// A removal the user accepted (`ralph accept`, `/ralph-accept`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Accepted {
    pub iteration: u64,
    pub time: String,
}

/// The loop's memory of its suite.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Suite {
    /// By command.
    #[serde(default)]
    pub baselines: BTreeMap<String, Baseline>,
    /// By command: each test seen passing, and when last.
    #[serde(default)]
    pub passed: BTreeMap<String, BTreeMap<String, SeenPassing>>,
    /// Test ids whose removal (or skip) the user accepted.
    #[serde(default)]
    pub accepted: BTreeMap<String, Accepted>,
    /// Counts-only suites: the totals the user accepted as the new floor
    /// (`(tests, skipped)`), by command.
    #[serde(default)]
    pub accepted_counts: BTreeMap<String, (u32, u32)>,
    /// Commands whose output the user accepted to count no test, or to
    /// name none where the baseline named each (an `unread` or `unnamed`
    /// run no longer refuses a claim; an unnamed one is counted).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub accepted_unread: BTreeSet<String>,
    /// Tests seen to pass and fail on one tree.
    #[serde(default)]
    pub flaky: BTreeSet<String>,
    /// By command: its newest run.
    #[serde(default)]
    pub newest: BTreeMap<String, NewestRun>,
}

/// Tests seen passing remembered at most, by command.
const MAX_REMEMBERED: usize = 100_000;

impl Suite {
    pub(crate) fn parse(text: &str) -> Suite {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub(crate) fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The inventory taken for `command`, once done.
    pub(crate) fn baseline_of(&self, command: &str) -> Option<&Inventory> {
        match &self.baselines.get(command)?.state {
            BaselineState::Done(inv) => Some(inv),
            _ => None,
        }
    }

    /// The totals the user accepted for `command` (counts only).
    pub(crate) fn accepted_all_at(&self, command: &str) -> Option<(u32, u32)> {
        self.accepted_counts.get(command).copied()
    }

    /// The baselines still to take or being taken.
    pub(crate) fn pending(&self) -> impl Iterator<Item = (&String, &Baseline)> {
        self.baselines
            .iter()
            .filter(|(_, b)| matches!(b.state, BaselineState::Pending { .. }))
    }

    /// This memory with `score`, a run of `command` on the tree
    /// `fingerprint` at `iteration`: the tests it saw pass remembered, and
    /// the run kept as the command's newest.
    #[must_use]
    pub(crate) fn with_run(
        &self,
        command: &str,
        score: &Score,
        fingerprint: Option<&str>,
        iteration: u64,
    ) -> Suite {
        let mut next = self.clone();
        let run = NewestRun {
            fingerprint: fingerprint.map(str::to_string),
            iteration,
            run: Inventory::of(score, crate::clock::now_rfc3339(), 0),
        };
        next.newest.insert(command.to_string(), run);
        let seen = next.passed.entry(command.to_string()).or_default();
        for case in score.cases.iter().filter(|c| c.outcome == Outcome::Passed) {
            if seen.len() < MAX_REMEMBERED || seen.contains_key(&case.id) {
                let entry = SeenPassing {
                    iteration,
                    file: case.file.clone(),
                };
                seen.insert(case.id.clone(), entry);
            }
        }
        next
    }
}

/// The suite's record as read with its seal: `Err` when something other
/// than ralph wrote it (the tamper check names it).
pub(crate) fn of_sealed(read: &SealedText) -> Result<Suite, ()> {
    if read.seal == Seal::Broken {
        return Err(());
    }
    Ok(read.text.as_deref().map(Suite::parse).unwrap_or_default())
}

/// The loop's suite in `file` (`LoopPaths::suite`), when ralph wrote it.
pub(crate) fn read(file: &std::path::Path) -> Suite {
    of_sealed(&crate::seal::read_sealed(file)).unwrap_or_default()
}

/// Save the suite to `file`, sealed at generation `at` (`records`).
pub(crate) fn write(file: &std::path::Path, suite: &Suite, at: u64) -> Result<(), StoreError> {
    crate::seal::write_record(file, suite.render().as_bytes(), at)
}
