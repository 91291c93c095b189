//! The git a `--parallel` loop runs: a worker's commit, the merge into the
//! loop's branch, undoing it, the new base for a story sent back, and the
//! removal of a worktree and its branches. Does I/O (spawns git through
//! `crate::git`, each call bounded).

use crate::git::Git;
use std::path::Path;

/// Run `git ARGS` in `dir` as a write (`crate::git`: nothing of the
/// repository's runs, bounded by its timeout): its stdout, or why it
/// failed.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    Ok(Git::write(dir).text(args)?)
}

/// Paths with uncommitted changes in `dir` (untracked ones too), but those
/// under `except` (relative paths or folders ending in `/`).
pub fn uncommitted(dir: &Path, except: &[&str]) -> Vec<String> {
    git(dir, &["status", "--porcelain", "--untracked-files=normal"])
        .map(|out| {
            out.lines()
                .filter_map(|l| l.get(3..))
                .map(|p| p.trim_matches('"').to_string())
                .filter(|p| {
                    !except
                        .iter()
                        .any(|e| p == e || (e.ends_with('/') && p.starts_with(e)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The commit `dir` has checked out.
pub fn head(dir: &Path) -> Result<String, String> {
    git(dir, &["rev-parse", "HEAD"]).map(|s| s.trim().to_string())
}

/// The branch `dir` has checked out (empty when detached).
pub(crate) fn current_branch(dir: &Path) -> String {
    git(dir, &["branch", "--show-current"])
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Commit everything the worker left in its worktree, but `keep_out`
/// (paths relative to the repository: the PRD, whose `passes` ralph sets in
/// the main tree only, and the shared notes): those are made what they are
/// in commit `base` (the loop's branch now), whatever the worker did to
/// them, in the worktree or in its own commits. Whether a commit was made.
pub fn commit_work(
    worktree: &Path,
    base: &str,
    keep_out: &[&str],
    message: &str,
) -> Result<bool, String> {
    for path in keep_out {
        let in_base = git(worktree, &["cat-file", "-e", &format!("{base}:{path}")]).is_ok();
        if in_base {
            git(worktree, &["checkout", base, "--", path])?;
        } else if worktree.join(path).symlink_metadata().is_ok() {
            // `symlink_metadata`, not `exists`: a link there (dangling, or
            // into the main tree) is taken out too, never committed to land
            // in the main tree as its shared notes.
            git(
                worktree,
                &["rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", path],
            )?;
            let _ = std::fs::remove_file(worktree.join(path));
        }
    }
    crate::placeholders::add_work(&Git::write(worktree), worktree, base)?;
    // A story sent back with a conflict: this commit concludes the merge of
    // the new base, whatever else it holds.
    let merging = git(worktree, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]).is_ok();
    let staged = git(worktree, &["diff", "--cached", "--quiet"]).is_err();
    if !staged && !merging {
        return Ok(false);
    }
    let message = if merging {
        format!("{message} (on the loop's branch, conflicts resolved)")
    } else {
        message.to_string()
    };
    git(worktree, &["commit", "-q", "--no-verify", "-m", &message])?;
    Ok(true)
}

/// Name the worktree's branch after its story (`ralph/US-1`), replacing a
/// leftover branch of that name.
pub(crate) fn name_branch(worktree: &Path, branch: &str) -> Result<(), String> {
    if current_branch(worktree) == branch {
        return Ok(());
    }
    // `git branch -M` renames the ref, then moves the branch's section of
    // the shared `.git/config`: two workers ending at once contend for
    // that file's lock, and the loser fails after its ref was renamed
    // (`ralph run`'s parallel test, 2 runs in 15). The ref is what counts.
    git(worktree, &["branch", "-M", branch])
        .map(|_| ())
        .or_else(|e| (current_branch(worktree) == branch).then_some(()).ok_or(e))
}

/// Files with unresolved conflicts in `dir`.
pub fn conflicted(dir: &Path) -> Vec<String> {
    git(dir, &["diff", "--name-only", "--diff-filter=U"])
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Files in `dir` that still hold a conflict marker line among `files`.
pub(crate) fn markers_left(dir: &Path, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(dir.join(f)).is_ok_and(|t| {
                t.lines()
                    .any(|l| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> "))
            })
        })
        .cloned()
        .collect()
}

/// The files `branch` changes (against its merge base with `root`'s
/// `HEAD`) that the user has changed in `root` without committing, or left
/// there untracked: a merge would overwrite them.
pub fn in_the_way(root: &Path, branch: &str) -> Vec<String> {
    let lines = |args: &[&str]| -> Vec<String> {
        git(root, args)
            .map(|o| o.lines().map(str::to_string).collect())
            .unwrap_or_default()
    };
    let story = lines(&["diff", "--name-only", &format!("HEAD...{branch}")]);
    if story.is_empty() {
        return Vec::new();
    }
    let mut local = lines(&["diff", "--name-only", "HEAD"]);
    local.extend(lines(&["ls-files", "--others", "--exclude-standard"]));
    story.into_iter().filter(|f| local.contains(f)).collect()
}

/// Whether `dir` is in the middle of a merge (git's `MERGE_HEAD`).
pub(crate) fn merge_in_progress(dir: &Path) -> bool {
    git(dir, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]).is_ok()
}

/// How a merge into the loop's branch went.
pub enum Merged {
    /// The new commit of the loop's branch, and the one before.
    Done { before: String, after: String },
    /// Conflicts in these files; the merge was aborted.
    Conflict(Vec<String>),
}

/// Merge `branch` into the branch `root` has checked out (a merge commit
/// even when a fast-forward would do: the story's work stays one unit).
/// `attributes`: a gitattributes file for this merge only.
pub fn merge(root: &Path, branch: &str, message: &str) -> Result<Merged, String> {
    let before = head(root)?;
    match git(
        root,
        &["merge", "--no-ff", "--no-edit", "-m", message, branch],
    ) {
        Ok(_) => Ok(Merged::Done {
            before,
            after: head(root)?,
        }),
        Err(why) => {
            let files = conflicted(root);
            let _ = git(root, &["merge", "--abort"]);
            if files.is_empty() {
                Err(why)
            } else {
                Ok(Merged::Conflict(files))
            }
        }
    }
}

/// Undo a merge whose story's check failed: back to `before`, keeping any
/// change in the tree that is not the merge's (`reset --keep`); when that
/// cannot be done safely, a revert commit instead.
pub fn undo_merge(root: &Path, before: &str) -> Result<(), String> {
    if git(root, &["reset", "-q", "--keep", before]).is_ok() {
        return Ok(());
    }
    git(root, &["revert", "--no-edit", "-m", "1", "HEAD"]).map(|_| ())
}

/// Bring the loop's branch (now at `base`) into the story's worktree: the
/// conflicted files, left with their markers for the worker to resolve.
pub fn take_new_base(worktree: &Path, base: &str) -> Result<Vec<String>, String> {
    match git(
        worktree,
        &[
            "merge",
            "--no-edit",
            "-m",
            "ralph: the loop's branch, merged in",
            base,
        ],
    ) {
        Ok(_) => Ok(Vec::new()),
        Err(why) => {
            let files = conflicted(worktree);
            if files.is_empty() {
                Err(why)
            } else {
                Ok(files)
            }
        }
    }
}

/// Remove a worker's worktree (even while Claude Code holds its lock) and
/// its branches; what is already gone is fine.
pub fn remove_worktree(root: &Path, worktree: &str, branches: &[&str]) -> Result<(), String> {
    let mut problems = Vec::new();
    if Path::new(worktree).exists()
        && let Err(e) = git(root, &["worktree", "remove", "-f", "-f", worktree])
    {
        problems.push(e);
    }
    let _ = git(root, &["worktree", "prune"]);
    for branch in branches.iter().filter(|b| !b.is_empty()) {
        let exists = git(
            root,
            &[
                "show-ref",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        )
        .is_ok();
        if exists && let Err(e) = git(root, &["branch", "-D", branch]) {
            problems.push(e);
        }
    }
    // Claude Code's folder for them, once empty (nothing of the user's).
    if let Some(parent) = Path::new(worktree).parent() {
        let _ = std::fs::remove_dir(parent);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
