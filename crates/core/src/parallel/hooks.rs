//! `--parallel` at the hooks: a worker's start (`SubagentStart`: its
//! worktree is recorded and set on the loop's branch), its stop
//! (`SubagentStop`: the merge queue), and the removal of every worktree of
//! the loop (its end, a cancel, the next start after a crash). Does I/O.
//!
//! Locks: the loop lock is held only to read and write the loop's files; a
//! story's merge and its check run under the merge lock alone (one merge at
//! a time, and a check never sees another story's merge half done). The
//! merge lock is taken before the loop lock, never the other way round.

use super::branches;
use super::claim::claim;
use super::landing::{merged, sent_back};
use super::lanes::{remove_lane_worktree, worker_loop, worktree_of};
use super::merge_queue::{Claim, Merge, merge_and_check};
use super::{Lane, LaneStatus, MergeOutcome, NOTES_FILE, WORKER_TYPE, refuse};
use crate::activity::{self, Action, Code, Entry};
use crate::hook_input::HookInput;
use crate::hook_output::HookOutput;
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::store;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a worker's stop waits for the merges before its own (each may
/// run a story's check).
pub(crate) const MERGE_WAIT: Duration = Duration::from_secs(1800);

/// `SubagentStart` of a parallel worker: record its worktree (so it is
/// removed whatever happens) and start it on the loop's branch as it is now
/// (Claude Code branches from `origin/HEAD` when there is a remote). The
/// reads (the loop, the two heads, the board), then the writes.
pub fn started(paths: &LoopPaths, input: &HookInput) -> HookOutput {
    if input.agent_type.as_deref() != Some(WORKER_TYPE) {
        return HookOutput::Nothing;
    }
    let Some(worktree) = worktree_of(paths, input) else {
        return HookOutput::Nothing;
    };
    let Ok(_lock) = LoopLock::acquire(&paths.lock, LOCK_WAIT) else {
        return HookOutput::Nothing;
    };
    if worker_loop(paths, input).is_none() {
        return HookOutput::Nothing;
    }
    let Ok(base) = branches::head(&paths.root) else {
        return HookOutput::Nothing;
    };
    let behind = branches::head(&worktree).ok().as_deref() != Some(base.as_str());
    let mut board = crate::parallel::disk::read_board(&paths.board);
    let lane = Lane {
        worktree: worktree.to_string_lossy().into_owned(),
        branch: branches::current_branch(&worktree),
        base,
        story: None,
        status: LaneStatus::Working,
        sent_back: 0,
        best: None,
        plateau: 0,
    };
    if behind {
        let _ = branches::git(&worktree, &["reset", "-q", "--hard", &lane.base]);
    }
    board
        .lanes
        .insert(input.agent_id.clone().unwrap_or_default(), lane);
    let _ = crate::parallel::disk::write_board(&paths.board, &board);
    HookOutput::Nothing
}

/// What a Stop of a `--parallel` loop changes on the board, read under the
/// loop lock (`stop::gather`) and written by `stop::apply` ([`sync_lanes`]):
/// each running worker's story is named (from the task's description: ralph
/// knows it from the worker's own transcript only once it stops, and status
/// wants it while it runs), and a worker that no longer runs but still has a
/// lane (its client was killed, or its stop never came) loses its worktree
/// and branches: a lane outlives its worker only by a crash, since every
/// worker's stop that lets it go moves its lane to the board's `let_go`.
/// Those, once the client no longer runs their worker, go quietly: their
/// worktrees waited only for that.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneSync {
    /// The board as it is to be written; `None`: unchanged.
    pub board: Option<super::Board>,
    /// The lanes whose worker no longer runs, by agent id.
    pub gone: Vec<(String, Lane)>,
    /// Their stories (else agent ids), for the log.
    pub gone_names: Vec<String>,
    /// The lanes let go at their worker's stop whose worker no longer runs.
    pub let_go: Vec<(String, Lane)>,
}

