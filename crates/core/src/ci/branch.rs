//! A story runner's branch: `ralph/<story>` entered at the start (new from
//! the loop's branch, or an earlier run's continued, with the loop's branch
//! merged into it), and the work committed at the end with the PRD and the
//! shared notes as the base has them. Does I/O (git through `crate::git`:
//! bounded, nothing of the repository's configuration runs).

use crate::parallel::branches::{self, commit_work, conflicted, head};
use std::path::Path;

/// Where a run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entered {
    pub branch: String,
    /// The loop branch's commit the run started from.
    pub base: String,
    /// An earlier run's branch was found and continued.
    pub continued: bool,
    /// Files the loop's branch conflicts with in the continued branch: left
    /// with their markers for the worker to resolve.
    pub conflicts: Vec<String>,
}

/// Check out the story's branch in `root`: the local one, else the remote's
/// (`origin/ralph/<story>`, pushed by an earlier runner), else a new one at
/// `HEAD`. A continued branch gets the base merged in.
pub fn enter(root: &Path, story: &str) -> Result<Entered, String> {
    let branch = crate::parallel::story_branch(story);
    let base = head(root)?;
    let found = [
        format!("refs/heads/{branch}"),
        format!("refs/remotes/origin/{branch}"),
    ]
    .into_iter()
    .find(|r| branches::git(root, &["rev-parse", "-q", "--verify", r]).is_ok());
    let Some(from) = found else {
        branches::git(root, &["checkout", "-q", "-B", &branch])?;
        return Ok(Entered {
            branch,
            base,
            continued: false,
            conflicts: Vec::new(),
        });
    };
    branches::git(root, &["checkout", "-q", "-B", &branch, &from])?;
    let message = format!("ralph: the loop's branch merged into {branch}");
    let conflicts = match branches::git(root, &["merge", "-q", "--no-edit", "-m", &message, &base])
    {
        Ok(_) => Vec::new(),
        Err(why) => {
            let files = conflicted(root);
            if files.is_empty() {
                return Err(format!(
                    "cannot merge the loop's branch into {branch}: {why}"
                ));
            }
            files
        }
    };
    Ok(Entered {
        branch,
        base,
        continued: true,
        conflicts,
    })
}

/// Commit what the run left (its own commits stay), with `keep_out` as
/// `base` has them; the branch's head.
pub fn commit(
    root: &Path,
    base: &str,
    keep_out: &[String],
    message: &str,
) -> Result<String, String> {
    let keep: Vec<&str> = keep_out.iter().map(String::as_str).collect();
    commit_work(root, base, &keep, message)?;
    head(root)
}

/// Keep the loop's files in the project out of every `git add` here
/// (`.git/info/exclude`, which is not versioned).
pub fn exclude_ralph_files(root: &Path) -> Result<(), String> {
    let rel = branches::git(root, &["rev-parse", "--git-path", "info/exclude"])?;
    let path = root.join(rel.trim());
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let missing: Vec<&str> = super::story::EXCLUDE_LINES
        .into_iter()
        .filter(|l| !text.lines().any(|have| have == *l))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let mut out = text;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for l in missing {
        out.push_str(l);
        out.push('\n');
    }
    crate::store::atomic_write(&path, out.as_bytes()).map_err(|e| e.to_string())
}
