//! The loop's measure: how far the work is, read from its check (or
//! `--score` command) at each Stop that changed the tree. A score is a test
//! runner's count (passed, failed and skipped, with every test it named and
//! how each ended), else the number a `--score` command prints last, else
//! the check's exit (pass or fail). The results come from the runner, not
//! from what the tests print: [`launch`] says which runner a command runs
//! and the flags that make it write a structured report into ralph's folder,
//! [`report`] reads that report, and [`runners`] reads the printed words
//! when there is none, counting a summary only where the runner's own
//! per-test lines agree with it. [`history`] keeps the scores of the loop
//! (`scores.json` in the loop's folder, sealed) and holds the rules over
//! them: the best, the plateau, the regressions.
//! Pure, but for [`history::read`] and [`history::write`], and [`tree`]
//! (the commits of the scored trees, through git).

pub mod history;
pub mod launch;
mod printed;
pub(crate) mod report;
pub(crate) mod runners;
pub mod summary;
pub(crate) mod tree;

use serde::{Deserialize, Serialize};

/// Failing tests named at most, in a score's history and in what the model reads.
pub(crate) const MAX_FAILING: usize = 50;
/// Tests a reading names at most (in memory only): a suite of 50,000 is
/// named whole; past this the reading gives counts only.
pub(crate) const MAX_CASES: usize = 100_000;

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    /// Failed, or errored (a pytest error, a PHPUnit error, a Jest suite
    /// that failed to run).
    Failed,
    /// Did not run to a verdict: skipped, ignored, pending, todo, disabled,
    /// and pytest's `xfail` (an expected failure proves nothing either way).
    Skipped,
}

/// One test as the runner named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    /// The runner's own name for it, stable across runs of the same suite
    /// (no time, no counter, no colour): a pytest node id, `file › describe
    /// › test` for Jest, `binary::path` for cargo, `package::Test` for go.
    pub id: String,
    pub outcome: Outcome,
    /// The file (or go package) that holds it, where the runner says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Where a score's counts were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// The runner's structured report, written into ralph's folder (or, for
    /// `go test -json`, its event stream).
    Report,
    /// The runner's printed words.
    #[default]
    Text,
}

/// What a score was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runner {
    Cargo,
    Nextest,
    Pytest,
    GoTest,
    Jest,
    Vitest,
    NodeTest,
    Mocha,
    Rspec,
    Phpunit,
    Ctest,
    Junit,
    /// A line such as `12 passed, 3 failed`, whatever printed it.
    Plain,
    /// The number a `--score` command printed last.
    Number,
    /// Nothing to read: the exit code alone.
    Exit,
    /// A runner's words that do not add up (a summary a test printed, a
    /// second summary, output cut short): no count. Its exit is kept, but
    /// it is never a best: what a test prints cannot move the score.
    Unread,
}

impl Runner {
    /// Whether scores read so can rise step by step (a count, a number):
    /// only those can plateau. A pass/fail check is 0 until it is done.
    pub(crate) fn graded(self) -> bool {
        !matches!(self, Runner::Exit | Runner::Unread)
    }

    pub(crate) fn counts_tests(self) -> bool {
        !matches!(self, Runner::Number | Runner::Exit | Runner::Unread)
    }
}

/// One measure of the work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Score {
    pub reader: Runner,
    /// Tests that passed (for `Exit`: 1 when the check passed).
    #[serde(default)]
    pub passed: u32,
    /// Tests that failed, errors included (for `Exit`: 1 when it failed).
    #[serde(default)]
    pub failed: u32,
    /// Tests skipped, ignored, pending or todo.
    #[serde(default)]
    pub skipped: u32,
    /// Whether the counts come from a report or from the printed words.
    #[serde(default)]
    pub reading: Reading,
    /// `Number`: the value printed, in thousandths (exact to compare).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milli: Option<i64>,
    /// The failing tests' names, at most [`MAX_FAILING`] (from `cases`,
    /// kept in the history for display and the regressions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<String>,
    /// Every test the reading named, with how it ended (in memory only:
    /// the history keeps the counts and `failing`).
    #[serde(skip)]
    pub cases: Vec<TestCase>,
}

