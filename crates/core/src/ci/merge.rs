//! `ralph merge`: what becomes of each story branch offered to the loop's
//! branch, as data for the JSON report and the step summary. The rules of
//! the `--parallel` merge queue over branches instead of worktrees: nothing
//! from a branch decides how it is judged (the story, its check and the
//! pinned files are read from the base), a branch that changes what the
//! loop was set up with is refused, and a conflict or a failing check sends
//! the story back for the next wave. Pure.

use crate::parallel::story_branch;
use crate::prd::Prd;
use serde::Serialize;
use std::collections::BTreeMap;

/// Every branch was merged, or had nothing to merge.
pub(crate) const EXIT_MERGED: u8 = 0;
/// At least one story goes back (conflict, failing check, refusal).
pub(crate) const EXIT_SENT_BACK: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

/// Paths a story branch may not change beyond those of `parallel::refuse`:
/// the repository's workflows (they run with its secrets: a merged change
/// would run in the next wave with the model's key) and ralph's own files.
const MORE_FORBIDDEN: [(&str, &str); 2] = [
    (
        ".github/",
        "the repository's workflows and actions: they run with its secrets",
    ),
    (".claude/ralph-", "ralph's own files"),
];

/// What one branch came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum MergeResult {
    /// In the loop's branch; its check passed there; marked passing.
    Merged {
        commit: String,
        check: Option<String>,
    },
    /// The story passes on the loop's branch already: nothing merged.
    AlreadyPassing,
    /// Not merged: the story runs again in a later wave.
    SendBack { reason: SendBack },
}

/// Why a story goes back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SendBack {
    /// The branch conflicts with the loop's branch in these files.
    Conflict { files: Vec<String> },
    /// Merged, its check failed on the merged tree: the merge was undone.
    CheckFailed {
        command: String,
        output_tail: String,
    },
    /// The branch changes what a story branch may not: never merged.
    Refused { files: Vec<(String, String)> },
    /// Its dependencies do not pass on the loop's branch (yet).
    NotRunnable { why: String },
    /// No such branch, or git failed.
    Failed { why: String },
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Merge {
    pub story: String,
    pub branch: String,
    #[serde(flatten)]
    pub verdict: MergeResult,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    pub merged: Vec<String>,
    pub sent_back: Vec<String>,
    pub results: Vec<Merge>,
    /// The loop branch's head after the merges.
    pub head: String,
}

impl MergeReport {
    pub fn of(results: Vec<Merge>, head: String) -> MergeReport {
        let ids = |f: fn(&MergeResult) -> bool| -> Vec<String> {
            results
                .iter()
                .filter(|m| f(&m.verdict))
                .map(|m| m.story.clone())
                .collect()
        };
        MergeReport {
            merged: ids(|v| matches!(v, MergeResult::Merged { .. })),
            sent_back: ids(|v| matches!(v, MergeResult::SendBack { .. })),
            results,
            head,
        }
    }

    pub fn exit_code(&self) -> u8 {
        if self.sent_back.is_empty() {
            EXIT_MERGED
        } else {
            EXIT_SENT_BACK
        }
    }

    /// A Markdown table for a person (GitHub's step summary).
    pub fn table(&self) -> String {
        let mut out = String::from("| story | branch | verdict |\n| --- | --- | --- |\n");
        for m in &self.results {
            out.push_str(&format!(
                "| {} | `{}` | {} |\n",
                m.story,
                m.branch,
                verdict_text(&m.verdict)
                    .replace('|', "\\|")
                    .replace('\n', " ")
            ));
        }
        out
    }
}

