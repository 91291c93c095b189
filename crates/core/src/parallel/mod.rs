//! `--parallel N`: up to N stories of a PRD at once, each worked by a
//! `ralph:ralph-parallel-worker` subagent in its own git worktree, and
//! merged into the loop's branch one at a time (the merge queue) before it
//! counts. Pure: which stories go out, which are in flight, how a story is
//! named in git, what the main thread and a worker are told, and the board
//! (`parallel.json` in the loop's folder) that says where each stands.
//!
//! The worktrees are Claude Code's own subagent isolation (`isolation:
//! worktree` in the agent's file; measured, see docs/client-measurements.md):
//! `.claude/worktrees/agent-<agent id>` on branch `worktree-agent-<agent id>`,
//! the hooks' `cwd`. ralph records each at `SubagentStart` (`hooks::started`),
//! renames its branch after the story when the worker claims it, merges it
//! at the worker's `SubagentStop` (`hooks::worker_stop`), and removes it once
//! merged, when the worker gives up, and when the loop ends, is cancelled,
//! or a new one starts after a crash (`hooks::remove_all`).

pub mod bound;
pub mod branches;
mod claim;
pub(crate) mod disk;
pub mod hooks;
mod landing;
mod lanes;
mod merge_queue;
pub(crate) mod refuse;
pub(crate) mod strays;

use crate::hook_input::BackgroundTask;
use crate::prd::{Prd, Story};
use crate::verify::CheckResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The worker's `subagent_type`: agent `ralph-parallel-worker` of plugin
/// `ralph`, whose file declares `isolation: worktree`.
pub const WORKER_TYPE: &str = "ralph:ralph-parallel-worker";

/// The prefix of a story's branch: `ralph/US-1`.
pub(crate) const BRANCH_PREFIX: &str = "ralph/";

/// The notes every worker appends to, in the main tree (the guard's one
/// exception to a worker's worktree: `ralph_policy::parallel::NOTES_FILE`).
pub const NOTES_FILE: &str = "progress.txt";

/// The branch a story's work is kept on, named after the story: characters
/// git does not take in a ref become `-`.
pub fn story_branch(story: &str) -> String {
    let safe: String = story
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let safe = safe.trim_matches('.').replace("..", "-");
    format!(
        "{BRANCH_PREFIX}{}",
        if safe.is_empty() { "story" } else { &safe }
    )
}

/// The story a worker's task names: `Work story US-1 ...` (the prompt the
/// main thread was told to write) or `story US-1` (the description).
pub(crate) fn story_in_task(task: &str) -> Option<String> {
    let at = task.find("story ")?;
    let id: String = task[at + "story ".len()..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '(' | ',' | ';' | ':'))
        .collect();
    let id = id.trim_end_matches('.').to_string();
    (!id.is_empty()).then_some(id)
}

/// The hook's `background_tasks` that are running `--parallel` workers.
pub(crate) fn running_workers(tasks: &[BackgroundTask]) -> impl Iterator<Item = &BackgroundTask> {
    tasks
        .iter()
        .filter(|t| t.agent_type == WORKER_TYPE && t.status == "running")
}

/// The stories to hand out now: runnable (every dependency passing), not in
/// flight, at most the free places.
pub(crate) fn pick<'p>(
    prd: &'p Prd,
    in_flight: &[Option<String>],
    parallel: u32,
) -> Vec<&'p Story> {
    let free = (parallel as usize).saturating_sub(in_flight.len());
    prd.runnable()
        .into_iter()
        .filter(|s| {
            !in_flight
                .iter()
                .any(|f| f.as_deref() == Some(s.id.as_str()))
        })
        .take(free)
        .collect()
}

/// The worker's task for one story, as the main thread passes it on. The
/// worker runs in its worktree: the PRD and progress.txt are named by their
/// paths in the main tree.
pub(crate) fn task(prd_path: &str, progress_path: &str, story: &Story) -> String {
    let title = if story.title.is_empty() {
        String::new()
    } else {
        format!(" ({})", story.title.replace('"', "'"))
    };
    format!(
        "Work story {}{title} of {prd_path}. Notes: {progress_path}.",
        story.id
    )
}

/// A batch of stories as one key of the feed counter (`US-1+US-2`): the
/// same batch fed again and again is a stuck one.
pub(crate) fn batch_key(stories: &[&Story]) -> String {
    ids(stories).join("+")
}

/// A batch of stories as the log names them (`US-1,US-2`).
pub(crate) fn batch_names(stories: &[&Story]) -> String {
    ids(stories).join(",")
}