/// The read half: the board against the Stop's `background_tasks`.
pub(crate) fn lanes_to_sync(paths: &LoopPaths, input: &HookInput) -> LaneSync {
    let tasks = &input.background_tasks;
    let mut board = crate::parallel::disk::read_board(&paths.board);
    if board.lanes.is_empty() && board.let_go.is_empty() {
        return LaneSync::default();
    }
    let mut sync = LaneSync::default();
    let running = |id: &str| {
        tasks
            .iter()
            .any(|t| t.id == id && t.agent_type == WORKER_TYPE && t.status == "running")
    };
    let ended: Vec<String> = board
        .let_go
        .keys()
        .filter(|agent| !running(agent))
        .cloned()
        .collect();
    for agent in ended {
        if let Some(lane) = board.let_go.remove(&agent) {
            sync.let_go.push((agent, lane));
        }
    }
    let gone: Vec<String> = board
        .lanes
        .keys()
        .filter(|agent| !running(agent))
        .cloned()
        .collect();
    let mut changed = !sync.let_go.is_empty();
    for agent in gone {
        if let Some(lane) = board.lanes.remove(&agent) {
            let story = lane.story.clone().or_else(|| {
                super::bound::story_of(paths, input.transcript_path.as_deref(), &agent)
            });
            sync.gone_names.push(story.unwrap_or_else(|| agent.clone()));
            sync.gone.push((agent, lane));
            changed = true;
        }
    }
    for task in tasks.iter().filter(|t| t.agent_type == WORKER_TYPE) {
        if let Some(lane) = board.lanes.get_mut(&task.id)
            && lane.story.is_none()
            && let Some(story) = super::story_in_task(&task.description)
        {
            lane.story = Some(story);
            changed = true;
        }
    }
    sync.board = changed.then_some(board);
    sync
}

/// The write half: the gone lanes' worktrees removed, the board written
/// when something changed, one log line for the removals.
pub(crate) fn sync_lanes(paths: &LoopPaths, sync: &LaneSync, session: &str, iteration: u64) {
    for (agent, lane) in sync.gone.iter().chain(&sync.let_go) {
        let _ = remove_lane_worktree(paths, agent, lane);
    }
    if let Some(board) = &sync.board {
        let _ = crate::parallel::disk::write_board(&paths.board, board);
    }
    if !sync.gone_names.is_empty() {
        let text = format!(
            "removed the worktrees of workers that no longer run ({}); their stories go out again",
            sync.gone_names.join(", ")
        );
        log_cleanup(paths, session, iteration, &text);
    }
}

/// One `cleanup` line in the activity log.
fn log_cleanup(paths: &LoopPaths, session: &str, iteration: u64, text: &str) {
    let code = Code::WorktreesRemoved.as_str();
    let entry = Entry::now(session, iteration, Action::Cleanup, code).with_message(Some(text));
    let _ = activity::append(&paths.log, &entry);
}

/// `SubagentStop` of a parallel worker: the merge queue. A worker that
/// claims its story has its worktree committed, then (one story at a time)
/// merged into the loop's branch and the story's check run there; merged,
/// the story is marked passing in the main tree and the worktree removed;
/// else the story goes back to the worker on the new base. `extend` pushes
/// the hook's watchdog out before each long wait.
///
/// In stages: the claim under the loop lock (`parallel::claim`), the long
/// work with the loop lock free (`ready_to_merge`, then
/// `queue::merge_and_check` under the merge lock), and what it comes to
/// under the loop lock again (`parallel::landing`: reads, a pure plan, the
/// writes).
pub fn worker_stop(paths: &LoopPaths, input: &HookInput, extend: &dyn Fn(Duration)) -> HookOutput {
    let claim = match claim(paths, input) {
        Ok(claim) => claim,
        Err(out) => return out,
    };
    let worktree = PathBuf::from(&claim.lane.worktree);
    if let Err(out) = ready_to_merge(paths, input, &claim, &worktree, extend) {
        return out;
    }
    let Ok(_queue) = LoopLock::acquire(&paths.merge_lock, MERGE_WAIT) else {
        return HookOutput::allow(format!(
            "Ralph: story {} waited {} min for the merge queue and was not merged; it goes out again.",
            claim.story,
            MERGE_WAIT.as_secs() / 60
        ));
    };
    if worker_loop(paths, input).is_none() {
        // Cancelled (or ended) meanwhile: whoever ended it removes the worktrees.
        return HookOutput::Nothing;
    }
    recover_cut_merge(paths, input.session(), claim.state.iteration);
    let in_the_way = branches::in_the_way(&paths.root, &claim.lane.branch);
    if !in_the_way.is_empty() {
        let outcome = MergeOutcome::UserChanges { files: in_the_way };
        return sent_back(paths, input, &claim, outcome);
    }
    match merge_and_check(paths, &claim, &worktree, extend) {
        Merge::Done { after, passed } => {
            let _ = store::remove_if_present(&paths.merging);
            extend(Duration::from_secs(30));
            merged(paths, input, &claim, after, passed)
        }
        Merge::Back(outcome) => {
            let _ = store::remove_if_present(&paths.merging);
            sent_back(paths, input, &claim, outcome)
        }
    }
}