/// The verdict in a few words.
pub(crate) fn verdict_text(v: &MergeResult) -> String {
    match v {
        MergeResult::Merged { commit, .. } => {
            format!("merged, check passed, marked passing ({})", short(commit))
        }
        MergeResult::AlreadyPassing => "passes already: nothing merged".into(),
        MergeResult::SendBack { reason } => format!(
            "sent back: {}",
            match reason {
                SendBack::Conflict { files } => format!("conflict in {}", files.join(", ")),
                SendBack::CheckFailed { command, .. } =>
                    format!("its check `{command}` failed on the merged tree"),
                SendBack::Refused { files } => format!(
                    "refused, it changes {}",
                    crate::parallel::refuse::listed(files)
                ),
                SendBack::NotRunnable { why } | SendBack::Failed { why } => why.clone(),
            }
        ),
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// The story a branch is named after (`ralph/US-1`, `origin/ralph/US-1`,
/// `refs/remotes/origin/ralph/US-1`), by `parallel::story_branch` of each of
/// the PRD's stories: a branch named after no story is not merged.
pub fn story_of_branch(prd: &Prd, branch: &str) -> Option<String> {
    let name = branch
        .trim_start_matches("refs/")
        .trim_start_matches("heads/")
        .trim_start_matches("remotes/");
    let name = name.strip_prefix("origin/").unwrap_or(name);
    prd.stories
        .iter()
        .find(|s| story_branch(&s.id) == name)
        .map(|s| s.id.clone())
}

/// What of `changed` (the branch's changes since its merge base with the
/// loop's branch) a story branch may not change, each with why: the
/// configuration, the client's settings and pinned files
/// (`parallel::refuse::forbidden`), the PRD at all (ralph marks `passes`
/// itself; a branch's `passes` is never trusted), the workflows, ralph's
/// files.
pub(crate) fn refusals(
    changed: &[String],
    prd_file: &str,
    pins: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut out = crate::parallel::refuse::forbidden(changed, pins);
    for f in changed {
        if out.iter().any(|(g, _)| g == f) {
            continue;
        }
        if f == prd_file {
            out.push((
                f.clone(),
                "the PRD: ralph marks the story passing itself at the merge".into(),
            ));
        } else if let Some((_, why)) = MORE_FORBIDDEN.iter().find(|(p, _)| f.starts_with(p)) {
            out.push((f.clone(), (*why).to_string()));
        }
    }
    out
}

/// The order stories are merged in: the loop's (`Prd::runnable`'s priority,
/// then file order), stories the PRD does not hold last.
pub fn order(prd: &Prd, stories: &mut [(String, String)]) {
    let rank = |id: &str| {
        prd.stories
            .iter()
            .position(|s| s.id == id)
            .map(|i| {
                (
                    prd.stories[i].priority.is_none(),
                    prd.stories[i].priority.unwrap_or(0),
                    i,
                )
            })
            .unwrap_or((true, i64::MAX, usize::MAX))
    };
    stories.sort_by_key(|(id, _)| rank(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prd() -> Prd {
        Prd::parse(
            r#"{"userStories":[
            {"id":"US-2","priority":2,"passes":false},
            {"id":"US 1","priority":1,"passes":false}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_branch_is_a_story_by_its_name_only() {
        let prd = prd();
        assert_eq!(story_of_branch(&prd, "ralph/US-2").as_deref(), Some("US-2"));
        assert_eq!(
            story_of_branch(&prd, "origin/ralph/US-1").as_deref(),
            Some("US 1")
        );
        assert_eq!(
            story_of_branch(&prd, "refs/remotes/origin/ralph/US-2").as_deref(),
            Some("US-2")
        );
        assert_eq!(story_of_branch(&prd, "ralph/US-3"), None);
        assert_eq!(story_of_branch(&prd, "main"), None);
    }

    #[test]
    fn the_prd_workflows_pins_and_configuration_are_refused() {
        let pins: BTreeMap<String, String> = [("check.sh".into(), "sh check.sh".into())].into();
        let changed: Vec<String> = [
            "src/a.rs",
            "prd.json",
            "check.sh",
            ".github/workflows/ralph-prd.yml",
            ".claude/ralph.toml",
            ".claude/ralph-story.json",
            ".claude/settings.json",
        ]
        .map(String::from)
        .to_vec();
        let refused = refusals(&changed, "prd.json", &pins);
        let files: Vec<&str> = refused.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            files,
            [
                "check.sh",
                ".claude/ralph.toml",
                ".claude/settings.json",
                "prd.json",
                ".github/workflows/ralph-prd.yml",
                ".claude/ralph-story.json"
            ]
        );
        assert!(refusals(&["src/a.rs".into()], "prd.json", &pins).is_empty());
    }

    #[test]
    fn merged_in_the_loops_order_and_reported() {
        let prd = prd();
        let mut stories = vec![
            ("US-9".to_string(), "ralph/US-9".to_string()),
            ("US-2".to_string(), "ralph/US-2".to_string()),
            ("US 1".to_string(), "ralph/US-1".to_string()),
        ];
        order(&prd, &mut stories);
        let ids: Vec<&str> = stories.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(ids, ["US 1", "US-2", "US-9"]);
        let report = MergeReport::of(
            vec![
                Merge {
                    story: "US 1".into(),
                    branch: "ralph/US-1".into(),
                    verdict: MergeResult::Merged {
                        commit: "abc".into(),
                        check: Some("true".into()),
                    },
                },
                Merge {
                    story: "US-2".into(),
                    branch: "ralph/US-2".into(),
                    verdict: MergeResult::SendBack {
                        reason: SendBack::Conflict {
                            files: vec!["a|b.txt".into()],
                        },
                    },
                },
            ],
            "def".into(),
        );
        assert_eq!(report.merged, ["US 1"]);
        assert_eq!(report.sent_back, ["US-2"]);
        assert_eq!(report.exit_code(), EXIT_SENT_BACK);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["results"][1]["verdict"], "send_back");
        assert_eq!(json["results"][1]["reason"]["kind"], "conflict");
        assert_eq!(json["results"][0]["commit"], "abc");
        assert!(
            report.table().contains("conflict in a\\|b.txt"),
            "{}",
            report.table()
        );
    }
}