fn ids<'s>(stories: &[&'s Story]) -> Vec<&'s str> {
    stories.iter().map(|s| s.id.as_str()).collect()
}

/// The main thread's feed: hand these stories out, all at once. The
/// workers run in their worktrees, so the PRD (`prd_file`, relative) and the
/// notes are named by their paths in the main tree at `root`.
pub(crate) fn dispatch(
    parallel: u32,
    root: &std::path::Path,
    prd_file: &str,
    stories: &[&Story],
    in_flight: usize,
    note: &str,
) -> String {
    let root = root.to_string_lossy();
    let prd_path = format!("{root}/{prd_file}");
    let progress_path = format!("{root}/{NOTES_FILE}");
    let calls: Vec<String> = stories
        .iter()
        .map(|s| {
            format!(
                "- description \"story {}\", prompt \"{}\"",
                s.id,
                task(&prd_path, &progress_path, s)
            )
        })
        .collect();
    let running = if in_flight > 0 {
        format!(" ({in_flight} already running)")
    } else {
        String::new()
    };
    let note = if note.trim().is_empty() {
        String::new()
    } else {
        format!("\n\n{}", note.trim())
    };
    format!(
        "Ralph loop (--parallel {parallel}): hand these stories to parallel workers{running}; do no work yourself. In one \
         message, call the Agent tool once per line, each with subagent_type \"{WORKER_TYPE}\" and run_in_background: \
         true:\n{}\nThen end your turn. Each worker has its own git worktree; ralph merges its work when it is done and \
         gives you the next stories.{note}",
        calls.join("\n")
    )
}

/// Where a worker's lane stands (one worktree, one worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneStatus {
    /// The worker runs in its worktree.
    Working,
    /// Its story was sent back (a conflict, or its check failed after the
    /// merge); the worker goes on, on the new base.
    SentBack,
}

/// One worker's worktree, as recorded at its start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lane {
    /// The worktree's path (absolute).
    pub worktree: String,
    /// Its branch now: Claude Code's `worktree-agent-…`, then the story's.
    pub branch: String,
    /// The commit it started from (the loop's branch at the worker's start).
    pub base: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story: Option<String>,
    pub status: LaneStatus,
    /// How many times the story was sent back to this worker.
    #[serde(default)]
    pub sent_back: u32,
    /// The best score its check gave on the loop's branch, and the
    /// send-backs since that did not beat it (the story's plateau).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<crate::score::Score>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plateau: u32,
}

// serde's `skip_serializing_if` hands a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Every worker of the loop and what came of each story: `parallel.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Board {
    /// By agent id: the workers whose worktree exists (a lane goes with it).
    #[serde(default)]
    pub lanes: BTreeMap<String, Lane>,
    /// Stories merged, in order.
    #[serde(default)]
    pub merged: Vec<String>,
    /// Times each story was sent back, in all.
    #[serde(default)]
    pub sent_back: BTreeMap<String, u32>,
    /// By agent id: the workers let go at their stop (merged, given up, or
    /// ending without a claim), whose worktree waits for the client to
    /// count the agent ended: removed while the client still runs it, it
    /// made the other agents' sandboxed commands fail to start (measured on
    /// 2.1.328, docs/client-measurements.md). The next Stop that does not
    /// see them run removes them (`hooks::lanes_to_sync`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub let_go: BTreeMap<String, Lane>,
}

