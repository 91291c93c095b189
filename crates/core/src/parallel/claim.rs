//! `--parallel`: a worker's claim at its `SubagentStop`, before the merge
//! queue, in the hook's stages: the reads under the loop lock
//! ([`gather_claim`]), what the claim comes to ([`plan_claim`], pure), the
//! words (`parallel::abandoned_message`, `already_passes_message`), and
//! the writes (the lane named for its story, or dropped). Does I/O.

use super::branches;
use super::lanes::{drop_lane, worker_loop, worktree_of};
use super::merge_queue::Claim;
use super::{Lane, LaneStatus};
use crate::activity::{self, Action, Code, Entry};
use crate::fresh;
use crate::hook_input::HookInput;
use crate::hook_output::HookOutput;
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::state::LoopState;

use std::path::{Path, PathBuf};

/// What a worker's stop reads under the loop lock, before its claim is judged.
struct ClaimInputs {
    state: LoopState,
    agent: String,
    worktree: PathBuf,
    board: super::Board,
    /// Its lane on the board (one made up from its worktree when missing).
    lane: Lane,
    /// The story it was handed, by ralph's record.
    story: Option<String>,
    /// That story, as the PRD has it now.
    found: Option<crate::prd::Story>,
    /// What the worker said last.
    said: String,
}

/// What a worker's claim comes to: pure.
enum ClaimPlan {
    /// No claim (or no story of the PRD): the work is not merged; the main
    /// loop hands the story out again, to a fresh worktree.
    Abandoned,
    /// Another worker's merge made the story pass meanwhile.
    AlreadyPasses(String),
    /// The story goes to the merge queue.
    Claimed(crate::prd::Story),
}

/// Under the loop lock: the story this worker claims, by ralph's record,
/// with its lane on the board named for it; or the answer when there is
/// nothing to merge (no loop, no worktree, no claim, a story that passes).
/// In stages: [`gather_claim`], [`plan_claim`], the words
/// (`parallel::abandoned_message`, `already_passes_message`), the writes.
pub(super) fn claim(paths: &LoopPaths, input: &HookInput) -> Result<Claim, HookOutput> {
    let Ok(_lock) = LoopLock::acquire(&paths.lock, LOCK_WAIT) else {
        return Err(HookOutput::Nothing);
    };
    let Some(mut seen) = gather_claim(paths, input) else {
        return Err(HookOutput::Nothing);
    };
    match plan_claim(&seen) {
        ClaimPlan::Abandoned => {
            drop_lane(paths, &mut seen.board, &seen.agent, &seen.lane);
            let code = Code::WorktreeAbandoned.as_str();
            let entry = Entry::now(input.session(), seen.state.iteration, Action::Worker, code)
                .with_story(seen.story.clone());
            let _ = activity::append(&paths.log, &entry);
            Err(HookOutput::allow(super::abandoned_message(
                seen.story.as_deref(),
            )))
        }
        ClaimPlan::AlreadyPasses(id) => {
            drop_lane(paths, &mut seen.board, &seen.agent, &seen.lane);
            Err(HookOutput::allow(super::already_passes_message(&id)))
        }
        ClaimPlan::Claimed(found) => {
            let branch = super::story_branch(&found.id);
            let renamed = branches::name_branch(&seen.worktree, &branch).is_ok();
            let lane = Lane {
                story: Some(found.id.clone()),
                branch: if renamed { branch } else { seen.lane.branch },
                ..seen.lane
            };
            seen.board.lanes.insert(seen.agent, lane.clone());
            let _ = crate::parallel::disk::write_board(&paths.board, &seen.board);
            Ok(Claim {
                state: seen.state,
                story: found.id,
                title: found.title,
                check: found.verify,
                lane,
            })
        }
    }
}

/// The claim's reads; `None` when there is nothing to merge (no running
/// loop of this session's, no worktree).
fn gather_claim(paths: &LoopPaths, input: &HookInput) -> Option<ClaimInputs> {
    let agent = input.agent_id.clone().unwrap_or_default();
    let state = worker_loop(paths, input)?;
    let worktree = worktree_of(paths, input)?;
    let board = crate::parallel::disk::read_board(&paths.board);
    let lane = board.lanes.get(&agent).cloned().unwrap_or_else(|| Lane {
        worktree: worktree.to_string_lossy().into_owned(),
        branch: branches::current_branch(&worktree),
        base: branches::head(&paths.root).unwrap_or_default(),
        story: None,
        status: LaneStatus::Working,
        sent_back: 0,
        best: None,
        plateau: 0,
    });
    let story = worker_story(paths, input, &agent, &lane);
    let prd = state
        .prd_file
        .as_deref()
        .and_then(|f| crate::prd::read(&paths.root, f).ok())
        .map(|p| p.with_recorded_checks(&state.story_checks));
    let found = story
        .as_deref()
        .and_then(|id| prd.as_ref()?.story(id).cloned());
    Some(ClaimInputs {
        state,
        agent,
        worktree,
        board,
        lane,
        story,
        found,
        said: input.last_assistant_message.clone().unwrap_or_default(),
    })
}

/// Pure: a claim of the worker's story (`STORY DONE: ID`) goes to the merge
/// queue, unless the story passes already.
fn plan_claim(seen: &ClaimInputs) -> ClaimPlan {
    match &seen.found {
        Some(found) if fresh::claims_done(&seen.said, &found.id) => {
            if found.passes {
                ClaimPlan::AlreadyPasses(found.id.clone())
            } else {
                ClaimPlan::Claimed(found.clone())
            }
        }
        _ => ClaimPlan::Abandoned,
    }
}

/// The story ralph recorded at the worker's first tool call (never its
/// transcript as it is now: the worker can rewrite it), else the
/// description the Stop noted while it ran (the client's record).
fn worker_story(paths: &LoopPaths, input: &HookInput, agent: &str, lane: &Lane) -> Option<String> {
    match super::bound::record(paths, agent) {
        super::bound::Record::Bound(story) => story,
        // No tool call: its transcript is as the client wrote it.
        super::bound::Record::None => task_of(input).and_then(|t| super::story_in_task(&t)),
    }
    .or_else(|| lane.story.clone())
}

/// The task the main thread gave this subagent (its transcript's first
/// line, written before it ran: no wait).
fn task_of(input: &HookInput) -> Option<String> {
    let own = input.agent_transcript_path.as_deref().map(Path::new);
    let written = crate::transcript::written(
        own,
        crate::transcript::Awaited::FirstLine,
        std::time::Duration::ZERO,
    );
    written.task()
}
