//! The loop's scores, one entry per scored Stop (`scores.json` in the
//! loop's folder, sealed like the checks' results), and the rules over
//! them: the current measure (the last entries scored with the same command
//! for the same story), its best, how many scored iterations in a row have
//! not beaten it (the plateau), and which failing tests passed before (the
//! regressions). Does I/O: [`read`] and [`write`] only; the rules are pure.

use super::Score;
use crate::seal::{Seal, SealedText};
use crate::store::StoreError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Entries kept at most (the oldest go first).
const MAX_ENTRIES: usize = 1_000;
/// Test names whose last pass is remembered at most.
const MAX_REMEMBERED: usize = 20_000;

/// One scored Stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationScore {
    pub iteration: u64,
    pub time: String,
    /// PRD mode: the story whose check measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story: Option<String>,
    /// The command that measured.
    pub command: String,
    pub score: Score,
    /// The working tree it ran on (`worktree::fingerprint`).
    pub fingerprint: String,
    /// The tree and a commit of it (ralph's own: the loop's branch does not
    /// move), to go back to it and to say what changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Tokens the loop had spent by then (when the client reports them).
    #[serde(default)]
    pub tokens: u64,
    /// Dollars spent by then, exact (`--max-cost` with known prices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
}

/// Every score of the loop, the last iteration each test passed at, and
/// the tests seen to flip on one tree (flaky).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub entries: Vec<IterationScore>,
    #[serde(default)]
    pub last_passed: BTreeMap<String, u64>,
    /// Tests that failed and then passed when run again on the same tree:
    /// never named as regressions, and kept out of the best (a flaky pass
    /// is no progress).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub flaky: BTreeSet<String>,
}

/// A test that passed at an earlier iteration and fails now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Regression {
    pub test: String,
    /// The last iteration it passed at.
    pub passed_at: u64,
    /// The tree scored then, to say what changed since.
    pub tree: Option<String>,
}

/// Where the measure stands: its best, and the scored iterations since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScoreStanding<'a> {
    pub best: &'a IterationScore,
    /// Scored iterations after the best that did not beat it.
    pub since_best: u32,
    /// The entry before the newest, for the trend.
    pub previous: Option<&'a IterationScore>,
    pub newest: &'a IterationScore,
}

impl History {
    pub(crate) fn parse(text: &str) -> History {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub(crate) fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The newest entry.
    pub(crate) fn newest(&self) -> Option<&IterationScore> {
        self.entries.last()
    }

    /// The tree `fingerprint` was scored already by `command` (at most once
    /// per tree state).
    pub(crate) fn scored(&self, fingerprint: &str, command: &str) -> Option<&IterationScore> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.fingerprint == fingerprint && e.command == command)
    }

    /// The current measure: the newest entries with the newest's command and
    /// story (a new story, or another command, starts a new measure).
    pub(crate) fn measure(&self) -> &[IterationScore] {
        let Some(last) = self.entries.last() else {
            return &[];
        };
        let same = |e: &IterationScore| e.command == last.command && e.story == last.story;
        let from = self
            .entries
            .iter()
            .rposition(|e| !same(e))
            .map_or(0, |i| i + 1);
        &self.entries[from..]
    }

    /// The best of the current measure (the first to reach it; a reading
    /// that is no count only while nothing else was read), how many scored
    /// iterations since did not beat it, and the newest two.
    pub(crate) fn standing(&self) -> Option<ScoreStanding<'_>> {
        let run = self.measure();
        let newest = run.last()?;
        let start = run
            .iter()
            .position(|e| e.score.reader != super::Runner::Unread)
            .unwrap_or(0);
        let mut best = &run[start];
        let mut since_best = 0;
        for e in &run[start + 1..] {
            if e.score
                .without(&self.flaky)
                .beats(&best.score.without(&self.flaky))
            {
                best = e;
                since_best = 0;
            } else {
                since_best += 1;
            }
        }
        Some(ScoreStanding {
            best,
            since_best,
            previous: run.len().checked_sub(2).map(|i| &run[i]),
            newest,
        })
    }

    /// Whether `score`, measured by `command` for `story`, would be the
    /// best of its measure (the first of a new measure is, unless it is no
    /// count).
    pub(crate) fn would_be_best(&self, command: &str, story: Option<&str>, score: &Score) -> bool {
        // Words that do not add up are no count: never kept as the best.
        if score.reader == super::Runner::Unread {
            return false;
        }
        let Some(standing) = self.standing() else {
            return true;
        };
        let newest = standing.newest;
        newest.command != command
            || newest.story.as_deref() != story
            || score
                .without(&self.flaky)
                .beats(&standing.best.score.without(&self.flaky))
    }

    /// The tests failing in `score` that passed at an earlier iteration,
    /// newest pass first.
    pub(crate) fn regressions(&self, score: &Score) -> Vec<Regression> {
        let mut found: Vec<Regression> = score
            .failing
            .iter()
            .filter(|test| !self.flaky.contains(*test))
            .filter_map(|test| {
                let passed_at = *self.last_passed.get(test)?;
                let tree = self
                    .entries
                    .iter()
                    .rev()
                    .find(|e| e.iteration == passed_at)
                    .and_then(|e| e.tree.clone());
                Some(Regression {
                    test: test.clone(),
                    passed_at,
                    tree,
                })
            })
            .collect();
        found.sort_by(|a, b| b.passed_at.cmp(&a.passed_at).then(a.test.cmp(&b.test)));
        found
    }

    /// The history with `entry` added; `passing` (the tests that passed in
    /// it) remembered as passing at its iteration.
    #[must_use]
    pub(crate) fn with(&self, entry: IterationScore, passing: &[String]) -> History {
        let mut next = self.clone();
        for test in passing {
            if next.last_passed.len() < MAX_REMEMBERED || next.last_passed.contains_key(test) {
                next.last_passed.insert(test.clone(), entry.iteration);
            }
        }
        next.entries.push(entry);
        if next.entries.len() > MAX_ENTRIES {
            let extra = next.entries.len() - MAX_ENTRIES;
            next.entries.drain(..extra);
        }
        next
    }
}