impl Board {
    pub fn parse(text: &str) -> Board {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub fn render(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The stories being worked on now (each worker's, when known).
    pub fn working(&self) -> Vec<&str> {
        self.lanes
            .values()
            .filter_map(|l| l.story.as_deref())
            .collect()
    }
}

/// What came of a story's merge into the loop's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MergeOutcome {
    /// Merged, and its check passed on the merged tree (or it has none).
    Merged { commit: String },
    /// The merge conflicted in these files; the loop's branch was left as it
    /// was and the new base merged into the worktree, conflicts and all.
    Conflict { files: Vec<String> },
    /// Merged, but the story's check failed there: the merge was undone and
    /// the new base merged into the worktree.
    CheckFailed(CheckResult),
    /// Merged, its check passed there, but tests of the suite are gone
    /// from its run (`suite::inventory`, worded): the merge was undone.
    TestsGone(String),
    /// The user has uncommitted changes in the main tree to files the story
    /// changes: ralph never merges over them (git would refuse anyway). The
    /// worker waits and claims again; the user is told which files.
    UserChanges { files: Vec<String> },
    /// The worker changed what the loop fixed at start: each file with why
    /// it may not change (see `refuse`). Nothing was merged.
    Refused { files: Vec<(String, String)> },
    /// git itself failed.
    Failed(String),
}

impl MergeOutcome {
    pub(crate) fn code(&self) -> crate::activity::Code {
        use crate::activity::Code;
        match self {
            MergeOutcome::Merged { .. } => Code::StoryMerged,
            MergeOutcome::Conflict { .. } => Code::MergeConflict,
            MergeOutcome::CheckFailed(_) => Code::MergeCheckFailed,
            MergeOutcome::TestsGone(_) => Code::TestsGone,
            MergeOutcome::UserChanges { .. } => Code::MergeBlocked,
            MergeOutcome::Refused { .. } => Code::MergeRefused,
            MergeOutcome::Failed(_) => Code::MergeFailed,
        }
    }
}

/// What the worker is told when its story is sent back (its stop blocked).
pub(crate) fn send_back_reason(
    story: &str,
    outcome: &MergeOutcome,
    timeout_secs: u64,
    attempt: u32,
    max: u32,
) -> String {
    let why = match outcome {
        MergeOutcome::Conflict { files } => format!(
            "merging it into the loop's branch conflicted: other stories were merged meanwhile. The new base is now merged into \
             your worktree, with conflict markers in: {}. Resolve every conflict (keep both sides' intent; no `<<<<<<<` line may \
             stay), run the story's checks again, and do not run git merge --abort.",
            files.join(", ")
        ),
        MergeOutcome::CheckFailed(check) => format!(
            "it was merged into the loop's branch, but its check failed there, so the merge was undone. {}\nThe new base is \
             merged into your worktree: make the check pass on it.",
            check.failure_report(timeout_secs)
        ),
        MergeOutcome::TestsGone(words) => format!(
            "it was merged into the loop's branch and its check passed there, but tests of the suite are gone, so the \
             merge was undone. {words}\nThe new base is merged into your worktree."
        ),
        MergeOutcome::UserChanges { files } => format!(
            "your work is committed, but the user has uncommitted changes in the main tree to {} and ralph never merges \
             over them. Do not touch those files there. Run `sleep 60`, then end your report again with the line below: \
             the merge is tried again.",
            files.join(", ")
        ),
        MergeOutcome::Refused { files } => format!(
            "ralph does not merge changes to what the loop fixed at its start: {}. Put each of them back as it is on the \
             loop's branch (e.g. `git checkout <base> -- FILE`, then commit), keep your other work, and claim again.",
            refuse::listed(files)
        ),
        MergeOutcome::Failed(why) => format!("ralph could not merge it: {why}"),
        MergeOutcome::Merged { .. } => "it was merged".to_string(),
    };
    format!(
        "Ralph merge queue: story {story} is sent back (attempt {attempt}/{max}): {why}\n\nWhen it is done again, end your report \
         with `{}: {story}`; ralph commits your worktree and merges it again.",
        crate::fresh::DONE_MARKER
    )
}

/// A worker stopped without claiming its story (`story`, when known).
pub(crate) fn abandoned_message(story: Option<&str>) -> String {
    format!(
        "Ralph: the worker{} stopped without `{}`; its worktree was removed and the story goes out again.",
        story.map(|s| format!(" for {s}")).unwrap_or_default(),
        crate::fresh::DONE_MARKER
    )
}

/// The worker's story passes already (another worker's merge).
pub(crate) fn already_passes_message(story: &str) -> String {
    format!(
        "Ralph: story {story} already passes (another worker's work was merged); this worker's worktree was removed."
    )
}

/// Shown to the user when a story is merged or sent back.
pub(crate) fn merge_message(story: &str, outcome: &MergeOutcome) -> String {
    match outcome {
        MergeOutcome::Merged { commit } => {
            let short: String = commit.chars().take(9).collect();
            format!(
                "✅ Ralph: story {story} merged into the loop's branch ({short}); its check passed there."
            )
        }
        MergeOutcome::Conflict { files } => format!(
            "🔀 Ralph: story {story} conflicted with the loop's branch ({}); sent back to its worker on the new base.",
            files.join(", ")
        ),
        MergeOutcome::CheckFailed(_) => format!(
            "🔁 Ralph: story {story} merged but its check failed on the loop's branch; merge undone, sent back."
        ),
        MergeOutcome::TestsGone(_) => format!(
            "🔁 Ralph: story {story} merged, but tests of the suite are gone from its check's run; merge undone, sent back."
        ),
        MergeOutcome::UserChanges { files } => format!(
            "⚠️ Ralph: your uncommitted changes to {} block the merge of story {story}: commit or stash them; its worker tries again in a minute.",
            files.join(", ")
        ),
        MergeOutcome::Refused { files } => format!(
            "🛑 Ralph: story {story} was not merged: its worker changed {}; sent back.",
            refuse::listed(files)
        ),
        MergeOutcome::Failed(why) => {
            format!("⚠️ Ralph: story {story} could not be merged ({why}); sent back.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prd(text: &str) -> Prd {
        Prd::parse(text).unwrap()
    }

    #[test]
    fn a_story_names_its_branch() {
        assert_eq!(story_branch("US-1"), "ralph/US-1");
        assert_eq!(story_branch("story 2/a"), "ralph/story-2-a");
        assert_eq!(story_branch("..x..y"), "ralph/x-y");
        assert_eq!(story_branch("~^:"), "ralph/---");
    }

    #[test]
    fn the_story_is_read_from_the_task() {
        assert_eq!(
            story_in_task("Work story US-1 (One) of /p/prd.json. Notes: /p/progress.txt."),
            Some("US-1".into())
        );
        assert_eq!(story_in_task("story US-2"), Some("US-2".into()));
        assert_eq!(story_in_task("Work story A-3."), Some("A-3".into()));
        assert_eq!(story_in_task("do the thing"), None);
    }

    #[test]
    fn independent_stories_go_out_together_up_to_the_free_places() {
        let p = prd(r#"{"userStories":[
            {"id":"A1","passes":false},{"id":"A2","passes":false,"dependsOn":["A1"]},
            {"id":"B1","passes":false},{"id":"B2","passes":false,"dependsOn":["B1"]},
            {"id":"C1","passes":false}]}"#);
        let ids = |v: Vec<&Story>| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(pick(&p, &[], 3)), ["A1", "B1", "C1"]);
        assert_eq!(ids(pick(&p, &[], 2)), ["A1", "B1"]);
        // A1 and an unnamed worker run: one place left, A1 is not sent twice.
        assert_eq!(ids(pick(&p, &[Some("A1".into()), None], 3)), ["B1"]);
        assert!(pick(&p, &[Some("A1".into())], 1).is_empty());
    }

    #[test]
    fn only_running_parallel_workers_are_in_flight() {
        let t = |agent: &str, status: &str, d: &str| BackgroundTask {
            id: "a".into(),
            status: status.into(),
            agent_type: agent.into(),
            description: d.into(),
        };
        let tasks = [
            t(WORKER_TYPE, "running", "story US-1"),
            t(WORKER_TYPE, "completed", "story US-2"),
            t("other", "running", "story US-3"),
            t(WORKER_TYPE, "running", "something"),
        ];
        let stories: Vec<_> = running_workers(&tasks)
            .map(|t| story_in_task(&t.description))
            .collect();
        assert_eq!(stories, [Some("US-1".to_string()), None]);
    }

    #[test]
    fn the_dispatch_names_every_call() {
        let p = prd(
            r#"{"userStories":[{"id":"A","title":"Say \"a\"","passes":false},{"id":"B","passes":false}]}"#,
        );
        let stories = p.runnable();
        let text = dispatch(2, std::path::Path::new("/p"), "prd.json", &stories, 0, "");
        assert_eq!(batch_key(&stories), "A+B");
        assert_eq!(batch_names(&stories), "A,B");
        assert!(text.contains("- description \"story A\", prompt \"Work story A (Say 'a') of /p/prd.json. Notes: /p/progress.txt.\""));
        assert!(text.contains("- description \"story B\""));
        assert!(text.contains(WORKER_TYPE));
    }

    #[test]
    fn the_board_round_trips_and_reads_garbage_as_empty() {
        let mut b = Board::default();
        b.lanes.insert(
            "a1".into(),
            Lane {
                worktree: "/p/.claude/worktrees/agent-a1".into(),
                branch: "ralph/US-1".into(),
                base: "abc".into(),
                story: Some("US-1".into()),
                status: LaneStatus::Working,
                sent_back: 0,
                best: None,
                plateau: 0,
            },
        );
        b.merged.push("US-0".into());
        assert_eq!(Board::parse(&b.render()), b);
        assert_eq!(b.working(), ["US-1"]);
        assert_eq!(Board::parse("{nope"), Board::default());
    }
}
