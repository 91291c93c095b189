//! Independent review before completion (`--review`): when the loop's work
//! is claimed done and its checks pass, ralph itself asks reviewers, each a
//! separate, fresh, read-only process, for a structured verdict. Only the
//! verdicts the Stop hook recorded (`review.json` in the loop's folder)
//! count; nothing the worker writes or says does. Pure, except [`run`].
//!
//! A reviewer is a built-in prompt (`acceptance`, `security`, `quality`, run
//! through `claude -p --json-schema`), overridable per project in
//! `.claude/ralph-review/NAME.md`, or any program given by `--review-cmd`
//! (it reads the request as JSON on stdin and prints the verdict JSON).

pub mod change;
pub(crate) mod disk;
pub(crate) mod inputs;
pub(crate) mod reviewers;

pub use change::{ChangedFile, IgnoredFile};
// The settings live with the state that keeps them; `review` is their face.
pub(crate) use crate::review_settings::CUSTOM;
pub use crate::review_settings::ReviewConfig;
pub use crate::review_settings::{DEFAULT_TIMEOUT_SECS, STORY};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The verdict's JSON Schema, given to `claude -p --json-schema`.
pub(crate) const SCHEMA: &str = r#"{"type":"object","properties":{"verdict":{"type":"string","enum":["approved","rejected"]},"findings":{"type":"array","items":{"type":"object","properties":{"severity":{"type":"string","enum":["critical","high","medium","low"]},"file":{"type":"string"},"line":{"type":"integer"},"what":{"type":"string"},"fix":{"type":"string"}},"required":["severity","what"]}}},"required":["verdict","findings"]}"#;

/// The review log's key of a story's review.
pub(crate) fn story_key(id: &str) -> String {
    format!("{STORY}:{id}")
}

/// One finding of a reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// `critical`, `high`, `medium` or `low` (anything else sorts last).
    #[serde(default)]
    pub severity: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(default)]
    pub what: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    fn rank(&self) -> u8 {
        match self.severity.as_str() {
            "critical" => 0,
            "high" => 1,
            "medium" => 2,
            "low" => 3,
            _ => 4,
        }
    }

    /// `[high] src/a.rs:3: what (fix: ...)`.
    pub(crate) fn line_text(&self) -> String {
        let at = match (&self.file, self.line) {
            (Some(f), Some(l)) => format!(" {f}:{l}:"),
            (Some(f), None) => format!(" {f}:"),
            _ => String::new(),
        };
        let fix = self
            .fix
            .as_deref()
            .filter(|f| !f.trim().is_empty())
            .map(|f| format!(" (fix: {})", one_line(f)))
            .unwrap_or_default();
        let severity = if self.severity.is_empty() {
            "finding"
        } else {
            &self.severity
        };
        format!("[{severity}]{at} {}{fix}", one_line(&self.what))
    }
}

/// What became of one reviewer's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewResult {
    Approved,
    Rejected,
    /// It could not give a verdict (failed, timed out, answered no verdict):
    /// not approved.
    Failed,
}

/// One reviewer's verdict, as the Stop hook recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewVerdict {
    pub outcome: ReviewResult,
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The working tree it reviewed (`worktree::fingerprint`).
    #[serde(default)]
    pub fingerprint: Option<String>,
    pub time: String,
    #[serde(default)]
    pub duration_ms: u64,
}

impl ReviewVerdict {
    pub fn approved(&self) -> bool {
        self.outcome == ReviewResult::Approved
    }
}

/// `review.json`: the verdicts, by reviewer, and how many rounds ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewLog {
    #[serde(default)]
    pub rounds: u32,
    #[serde(default)]
    pub verdicts: BTreeMap<String, ReviewVerdict>,
}

impl ReviewLog {
    pub fn parse(text: &str) -> Option<ReviewLog> {
        serde_json::from_str(text).ok()
    }

    pub fn render(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The reviewers whose verdict is not for the tree `fingerprint`: they
    /// must review (again). Without a fingerprint (no git) every one does.
    pub fn due<'a>(&self, reviewers: &'a [String], fingerprint: Option<&str>) -> Vec<&'a str> {
        reviewers
            .iter()
            .filter(|name| {
                let done = self.verdicts.get(*name);
                fingerprint.is_none()
                    || done.is_none_or(|v| v.fingerprint.as_deref() != fingerprint)
            })
            .map(String::as_str)
            .collect()
    }
}