impl History {
    /// The history with `tests` known to be flaky.
    #[must_use]
    pub(crate) fn with_flaky(mut self, tests: &[String]) -> History {
        self.flaky.extend(tests.iter().cloned());
        self
    }
}

/// The scores as read with their seal: `Err` when something other than
/// ralph wrote them (the tamper check names it).
pub(crate) fn of_sealed(read: &SealedText) -> Result<History, ()> {
    if read.seal == Seal::Broken {
        return Err(());
    }
    Ok(read.text.as_deref().map(History::parse).unwrap_or_default())
}

/// The loop's scores in `file` (`LoopPaths::scores`), when ralph wrote
/// them (else none).
pub(crate) fn read(file: &std::path::Path) -> History {
    of_sealed(&crate::seal::read_sealed(file)).unwrap_or_default()
}

/// Save the scores to `file`, sealed at generation `at` (`records`).
pub(crate) fn write(file: &std::path::Path, history: &History, at: u64) -> Result<(), StoreError> {
    crate::seal::write_record(file, history.render().as_bytes(), at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::Runner;

    fn entry(iteration: u64, passed: u32, failed: u32, failing: &[&str]) -> IterationScore {
        IterationScore {
            iteration,
            time: "t".into(),
            story: None,
            command: "make test".into(),
            score: Score {
                reader: Runner::Cargo,
                passed,
                failed,
                milli: None,
                failing: failing.iter().map(|s| s.to_string()).collect(),
                ..Score::of_exit(true)
            },
            fingerprint: format!("f{iteration}"),
            tree: Some(format!("tree{iteration}")),
            commit: None,
            tokens: 0,
            cost: None,
        }
    }

    #[test]
    fn the_plateau_counts_scored_iterations_since_the_best() {
        let mut h = History::default();
        for (i, passed) in [(1, 40), (2, 43), (3, 43), (4, 42), (5, 43)] {
            h = h.with(entry(i, passed, 50 - passed, &[]), &[]);
        }
        let s = h.standing().unwrap();
        assert_eq!(s.best.iteration, 2, "the first to reach the best");
        assert_eq!(s.since_best, 3);
        assert_eq!(s.previous.unwrap().iteration, 4);
        h = h.with(entry(6, 44, 6, &[]), &[]);
        assert_eq!(h.standing().unwrap().since_best, 0, "a new best resets it");
    }

    #[test]
    fn a_new_story_or_command_starts_a_new_measure() {
        let mut h = History::default();
        h = h.with(entry(1, 40, 10, &[]), &[]);
        let mut next = entry(2, 3, 1, &[]);
        next.story = Some("US-2".into());
        h = h.with(next, &[]);
        assert_eq!(h.measure().len(), 1);
        assert_eq!(h.standing().unwrap().best.iteration, 2);
    }

    #[test]
    fn a_failing_test_that_passed_before_is_a_regression_with_its_tree() {
        let mut h = History::default();
        h = h.with(entry(1, 2, 1, &["c"]), &["a".into(), "b".into()]);
        h = h.with(entry(2, 2, 1, &["b"]), &["a".into(), "c".into()]);
        let now = entry(3, 0, 3, &["a", "b", "c"]).score;
        let r = h.regressions(&now);
        let named: Vec<(&str, u64)> = r.iter().map(|r| (r.test.as_str(), r.passed_at)).collect();
        assert_eq!(named, [("a", 2), ("c", 2), ("b", 1)]);
        assert_eq!(r[2].tree.as_deref(), Some("tree1"));
        assert!(h.regressions(&entry(4, 3, 1, &["new"]).score).is_empty());
    }

    #[test]
    fn a_tree_is_scored_once_per_command() {
        let h = History::default().with(entry(1, 1, 0, &[]), &[]);
        assert!(h.scored("f1", "make test").is_some());
        assert!(h.scored("f1", "other").is_none());
        assert!(h.scored("f2", "make test").is_none());
        assert_eq!(History::parse(&h.render()), h);
        assert_eq!(History::parse("not json"), History::default());
    }
}
