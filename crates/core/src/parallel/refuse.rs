//! `--parallel`: what the merge queue refuses to merge. A worker's branch
//! may not change the loop's configuration (`file_names::CONFIG_FILES`,
//! `.claude/ralph-review/`), a pinned file (`pins`), or the PRD beyond the
//! `passes` values ralph itself sets: a verdict depends only on what the user
//! set up at the start and on the work. The story is sent back naming the
//! files and why (`MergeOutcome::Refused`).
//!
//! `forbidden` and `prd_changed` are pure; `prd_refusal` and `branch_refusals`
//! read the worktree and run git (whole outputs, so not through
//! `parallel::branches::git`, which keeps a tail). Does I/O.

use crate::file_names::{CONFIG_FILES, REVIEW_DIR};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const CONFIG_WHY: &str = "the loop's configuration, fixed at its start";
/// The client's settings in the project: merged, they would reach the
/// user's session (`disableAllHooks`, hooks, `env`) past the guard, which
/// only sees the worker write into its own worktree.
const CLIENT_SETTINGS: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];
const SETTINGS_WHY: &str = "the client's settings for this project (hooks, environment): a worker's branch may not change them while a loop runs";
const PRD_WHY: &str = "the PRD: ralph marks the story passing itself once it is merged; nothing else in it is the worker's to change";

/// The files of `changed` a worker may not change, each with why.
pub(crate) fn forbidden(
    changed: &[String],
    pins: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    changed
        .iter()
        .filter_map(|f| {
            let review_dir = f.starts_with(&format!("{REVIEW_DIR}/"));
            if CONFIG_FILES.contains(&f.as_str()) || review_dir {
                Some((f.clone(), CONFIG_WHY.to_string()))
            } else if CLIENT_SETTINGS.contains(&f.as_str()) {
                Some((f.clone(), SETTINGS_WHY.to_string()))
            } else {
                pins.get(f)
                    .map(|why| (f.clone(), format!("pinned: {}", pin_why(why))))
            }
        })
        .collect()
}

fn pin_why(why: &str) -> String {
    if why.starts_with(crate::pins::FROM_FLAG) || why.starts_with("prd pin") {
        format!("by the user ({why})")
    } else {
        format!("part of the check `{why}`")
    }
}

/// Does the worker's PRD differ from `base` in anything but the stories'
/// `passes`? Text that is not JSON counts as changed when it differs.
pub(crate) fn prd_changed(worker: &str, base: &str) -> bool {
    let parse = |t: &str| serde_json::from_str::<Value>(t.strip_prefix('\u{feff}').unwrap_or(t));
    match (parse(worker), parse(base)) {
        (Ok(w), Ok(b)) => without_passes(w) != without_passes(b),
        _ => worker != base,
    }
}

fn without_passes(mut prd: Value) -> Value {
    for key in ["userStories", "stories"] {
        if let Some(Value::Array(stories)) = prd.get_mut(key) {
            for story in stories.iter_mut() {
                if let Value::Object(s) = story {
                    s.remove("passes");
                }
            }
        }
    }
    prd
}

/// "a (why); b (why)" for the worker and the user.
pub(crate) fn listed(files: &[(String, String)]) -> String {
    files
        .iter()
        .map(|(f, why)| format!("{f} ({why})"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Before the worktree is committed: the PRD as the worker left it, against
/// the main tree's (where ralph marks stories passing) and its version in
/// each of `bases` (the commit the worker started from, the loop's branch
/// now). A change beyond `passes` from all of them is refused; no PRD in the
/// worktree, or none to compare with, is not judged here.
pub(crate) fn prd_refusal(
    root: &Path,
    worktree: &Path,
    prd_file: &str,
    bases: &[&str],
) -> Option<(String, String)> {
    let worker = std::fs::read_to_string(worktree.join(prd_file)).ok()?;
    let main = std::fs::read_to_string(root.join(prd_file)).ok();
    let known: Vec<String> = main
        .into_iter()
        .chain(
            bases
                .iter()
                .filter_map(|b| committed(worktree, b, prd_file)),
        )
        .collect();
    let changed = !known.is_empty() && known.iter().all(|base| prd_changed(&worker, base));
    changed.then(|| (prd_file.to_string(), PRD_WHY.to_string()))
}

/// A file's whole text at `commit` (`git show`: a blob, read whole; the
/// merge queue's own git helper keeps only an output's tail).
fn committed(dir: &Path, commit: &str, path: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["show", &format!("{commit}:{path}")])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// After the commit: what the worker's branch changes (against its merge
/// base with `loop_head`) that it may not.
pub(crate) fn branch_refusals(
    worktree: &Path,
    loop_head: &str,
    pins: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let range = format!("{loop_head}...HEAD");
    // Read whole (`-z`, no quoting): the merge queue's git helper keeps only
    // the tail of an output, and a long list must not hide a file.
    let out = std::process::Command::new("git")
        .args(["diff", "--no-renames", "--name-only", "-z", &range])
        .current_dir(worktree)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let changed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    forbidden(&changed, pins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_pins_and_the_rest() {
        let pins: BTreeMap<String, String> = [(
            "tests/check.sh".to_string(),
            "sh tests/check.sh".to_string(),
        )]
        .into();
        let changed: Vec<String> = [
            "src/lib.rs",
            ".claude/ralph.toml",
            ".ralph/command-policy",
            ".claude/ralph-review/strict.md",
            "tests/check.sh",
            "tests/new_test.sh",
            ".claude/settings.local.json",
            ".claude/agents/helper.md",
        ]
        .map(String::from)
        .to_vec();
        let refused = forbidden(&changed, &pins);
        let names: Vec<&str> = refused.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            names,
            [
                ".claude/ralph.toml",
                ".ralph/command-policy",
                ".claude/ralph-review/strict.md",
                "tests/check.sh",
                ".claude/settings.local.json",
            ]
        );
        assert!(refused[4].1.contains("the client's settings"));
        assert!(
            refused[3]
                .1
                .contains("part of the check `sh tests/check.sh`")
        );
        assert!(listed(&refused[..1]).contains("fixed at its start"));
    }

    #[test]
    fn only_passes_may_differ_in_the_prd() {
        let base = r#"{"userStories":[{"id":"A","passes":false,"verify":"sh t.sh"}]}"#;
        let marked = r#"{"userStories":[{"id":"A","passes":true,"verify":"sh t.sh"}]}"#;
        let weakened = r#"{"userStories":[{"id":"A","passes":true,"verify":"true"}]}"#;
        assert!(!prd_changed(marked, base));
        assert!(!prd_changed(base, base));
        assert!(prd_changed(weakened, base));
        assert!(prd_changed("{", base));
    }
}