impl Score {
    /// A check read by its exit alone.
    pub(crate) fn of_exit(passed: bool) -> Score {
        Score {
            reader: Runner::Exit,
            passed: u32::from(passed),
            failed: u32::from(!passed),
            skipped: 0,
            reading: Reading::Text,
            milli: None,
            failing: Vec::new(),
            cases: Vec::new(),
        }
    }

    /// A run whose runner's words do not add up: no count, its exit kept.
    pub(crate) fn unread(passed: bool) -> Score {
        Score {
            reader: Runner::Unread,
            ..Score::of_exit(passed)
        }
    }

    /// Whether `cases` name every test counted (passed, failed and skipped
    /// alike), so the suite can be taken test by test; `false`: counts
    /// only (a runner that names only its failures, a plain summary line).
    pub fn names_every_test(&self) -> bool {
        self.reader.counts_tests()
            && self.reader != Runner::Plain
            && u64::from(self.passed) + u64::from(self.failed) + u64::from(self.skipped)
                == self.cases.len() as u64
    }

    /// The names of the tests that passed (the regressions' memory).
    pub(crate) fn passing(&self) -> impl Iterator<Item = &str> {
        self.cases
            .iter()
            .filter(|c| c.outcome == Outcome::Passed)
            .map(|c| c.id.as_str())
    }

    /// Whether this score is better than `best`: more tests pass (or as
    /// many, and fewer fail), a higher number, a check that now passes. A
    /// check that failed with nothing to read (a build that broke before
    /// its tests ran) beats nothing and is beaten by any reading; one that
    /// passed beats any. A count against a number is a new measure: it
    /// counts as better, so the plateau starts again from it. A reading
    /// whose words do not add up beats nothing, and any other beats it but
    /// a check that failed with nothing to read.
    pub(crate) fn beats(&self, best: &Score) -> bool {
        match (self.reader, best.reader) {
            (Runner::Unread, _) => false,
            (Runner::Exit, Runner::Unread) => self.passed > 0,
            (_, Runner::Unread) => true,
            (Runner::Exit, Runner::Exit) => self.passed > best.passed,
            (Runner::Exit, _) => self.passed > 0,
            (_, Runner::Exit) => best.passed == 0,
            (Runner::Number, Runner::Number) => self.milli > best.milli,
            (Runner::Number, _) | (_, Runner::Number) => true,
            _ => {
                self.passed > best.passed
                    || (self.passed == best.passed && self.failed < best.failed)
            }
        }
    }

    /// This score with the `flaky` tests it counts as passing taken out
    /// (a flaky pass is no progress: the plateau rule's best leaves them
    /// out). Known only where every failing test is named: a test flaky
    /// and not among them passed.
    pub(crate) fn without(&self, flaky: &std::collections::BTreeSet<String>) -> Score {
        let named_all_failures = self.failing.len() as u64 == u64::from(self.failed);
        if flaky.is_empty() || !self.reader.counts_tests() || !named_all_failures {
            return self.clone();
        }
        let passing_flaky = flaky.iter().filter(|t| !self.failing.contains(*t)).count() as u32;
        Score {
            passed: self.passed.saturating_sub(passing_flaky),
            ..self.clone()
        }
    }

    /// The points it counts for a trend: tests passed, the number, or 1/0.
    pub(crate) fn points(&self) -> f64 {
        match self.milli {
            Some(m) if self.reader == Runner::Number => m as f64 / 1000.0,
            _ if self.reader == Runner::Unread => 0.0,
            _ => f64::from(self.passed),
        }
    }

    /// `tests 41/50`, `score 87.5`, `check passes`.
    pub fn label(&self) -> String {
        match self.reader {
            Runner::Number => format!("score {}", milli_text(self.milli.unwrap_or(0))),
            Runner::Exit if self.passed > 0 => "check passes".into(),
            Runner::Exit => "check fails".into(),
            Runner::Unread => "no count (the runner's words do not add up)".into(),
            _ => format!("tests {}/{}", self.passed, self.passed + self.failed),
        }
    }