/// The verdict of every reviewer on the current tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// `(reviewer, verdict)`, in the loop's order.
    pub verdicts: Vec<(String, ReviewVerdict)>,
}

impl Standing {
    pub(crate) fn all_approved(&self) -> bool {
        self.verdicts.iter().all(|(_, v)| v.approved())
    }

    pub(crate) fn approvers(&self) -> Vec<&str> {
        self.verdicts.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The open findings, grouped by reviewer, most severe first; a
    /// reviewer that failed says why.
    pub(crate) fn findings_text(&self) -> String {
        let mut out = String::new();
        for (name, v) in self.verdicts.iter().filter(|(_, v)| !v.approved()) {
            match (&v.outcome, &v.error) {
                (ReviewResult::Failed, e) => out.push_str(&format!(
                    "- {name} reviewer: no verdict ({})\n",
                    e.as_deref().unwrap_or("it failed")
                )),
                _ => {
                    out.push_str(&format!("- {name} reviewer rejected:\n"));
                    let mut findings: Vec<&Finding> = v.findings.iter().collect();
                    findings.sort_by_key(|f| f.rank());
                    if findings.is_empty() {
                        out.push_str("  - (no findings given)\n");
                    }
                    for f in findings {
                        out.push_str(&format!("  - {}\n", f.line_text()));
                    }
                }
            }
        }
        out
    }

    /// How many findings are open.
    pub(crate) fn open_findings(&self) -> usize {
        self.verdicts
            .iter()
            .filter(|(_, v)| !v.approved())
            .map(|(_, v)| v.findings.len().max(1))
            .sum()
    }
}

/// The verdict of the loop's reviewers on the tree `fingerprint`, from the
/// log: `None` while one of them has no verdict for it.
pub(crate) fn standing(
    log: &ReviewLog,
    reviewers: &[String],
    fingerprint: Option<&str>,
) -> Option<Standing> {
    let mut verdicts = Vec::new();
    for name in reviewers {
        let v = log.verdicts.get(name)?;
        if fingerprint.is_some() && v.fingerprint.as_deref() != fingerprint {
            return None;
        }
        verdicts.push((name.clone(), v.clone()));
    }
    Some(Standing { verdicts })
}

/// What a reviewer is asked: the task, the criteria, and the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub reviewer: String,
    pub project: String,
    /// The task (plain mode), or the PRD's stories (PRD mode).
    pub task: String,
    /// Every acceptance criterion, `STORY: criterion` in PRD mode.
    pub acceptance_criteria: Vec<String>,
    /// The commit the loop started from, when known.
    pub base: Option<String>,
    /// `git log --oneline BASE..HEAD`.
    pub commits: String,
    /// One line per changed file since the base, tracked or not: `A path`,
    /// `M path`, `D path`, `R old -> new` (`review::change`).
    pub status: String,
    /// The patches since the base, new files' content included, each file
    /// whole or named past the cap (`diff_limit`).
    pub diff: String,
    /// Every changed file: its status, size, and whether its content is in
    /// `diff`.
    #[serde(default)]
    pub files: Vec<ChangedFile>,
    /// The most bytes of `diff`.
    #[serde(default)]
    pub diff_limit: usize,
    /// Files the repository ignores that appeared during the loop (named,
    /// with their size; a folder collapsed).
    #[serde(default)]
    pub ignored_appeared: Vec<IgnoredFile>,
    /// Tests that failed at the loop's start and pass now whose file
    /// changed, each with that file's diff since (`suite::changed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turned_to_pass: Vec<String>,
    /// When a test turned to pass: the files the test runner loads into its
    /// own process (`conftest.py`, its configuration) that changed, each
    /// with its diff (`suite::changed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runner_files_changed: Vec<String>,
}

