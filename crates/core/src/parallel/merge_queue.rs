//! `--parallel`: the merge queue's own step, one story at a time: merge a
//! worker's branch into the loop's and run the story's check on the merged
//! tree (`parallel::hooks::worker_stop` takes the queue's lock around it).
//! Does I/O (git, the check).

use super::branches::{self, Merged};
use super::{Lane, MergeOutcome};
use crate::paths::LoopPaths;
use crate::state::LoopState;
use crate::store;
use std::path::Path;
use std::time::Duration;

/// What a worker's stop claims, as ralph found it under the loop lock.
pub(super) struct Claim {
    pub(super) state: LoopState,
    pub(super) story: String,
    pub(super) title: String,
    pub(super) check: Option<String>,
    pub(super) lane: Lane,
}

/// What became of a story's merge.
pub(super) enum Merge {
    /// In the loop's branch (`after`), its check passed there (or it has none).
    Done {
        after: String,
        passed: Option<crate::verify::CheckResult>,
    },
    /// Not merged (or merged and undone): why it goes back to its worker.
    Back(MergeOutcome),
}

/// In the merge queue: merge the story's branch into the loop's, then run
/// its check on the merged tree (pinned files as at start). The merged head
/// and the check's result, or why it goes back (a conflict, with the
/// worktree moved onto the new base; a check that failed, the merge undone).
pub(super) fn merge_and_check(
    paths: &LoopPaths,
    claim: &Claim,
    worktree: &Path,
    extend: &dyn Fn(Duration),
) -> Merge {
    let merge_message = format!("ralph: merge story {} {}", claim.story, claim.title);
    let before = branches::head(&paths.root).unwrap_or_default();
    let _ = store::atomic_write(
        &paths.merging,
        format!("{} {before}\n", claim.story).as_bytes(),
    );
    let (before, after) =
        match branches::merge(&paths.root, &claim.lane.branch, merge_message.trim_end()) {
            Err(why) => return Merge::Back(MergeOutcome::Failed(why)),
            Ok(Merged::Conflict(files)) => {
                let base = branches::head(&paths.root).unwrap_or_default();
                return Merge::Back(match branches::take_new_base(worktree, &base) {
                    Ok(in_worktree) if !in_worktree.is_empty() => {
                        MergeOutcome::Conflict { files: in_worktree }
                    }
                    _ => MergeOutcome::Conflict { files },
                });
            }
            Ok(Merged::Done { before, after }) => (before, after),
        };
    let timeout = Duration::from_secs(claim.state.verify_timeout);
    let result = claim.check.as_deref().map(|cmd| {
        extend(timeout + Duration::from_secs(30));
        crate::pins::disk::before_checks(paths).run_check(
            &paths.root,
            cmd,
            timeout,
            None,
            Some(&paths.reports),
        )
    });
    let refused = match &result {
        Some(r) if !r.passed() => Some(MergeOutcome::CheckFailed(r.clone())),
        Some(r) => {
            // The story's baseline, taken at its dispatch, may still run.
            extend(timeout + crate::suite::baseline::WORKTREE_MARGIN);
            crate::suite::baseline::await_or_take(paths, &r.command);
            tests_gone(paths, r).map(MergeOutcome::TestsGone)
        }
        None => None,
    };
    let Some(outcome) = refused else {
        return Merge::Done {
            after,
            passed: result,
        };
    };
    let undone = branches::undo_merge(&paths.root, &before);
    let base = branches::head(&paths.root).unwrap_or_default();
    let _ = branches::take_new_base(worktree, &base);
    Merge::Back(match undone {
        Ok(()) => outcome,
        Err(why) => MergeOutcome::Failed(format!(
            "its check failed after the merge, and the merge could not be undone: {why}"
        )),
    })
}

/// The tests gone from the suite in the story check's run on the merged
/// tree (against the loop's baseline of that command and the tests seen
/// passing; a run that counts no test hides them all), worded; `None` when
/// none is.
fn tests_gone(paths: &LoopPaths, result: &crate::verify::CheckResult) -> Option<String> {
    let score = result.score.as_deref()?;
    let suite = crate::suite::read(&paths.suite);
    let run = crate::suite::Inventory::of(score, result.time.clone(), result.duration_ms);
    let found = crate::suite::inventory::judge(&suite, &result.command, &run);
    (!found.is_clear())
        .then(|| crate::suite::gone_words::report(&[(result.command.clone(), found)]))
}