/// Before the merge queue: no conflict marker left, nothing of what the
/// loop fixed at start changed, the work committed on the worker's branch;
/// else the answer sending it back.
fn ready_to_merge(
    paths: &LoopPaths,
    input: &HookInput,
    claim: &Claim,
    worktree: &Path,
    extend: &dyn Fn(Duration),
) -> Result<(), HookOutput> {
    let prd_file = claim.state.prd_file.clone().unwrap_or_default();
    // A story sent back with a conflict: every marker must be gone.
    let unresolved = branches::markers_left(worktree, &branches::conflicted(worktree));
    if !unresolved.is_empty() {
        let outcome = MergeOutcome::Conflict { files: unresolved };
        return Err(sent_back(paths, input, claim, outcome));
    }
    extend(MERGE_WAIT + Duration::from_secs(30));
    let message = format!("ralph: story {} {}", claim.story, claim.title);
    // The PRD and the notes as the loop's branch has them now: the story's
    // merge then changes neither (nor undoes a commit of them made meanwhile).
    let loop_head = branches::head(&paths.root).unwrap_or_else(|_| claim.lane.base.clone());
    // What the loop fixed at start is not the worker's to change.
    let bases = [claim.lane.base.as_str(), loop_head.as_str()];
    if let Some(prd) = refuse::prd_refusal(&paths.root, worktree, &prd_file, &bases) {
        let outcome = MergeOutcome::Refused { files: vec![prd] };
        return Err(sent_back(paths, input, claim, outcome));
    }
    if let Err(why) = branches::commit_work(
        worktree,
        &loop_head,
        &[prd_file.as_str(), NOTES_FILE],
        message.trim_end(),
    ) {
        return Err(sent_back(paths, input, claim, MergeOutcome::Failed(why)));
    }
    let refused = refuse::branch_refusals(worktree, &loop_head, &claim.state.pins);
    if !refused.is_empty() {
        let outcome = MergeOutcome::Refused { files: refused };
        return Err(sent_back(paths, input, claim, outcome));
    }
    Ok(())
}

/// A merge into the main tree that was cut short (its hook killed: the
/// client's SIGKILL, a crash) left `merging` behind, and maybe the tree in
/// the middle of that merge: it is aborted, so the user's branch is as it
/// was before it (a merge that had committed stays: its story is merged
/// again, as a no-op, when it comes back). Only a holder of the merge lock
/// calls this: no merge of ralph's is under way then.
fn recover_cut_merge(paths: &LoopPaths, session: &str, iteration: u64) {
    let Ok(Some(marker)) = store::read_optional(&paths.merging) else {
        return;
    };
    let story = marker.split_whitespace().next().unwrap_or("?").to_string();
    let aborted = branches::merge_in_progress(&paths.root)
        && branches::git(&paths.root, &["merge", "--abort"]).is_ok();
    let _ = store::remove_if_present(&paths.merging);
    let text = if aborted {
        format!(
            "the merge of story {story} was cut short; it was aborted, the branch is as it was before it"
        )
    } else {
        format!("the merge of story {story} was cut short before it changed the tree")
    };
    let entry = Entry::now(
        session,
        iteration,
        Action::Cleanup,
        Code::MergeInterrupted.as_str(),
    )
    .with_story(Some(story))
    .with_message(Some(&text));
    let _ = activity::append(&paths.log, &entry);
}

/// Remove every worktree and branch the board names (the loop ended, was
/// cancelled, or a new one starts over a crashed one's), and the board.
/// Only what ralph recorded is touched. What was removed, in words.
pub(crate) fn remove_all(paths: &LoopPaths, session: &str, iteration: u64) -> Option<String> {
    // A merge cut short is undone too, when no merge of ralph's is under way.
    if paths.merging.exists()
        && let Ok(_queue) = LoopLock::acquire(&paths.merge_lock, Duration::ZERO)
    {
        recover_cut_merge(paths, session, iteration);
    }
    let board = crate::parallel::disk::read_board(&paths.board);
    // The workers already let go: their worktrees go too, unannounced.
    for (agent, lane) in &board.let_go {
        let _ = remove_lane_worktree(paths, agent, lane);
    }
    if board.lanes.is_empty() {
        let _ = store::remove_if_present(&paths.board);
        return None;
    }
    let mut removed = Vec::new();
    let mut problems = Vec::new();
    for (agent, lane) in &board.lanes {
        match remove_lane_worktree(paths, agent, lane) {
            Ok(()) => removed.push(lane.story.clone().unwrap_or_else(|| agent.clone())),
            Err(e) => problems.push(e),
        }
    }
    let _ = store::remove_if_present(&paths.board);
    let mut text = format!(
        "removed {} of the loop's worker worktrees ({})",
        removed.len(),
        removed.join(", ")
    );
    if !problems.is_empty() {
        text.push_str(&format!("; could not remove: {}", problems.join("; ")));
    }
    log_cleanup(paths, session, iteration, &text);
    Some(text)
}
