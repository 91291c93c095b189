//! `ralph merge`'s git and checks: one story branch at a time into the
//! branch checked out (the loop's), judged by what the base holds. Does I/O
//! (git through `crate::git`: bounded, nothing of the repository's
//! configuration runs; the check bounded by its timeout).

use super::merge::{MergeResult, SendBack, refusals};
use super::story::may_run;
use crate::git::Git;
use crate::parallel::branches::{self, Merged};
use crate::prd::Prd;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The loop's branch as the merges go: its PRD (as committed), and the
/// files every story's check depends on, pinned from it before the first
/// merge.
pub struct Base {
    root: PathBuf,
    prd_file: String,
    pub prd: Prd,
    pins: BTreeMap<String, String>,
    timeout: Duration,
}

impl Base {
    /// Read at `HEAD` in `root`: the committed PRD, whatever the working
    /// tree holds.
    pub fn read(root: &Path, prd_file: &str, timeout: Duration) -> Result<Base, String> {
        let text = Git::read(root)
            .text(&["show", &format!("HEAD:{prd_file}")])
            .map_err(|e| format!("no {prd_file} committed on the branch checked out: {e}"))?;
        let prd = Prd::parse(&text)
            .and_then(|p| p.validate().map(|()| p))
            .map_err(|e| format!("{prd_file}: {e}"))?;
        let checks: Vec<String> = prd
            .stories
            .iter()
            .filter_map(|s| s.verify.clone())
            .collect();
        let globs: Vec<(&'static str, String)> = crate::pins::prd_globs(&text)
            .into_iter()
            .map(|g| (crate::pins::FROM_PRD, g))
            .collect();
        let pinned = crate::pins::disk::collect(root, &checks, &globs)
            .or_else(|_| crate::pins::disk::collect(root, &checks, &[]))
            .unwrap_or_default();
        Ok(Base {
            root: root.to_path_buf(),
            prd_file: prd_file.to_string(),
            prd,
            pins: pinned.into_iter().collect(),
            timeout,
        })
    }

    /// The pinned files (path, why), read before the first merge.
    pub fn pins(&self) -> &BTreeMap<String, String> {
        &self.pins
    }

    /// Merge `branch` for `story`, check it, mark it passing: what became of it.
    pub fn merge(&mut self, story: &str, branch: &str) -> MergeResult {
        let back = |reason| MergeResult::SendBack { reason };
        match may_run(&self.prd, story) {
            Ok(true) => return MergeResult::AlreadyPassing,
            Ok(false) => {}
            Err(why) => return back(SendBack::NotRunnable { why }),
        }
        let tip = format!("{branch}^{{commit}}");
        if branches::git(&self.root, &["rev-parse", "-q", "--verify", &tip]).is_err() {
            return back(SendBack::Failed {
                why: format!("no branch {branch} here (fetched?)"),
            });
        }
        let changed = match self.changed(branch) {
            Ok(c) => c,
            Err(why) => return back(SendBack::Failed { why }),
        };
        let mut refused = refusals(&changed, &self.prd_file, &self.pins);
        refused.extend(self.scripts_changed(story, branch, &changed));
        if !refused.is_empty() {
            return back(SendBack::Refused { files: refused });
        }
        let title = self
            .prd
            .story(story)
            .map(|s| s.title.clone())
            .unwrap_or_default();
        let message = format!("ralph: merge story {story} {title}");
        let (before, after) = match branches::merge(&self.root, branch, message.trim_end()) {
            Err(why) => return back(SendBack::Failed { why }),
            Ok(Merged::Conflict(files)) => return back(SendBack::Conflict { files }),
            Ok(Merged::Done { before, after }) => (before, after),
        };
        // The check as the base has it (not the branch's PRD).
        let check = self.prd.story(story).and_then(|s| s.verify.clone());
        if let Some(cmd) = &check {
            // Only the exit decides a merge here (no score is kept), and
            // `ralph merge` has no loop folder: the command runs as written.
            let r = crate::worktree::run_check(&self.root, cmd, self.timeout, None, None);
            if !r.passed() {
                let undone = branches::undo_merge(&self.root, &before);
                return back(match undone {
                    Ok(()) => SendBack::CheckFailed {
                        command: cmd.clone(),
                        output_tail: r.output_tail,
                    },
                    Err(why) => SendBack::Failed {
                        why: format!("its check failed and the merge could not be undone: {why}"),
                    },
                });
            }
            // The check ran the story's code: whatever it did to the branch
            // or the tracked files, the merge as ralph made it is what counts.
            if let Err(why) = branches::git(&self.root, &["reset", "-q", "--hard", &after]) {
                return back(SendBack::Failed { why });
            }
        }
        match self.mark_passing(story) {
            Ok(commit) => MergeResult::Merged { commit, check },
            Err(why) => {
                let _ = branches::undo_merge(&self.root, &before);
                back(SendBack::Failed { why })
            }
        }
    }

    /// The `package.json` scripts the story's check runs (as the base has
    /// them) that the branch changed: the check is the base's
    /// (`pins::scripts`).
    fn scripts_changed(
        &self,
        story: &str,
        branch: &str,
        changed: &[String],
    ) -> Vec<(String, String)> {
        use crate::pins::scripts;
        let Some(check) = self.prd.story(story).and_then(|s| s.verify.clone()) else {
            return Vec::new();
        };
        if !changed.iter().any(|f| f == scripts::PACKAGE_JSON) {
            return Vec::new();
        }
        let show = |rev: &str| {
            Git::read(&self.root)
                .text(&["show", &format!("{rev}:{}", scripts::PACKAGE_JSON)])
                .ok()
        };
        let pins = scripts::pins_for(show("HEAD").as_deref(), &[check]);
        scripts::changed(&pins, show(branch).as_deref())
            .into_iter()
            .map(|c| {
                let why = format!(
                    "its script `{}`, which the story's check runs (held as the base has it)",
                    c.name
                );
                (scripts::PACKAGE_JSON.to_string(), why)
            })
            .collect()
    }

    /// The branch's changes since its merge base with `HEAD`, read whole.
    fn changed(&self, branch: &str) -> Result<Vec<String>, String> {
        changed_paths(&self.root, &format!("HEAD...{branch}"))
    }

    /// ralph's one-value edit of the PRD, committed: the new head.
    fn mark_passing(&mut self, story: &str) -> Result<String, String> {
        let path = self.root.join(&self.prd_file);
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        let edited = crate::prd_edit::mark_passing(&text, story)
            .ok_or_else(|| format!("cannot mark story {story} passing in {}", self.prd_file))?;
        crate::store::atomic_write(&path, edited.as_bytes()).map_err(|e| e.to_string())?;
        branches::git(&self.root, &["add", "--", &self.prd_file])?;
        let message = format!("ralph: story {story} passes (merged, its check passed)");
        branches::git(&self.root, &["commit", "-q", "--no-verify", "-m", &message])?;
        self.prd = Prd::parse(&edited).map_err(|e| e.to_string())?;
        branches::head(&self.root)
    }
}

/// Tracked files changed in `root` and not committed, but ralph's own: a
/// merge over them could lose them (an untracked file a branch brings
/// stops that branch's merge alone).
pub fn dirty(root: &Path) -> Vec<String> {
    branches::git(root, &["status", "--porcelain", "--untracked-files=no"])
        .map(|out| {
            out.lines()
                .filter_map(|l| l.get(3..))
                .map(|p| p.trim_matches('"').to_string())
                .filter(|p| !crate::worktree::is_ralph_file(p))
                .collect()
        })
        .unwrap_or_default()
}

/// The paths `range` changes (a diff, renames as delete and add), read
/// whole: what the merge and the audit judge a branch by.
pub(super) fn changed_paths(root: &Path, range: &str) -> Result<Vec<String>, String> {
    let out = Git::read(root)
        .run(&["diff", "--no-renames", "--name-only", "-z", range])
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out)
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect())
}