    /// The short form a log line and the status line carry: `41/50`, `87.5`, `pass`.
    pub fn short(&self) -> String {
        match self.reader {
            Runner::Number => milli_text(self.milli.unwrap_or(0)),
            Runner::Exit if self.passed > 0 => "pass".into(),
            Runner::Exit => "fail".into(),
            Runner::Unread => "no count".into(),
            _ => format!("{}/{}", self.passed, self.passed + self.failed),
        }
    }
}

/// The change from `before` to `now`, as the status line shows it: `↑3`,
/// `↓2`, `=` (nothing for a pass/fail check, or scores read differently).
pub fn trend(now: &Score, before: Option<&Score>) -> String {
    let Some(before) = before else {
        return String::new();
    };
    if !now.reader.graded() || now.reader.counts_tests() != before.reader.counts_tests() {
        return String::new();
    }
    let diff = now.points() - before.points();
    if diff.abs() < 1e-9 {
        "=".into()
    } else if diff > 0.0 {
        format!("↑{}", number_text(diff))
    } else {
        format!("↓{}", number_text(-diff))
    }
}

/// Thousandths as a short decimal: `87.5`, `3`, `-0.25`.
fn milli_text(milli: i64) -> String {
    number_text(milli as f64 / 1000.0)
}

pub(crate) fn number_text(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tests(passed: u32, failed: u32) -> Score {
        Score {
            reader: Runner::Cargo,
            passed,
            failed,
            cases: Vec::new(),
            ..Score::of_exit(true)
        }
    }

    fn number(milli: i64) -> Score {
        Score {
            reader: Runner::Number,
            milli: Some(milli),
            ..Score::of_exit(true)
        }
    }

    #[test]
    fn more_passing_or_fewer_failing_beats_the_best() {
        assert!(tests(42, 8).beats(&tests(41, 9)));
        assert!(tests(41, 8).beats(&tests(41, 9)), "a failing test removed");
        assert!(!tests(41, 9).beats(&tests(41, 9)), "the same is no gain");
        assert!(!tests(40, 5).beats(&tests(41, 9)), "fewer pass");
        assert!(number(87_500).beats(&number(87_000)));
        assert!(!number(87_000).beats(&number(87_000)));
        assert!(Score::of_exit(true).beats(&Score::of_exit(false)));
        assert!(!Score::of_exit(false).beats(&Score::of_exit(false)));
        assert!(number(1).beats(&tests(41, 9)), "a new measure starts again");
        // A build that broke before its tests ran: below any reading.
        assert!(!Score::of_exit(false).beats(&tests(0, 9)));
        assert!(tests(0, 9).beats(&Score::of_exit(false)));
        assert!(
            Score::of_exit(true).beats(&tests(41, 9)),
            "the check passes"
        );
        // Words that do not add up (a test printed a summary): never a
        // best, even where the check passed; any reading beats them.
        let unread = Score::unread(true);
        assert!(!unread.beats(&tests(0, 9)));
        assert!(!unread.beats(&Score::of_exit(false)));
        assert!(!unread.beats(&Score::unread(false)));
        assert!(tests(1, 2).beats(&unread));
        assert!(Score::of_exit(true).beats(&unread));
        assert!(!Score::of_exit(false).beats(&unread));
        assert_eq!(
            unread.label(),
            "no count (the runner's words do not add up)"
        );
        assert_eq!(trend(&tests(2, 1), Some(&unread)), "");
    }

    #[test]
    fn labels_and_trends_read_as_the_status_line_shows_them() {
        assert_eq!(tests(41, 9).label(), "tests 41/50");
        assert_eq!(number(87_500).label(), "score 87.5");
        assert_eq!(Score::of_exit(false).label(), "check fails");
        assert_eq!(trend(&tests(44, 6), Some(&tests(41, 9))), "↑3");
        assert_eq!(trend(&tests(40, 10), Some(&tests(41, 9))), "↓1");
        assert_eq!(trend(&tests(41, 9), Some(&tests(41, 9))), "=");
        assert_eq!(trend(&number(2_250), Some(&number(2_000))), "↑0.25");
        assert_eq!(trend(&tests(41, 9), None), "");
        assert_eq!(
            trend(&Score::of_exit(true), Some(&Score::of_exit(false))),
            ""
        );
    }
}
