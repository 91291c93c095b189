//! The suite at a glance, as status (text and JSON), the report and the
//! end show it: each command's baseline (where the loop started, and how
//! its results were read), the tests gone since (and the removals the user
//! accepted), the flaky tests. Pure.

use super::inventory::{self, Gone};
use super::{BaselineFailure, BaselineState, Suite};
use crate::score::Reading;
use serde::Serialize;

/// Tests named at most in one line of status.
const MAX_NAMED: usize = 8;

/// One command's baseline, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaselineSummary {
    pub command: String,
    /// `done`, `pending` or `failed`.
    pub state: &'static str,
    /// `41 tests (3 failing, 2 skipped)`, or why there is none.
    pub text: String,
    /// `report` (the runner's structured report) or `text` (its words).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reading: Option<&'static str>,
    /// Every test named (else counts only).
    pub named: bool,
}

/// The suite's memory, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct SuiteSummary {
    pub baselines: Vec<BaselineSummary>,
    /// Tests gone from each command's newest run: `id (missing)`, `id (skipped)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gone: Vec<String>,
    /// Removals the user accepted: `id (at iteration 4)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
}

impl SuiteSummary {
    /// The summary of the loop at `paths` (its `suite.json` and the flaky
    /// tests of its scores), kept after the loop ends for the report.
    pub fn of_loop(paths: &crate::paths::LoopPaths) -> Option<SuiteSummary> {
        let flaky: Vec<String> = crate::score::history::read(&paths.scores)
            .flaky
            .into_iter()
            .collect();
        SuiteSummary::of(&super::read(&paths.suite), &flaky)
    }

    /// The summary of `suite` and the flaky tests of the scores (`None`:
    /// the loop has no baseline).
    pub(crate) fn of(suite: &Suite, flaky: &[String]) -> Option<SuiteSummary> {
        if suite.baselines.is_empty() {
            return None;
        }
        let baselines = suite
            .baselines
            .iter()
            .map(|(command, b)| baseline(command, &b.state))
            .collect();
        let mut gone = Vec::new();
        for (command, newest) in &suite.newest {
            let found = inventory::judge(suite, command, &newest.run);
            gone.extend(found.vanished.iter().map(|v| {
                let how = match v.gone {
                    Gone::Missing => "missing",
                    Gone::Skipped => "skipped",
                };
                format!("{} ({how})", v.test)
            }));
            if let Some((start, now)) = found.fewer {
                gone.push(format!("`{command}`: {now} tests, {start} at the start"));
            }
            if let Some(had) = found.unread {
                gone.push(format!(
                    "`{command}`: its output counts no test, {had} in the suite"
                ));
            }
        }
        let accepted = suite
            .accepted
            .iter()
            .map(|(id, a)| format!("{id} (at iteration {})", a.iteration))
            .collect();
        Some(SuiteSummary {
            baselines,
            gone,
            accepted,
            flaky: flaky.to_vec(),
        })
    }

    /// Status's lines (indented, as status has them).
    pub fn text(&self) -> String {
        self.lines()
            .into_iter()
            .map(|(label, text)| format!("  {label:<10} {text}\n"))
            .collect()
    }

    /// Each line as `(label, text)`: the baselines, then what is gone,
    /// what the user accepted, what is flaky.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for b in &self.baselines {
            let how = match b.reading {
                Some("report") => ", from the runner's report",
                Some(_) if !b.named => ", from its words: counts only, no test named",
                Some(_) => ", from its words",
                None => "",
            };
            out.push(("baseline:", format!("{}{how} (`{}`)", b.text, b.command)));
        }
        for (label, list) in [
            ("gone:", &self.gone),
            ("accepted:", &self.accepted),
            ("flaky:", &self.flaky),
        ] {
            if !list.is_empty() {
                out.push((label, named(list)));
            }
        }
        out
    }
}

fn baseline(command: &str, state: &BaselineState) -> BaselineSummary {
    let (state, text, reading, named) = match state {
        BaselineState::Done(inv) => (
            "done",
            format!(
                "{} at the start ({} failing, {} skipped)",
                crate::fmt::plural(u64::from(inv.total()), "test"),
                inv.failed,
                inv.skipped
            ),
            Some(match inv.reading {
                Reading::Report => "report",
                Reading::Text => "text",
            }),
            inv.named,
        ),
        BaselineState::Pending { since, .. } => (
            "pending",
            format!("being taken on the starting tree (since {since})"),
            None,
            false,
        ),
        BaselineState::Failed { why, .. } => ("failed", failure(why), None, false),
    };
    BaselineSummary {
        command: command.to_string(),
        state,
        text,
        reading,
        named,
    }
}

/// Why there is no baseline, for the user: a claim is then held to the
/// tests seen passing since.
fn failure(why: &BaselineFailure) -> String {
    let what = match why {
        BaselineFailure::Worktree(e) => {
            format!("ralph's copy of the starting tree failed: {e}")
        }
        BaselineFailure::TimedOut(secs) => format!("it ran past --verify-timeout ({secs} s)"),
        BaselineFailure::NothingCounted => "its output names no tests ralph can count".into(),
        BaselineFailure::Lost => "its process ended without a word".into(),
    };
    format!("none ({what}): a claim is held to the tests seen passing since")
}

fn named(list: &[String]) -> String {
    let shown: Vec<&str> = list.iter().take(MAX_NAMED).map(String::as_str).collect();
    let more = list.len().saturating_sub(MAX_NAMED);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}
