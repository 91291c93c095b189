//! Verified completion: a command's exit code, not the model's word, decides.
//!
//! The loop may carry a `verify` command (run when completion is claimed) and
//! each PRD story may carry its own. Results are kept in
//! `verify.json` in the loop's folder, with the working-tree fingerprint they ran
//! on, so a story verified on a tree is not re-run needlessly, and a later
//! change to the tree re-opens the question when completion is claimed.
//! This module holds the results and their wording; which checks run is
//! `stop::plan`'s rule, what they mean for completion `stop::completion`'s,
//! and `worktree` runs them.
//! Pure, but for [`read_log`] (the results' file).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default time a verify command may take, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// One run of a check command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub command: String,
    /// The exit status; `None` when killed (timeout) or not started.
    pub exit: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    /// The last lines of stdout+stderr, bounded by `bounded::TAIL_LINES` / `TAIL_BYTES`.
    #[serde(default)]
    pub output_tail: String,
    /// The working tree it ran on (`worktree::fingerprint`), if known.
    #[serde(default)]
    pub fingerprint: Option<String>,
    pub time: String,
    #[serde(default)]
    pub duration_ms: u64,
    /// It ran with the loop's pinned files as they were at start (see `pins`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// Pinned files that differed and were put back just before it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub put_back: Vec<String>,
    /// What its output measured (`score::runners`): tests passed and
    /// failed, a number, or its exit alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<Box<crate::score::Score>>,
    /// ralph did not run it: what it would run is not the user's check any
    /// more (`pins`); `output_tail` says why.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_run: bool,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        self.exit == Some(0) && !self.timed_out
    }

    /// How a check that did not pass ended, in the words every message uses:
    /// `exit 1`, `timed out after 300 s`, `could not be started, or was
    /// killed by a signal`.
    pub fn status_text(&self, timeout_secs: u64) -> String {
        match (self.timed_out, self.exit) {
            _ if self.not_run => "not run: what it runs changed since the loop's start".into(),
            (true, _) => format!("timed out after {timeout_secs} s"),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "could not be started, or was killed by a signal".into(),
        }
    }

    /// The failure as the model should read it.
    pub(crate) fn failure_report(&self, timeout_secs: u64) -> String {
        let tail = if self.output_tail.trim().is_empty() {
            "(no output)".to_string()
        } else {
            self.output_tail.trim_end().to_string()
        };
        let pinned = self.put_back_note();
        format!(
            "`{}` failed ({}). Last lines of its output:\n```\n{tail}\n```{pinned}",
            self.command,
            self.status_text(timeout_secs)
        )
    }

    /// What the model is told when pinned files were put back before it
    /// ran ("" when none was).
    pub(crate) fn put_back_note(&self) -> String {
        if self.put_back.is_empty() {
            return String::new();
        }
        format!(
            "\nBefore it ran, ralph put back {}, pinned at the loop's start: a check's files are fixed when the loop starts (the version you wrote is kept in the loop's folder). Change the code under test, not the check.",
            self.put_back.join(", ")
        )
    }

    /// What it measured, as a measure reads it: a number counts only for a
    /// `--score` command (`numbered`: a check's last number is a time, a
    /// count of files...); a check that printed nothing to read is its exit.
    pub(crate) fn score_as(&self, numbered: bool) -> crate::score::Score {
        match &self.score {
            Some(s) if s.reader != crate::score::Runner::Number || numbered => (**s).clone(),
            _ => crate::score::Score::of_exit(self.passed()),
        }
    }

    /// Mark it as run against the loop's pins, naming the files put back.
    #[must_use]
    pub(crate) fn with_pins(mut self, pinned: bool, put_back: Vec<String>) -> Self {
        self.pinned = pinned;
        self.put_back = put_back;
        self
    }
}

/// The sidecar file's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyLog {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#loop: Option<CheckResult>,
    #[serde(default)]
    pub stories: BTreeMap<String, CheckResult>,
}

impl VerifyLog {
    pub fn parse(text: &str) -> VerifyLog {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub fn render(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The record for a story's current command, if any.
    pub fn story(&self, id: &str, command: &str) -> Option<&CheckResult> {
        self.stories.get(id).filter(|r| r.command == command)
    }
}

/// Check results so far (`verify.json` at `path`); `None` when there are
/// none (or they cannot be read).
pub fn read_log(path: &std::path::Path) -> Option<VerifyLog> {
    crate::store::read_hint(path).map(|t| VerifyLog::parse(&t))
}
