//! Verified completion: a command's exit code, not the model's word, decides.
//!
//! The loop may carry a `verify` command (run when completion is claimed) and
//! each PRD story may carry its own. Results are kept in
//! `.claude/ralph-loop.verify.json` with the working-tree fingerprint they ran
//! on, so a story verified on a tree is not re-run needlessly, and a later
//! change to the tree re-opens the question when completion is claimed.
//! This module holds the rules; `worktree` runs commands.

use crate::prd::Prd;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default time a verify command may take, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// The output kept from a check: at most this many lines...
pub const TAIL_LINES: usize = 60;
/// ...and this many bytes.
pub const TAIL_BYTES: usize = 8 * 1024;

/// One run of a check command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub command: String,
    /// The exit status; `None` when killed (timeout) or not started.
    pub exit: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    /// The last lines of stdout+stderr, bounded by `TAIL_LINES` / `TAIL_BYTES`.
    #[serde(default)]
    pub output_tail: String,
    /// The working tree it ran on (`worktree::fingerprint`), if known.
    #[serde(default)]
    pub fingerprint: Option<String>,
    pub time: String,
    #[serde(default)]
    pub duration_ms: u64,
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
            (true, _) => format!("timed out after {timeout_secs} s"),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "could not be started, or was killed by a signal".into(),
        }
    }

    /// The failure as the model should read it.
    pub fn failure_report(&self, timeout_secs: u64) -> String {
        let tail = if self.output_tail.trim().is_empty() {
            "(no output)".to_string()
        } else {
            self.output_tail.trim_end().to_string()
        };
        format!(
            "`{}` failed ({}). Last lines of its output:\n```\n{tail}\n```",
            self.command,
            self.status_text(timeout_secs)
        )
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

/// Which story checks to run now: `(story id, command)`.
///
/// A story claiming `passes: true` with a `verify` command is checked when it
/// has no result yet, or when its last result failed on another tree. A
/// passing result is reused, except when every story claims to pass (a
/// completion claim) and the tree changed since: then it is run again.
pub fn stories_to_check(
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

/// Whether any story carries a check (else the PRD is judged as written).
pub fn has_story_checks(prd: &Prd) -> bool {
    prd.stories.iter().any(|s| s.verify.is_some())
}

/// The PRD as the loop judges it: a story with a `verify` command passes only
/// when `passes` is true and its check passed.
pub fn effective_prd(prd: &Prd, log: &VerifyLog) -> Prd {
    let mut judged = prd.clone();
    for s in &mut judged.stories {
        if let Some(cmd) = &s.verify
            && s.passes
        {
            s.passes = log.story(&s.id, cmd).is_some_and(CheckResult::passed);
        }
    }
    judged
}

/// Stories that claim `passes: true` but whose check failed, with the result.
pub fn refused_stories<'a>(prd: &Prd, log: &'a VerifyLog) -> BTreeMap<String, &'a CheckResult> {
    prd.stories
        .iter()
        .filter(|s| s.passes)
        .filter_map(|s| {
            let cmd = s.verify.as_ref()?;
            let r = log.story(&s.id, cmd)?;
            (!r.passed()).then(|| (s.id.clone(), r))
        })
        .collect()
}

/// Keep the last `TAIL_LINES` lines and at most `TAIL_BYTES` bytes of `output`
/// (cut on a character boundary).
pub fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    let joined = lines[from..].join("\n");
    if joined.len() <= TAIL_BYTES {
        return joined;
    }
    let mut cut = joined.len() - TAIL_BYTES;
    while !joined.is_char_boundary(cut) {
        cut += 1;
    }
    format!("…{}", &joined[cut..])
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
        assert!(!effective_prd(&p, &log).stories[0].passes);
        assert_eq!(refused_stories(&p, &log).len(), 1);
        log.stories.insert("A".into(), result("check a", 0, "f2"));
        assert!(effective_prd(&p, &log).stories[0].passes);
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
    fn tail_is_bounded() {
        let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let t = tail(&long);
        assert_eq!(t.lines().count(), TAIL_LINES);
        assert!(t.ends_with("line 199"));
        let wide = "é".repeat(10_000);
        assert!(tail(&wide).len() <= TAIL_BYTES + 4);
    }
}