/// The verdict a reviewer gave, read from `{"verdict": ..., "findings": [...]}`.
pub(crate) fn parse_verdict(value: &Value) -> Result<(ReviewResult, Vec<Finding>), String> {
    let outcome = match value.get("verdict").and_then(Value::as_str).map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("approved") => ReviewResult::Approved,
        Some(v) if v.eq_ignore_ascii_case("rejected") => ReviewResult::Rejected,
        Some(v) => {
            return Err(format!(
                "verdict `{}` is neither approved nor rejected",
                one_line(v)
            ));
        }
        None => return Err("no `verdict` in its answer".into()),
    };
    let findings = match value.get("findings") {
        None | Some(Value::Null) => Vec::new(),
        Some(f) => serde_json::from_value(f.clone())
            .map_err(|e| format!("`findings` is not a list of findings: {e}"))?,
    };
    Ok((outcome, findings))
}

/// The verdict in `claude -p --output-format json` output: its
/// `structured_output` (measured on 2.1.328: the client offers the model a
/// `StructuredOutput` tool with the schema and puts its input there).
pub(crate) fn verdict_of_claude(stdout: &str) -> Result<(ReviewResult, Vec<Finding>), String> {
    let result: Value = serde_json::from_str(stdout.trim())
        .map_err(|_| format!("its output is not JSON: {}", one_line(&tail(stdout, 200))))?;
    if result.get("is_error").and_then(Value::as_bool) == Some(true) {
        let why = result
            .get("result")
            .and_then(Value::as_str)
            .unwrap_or("an error");
        return Err(format!("the client reported {}", one_line(why)));
    }
    match result.get("structured_output") {
        Some(v) if v.is_object() => parse_verdict(v),
        _ => Err("it gave no structured verdict".into()),
    }
}

/// The verdict a `--review-cmd` program printed (the last JSON object of
/// its output, so a line of chatter before it does no harm).
pub(crate) fn verdict_of_program(stdout: &str) -> Result<(ReviewResult, Vec<Finding>), String> {
    let text = stdout.trim();
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return parse_verdict(&v);
    }
    let last = text.lines().rev().find_map(|l| {
        serde_json::from_str::<Value>(l.trim())
            .ok()
            .filter(Value::is_object)
    });
    match last {
        Some(v) => parse_verdict(&v),
        None => Err(format!(
            "it printed no verdict JSON: {}",
            one_line(&tail(text, 200))
        )),
    }
}

/// The prompt of a built-in reviewer: its instructions, then the request.
pub(crate) fn prompt(instructions: &str, request: &Request) -> String {
    let criteria = if request.acceptance_criteria.is_empty() {
        "(none written: judge by the task)".to_string()
    } else {
        request
            .acceptance_criteria
            .iter()
            .map(|c| format!("- {c}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let base = request
        .base
        .as_deref()
        .unwrap_or("(no commit: the whole tree is new)");
    let turned = if request.turned_to_pass.is_empty() {
        String::new()
    } else {
        format!(
            "# Tests that failed at the loop's start and pass now, in files the loop changed\n\nEach is a fix of the code, or a test changed to pass (its body emptied, its assertion loosened, its expected value rewritten): ralph cannot tell which. Judge each; a test weakened to pass is a finding.\n\n{}\n\n",
            request.turned_to_pass.join("\n\n")
        )
    };
    let runner = if request.runner_files_changed.is_empty() {
        String::new()
    } else {
        format!(
            "# Files the test runner loads, changed since the loop's start\n\nTests that failed at the loop's start pass now, and these files run inside the test runner (its configuration, plugins, setup files): code there can rewrite any result before the runner reports it. Judge each; a result rewritten, a test filtered or a failure hidden is a finding.\n\n{}\n\n",
            request.runner_files_changed.join("\n\n")
        )
    };
    format!(
        "{instructions}\n\n# The task\n\n{}\n\n# Acceptance criteria\n\n{criteria}\n\n{turned}{runner}# The change since the loop started (base {base})\n\nCommits:\n{}\n\nChanged files:\n{}\n\nNot in the diff below:\n{}\n\nThe diff (every change, new files included):\n```diff\n{}\n```\n\nRead any file you need (Read, Grep, Glob). Then call StructuredOutput once with your verdict: \"approved\" only when nothing below your bar is left; otherwise \"rejected\" with one finding per problem (severity, file, line, what is wrong, how to fix it).\n",
        request.task.trim_end(),
        or_none(&request.commits),
        or_none(&request.status),
        or_none(&request.unshown_text()),
        request.diff.trim_end()
    )
}

fn or_none(s: &str) -> &str {
    if s.trim().is_empty() {
        "(none)"
    } else {
        s.trim_end()
    }
}

/// The built-in instructions of `name`.
pub(crate) fn builtin_instructions(name: &str) -> &'static str {
    match name {
        "security" => include_str!("../../../../reviewers/security.md"),
        "quality" => include_str!("../../../../reviewers/quality.md"),
        STORY => include_str!("../../../../reviewers/story.md"),
        _ => include_str!("../../../../reviewers/acceptance.md"),
    }
}

/// The system-prompt line that names a reviewer (the scripted model in the
/// tests tells reviewers apart by it).
pub(crate) fn system_line(name: &str) -> String {
    format!(
        "You are ralph's {name} reviewer: an independent, read-only reviewer of a Ralph loop's work. You change nothing."
    )
}

fn one_line(s: &str) -> String {
    crate::fmt::one_line(s, 300)
}

fn tail(s: &str, n: usize) -> String {
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len())
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(s.len());
    s[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_from_the_client_and_from_a_program() {
        let out = r#"{"type":"result","is_error":false,"result":"x","structured_output":{"verdict":"rejected","findings":[{"severity":"low","what":"typo"},{"severity":"high","file":"a.rs","line":3,"what":"no test","fix":"add one"}]}}"#;
        let (o, f) = verdict_of_claude(out).unwrap();
        assert_eq!(o, ReviewResult::Rejected);
        assert_eq!(f.len(), 2);
        assert!(verdict_of_claude(r#"{"is_error":false,"result":"VERIFIED_COMPLETE"}"#).is_err());
        assert!(verdict_of_claude("not json").is_err());
        let (o, _) =
            verdict_of_program("thinking...\n{\"verdict\": \"approved\", \"findings\": []}\n")
                .unwrap();
        assert_eq!(o, ReviewResult::Approved);
        assert!(verdict_of_program("{\"verdict\": \"maybe\"}").is_err());
        assert!(verdict_of_program("").is_err());
    }

    fn verdict(outcome: ReviewResult, fp: &str, findings: Vec<Finding>) -> ReviewVerdict {
        ReviewVerdict {
            outcome,
            findings,
            error: None,
            fingerprint: Some(fp.into()),
            time: "t".into(),
            duration_ms: 1,
        }
    }

    #[test]
    fn standing_needs_every_reviewer_on_this_tree_and_sorts_findings() {
        let names: Vec<String> = vec!["acceptance".into(), "security".into()];
        let mut log = ReviewLog::default();
        log.verdicts.insert(
            "acceptance".into(),
            verdict(ReviewResult::Approved, "f1", vec![]),
        );
        assert!(standing(&log, &names, Some("f1")).is_none());
        assert_eq!(log.due(&names, Some("f1")), ["security"]);
        let low = Finding {
            severity: "low".into(),
            file: None,
            line: None,
            what: "naming".into(),
            fix: None,
        };
        let high = Finding {
            severity: "high".into(),
            file: Some("src/auth.rs".into()),
            line: Some(9),
            what: "token logged".into(),
            fix: Some("redact it".into()),
        };
        log.verdicts.insert(
            "security".into(),
            verdict(ReviewResult::Rejected, "f1", vec![low, high]),
        );
        let s = standing(&log, &names, Some("f1")).unwrap();
        assert!(!s.all_approved());
        let text = s.findings_text();
        assert!(
            text.find("[high] src/auth.rs:9: token logged (fix: redact it)")
                .unwrap()
                < text.find("[low] naming").unwrap(),
            "{text}"
        );
        assert!(!text.contains("acceptance"), "{text}");
        // Another tree: every reviewer is due again.
        assert!(standing(&log, &names, Some("f2")).is_none());
        assert_eq!(log.due(&names, Some("f2")).len(), 2);
    }
}
