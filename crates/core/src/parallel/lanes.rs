//! A `--parallel` worker's lane, as the hooks find it: the running loop its
//! call belongs to, its worktree, and the lane let go (its worktree and
//! branches removed). Shared by the worker's start, claim and stop. Does
//! I/O (reads the state, removes worktrees).

use super::{Board, Lane, WORKER_TYPE, branches};
use crate::hook_input::HookInput;
use crate::paths::LoopPaths;
use crate::state::{LoopState, owns};
use crate::state_file::StateFile;
use std::path::{Path, PathBuf};

/// The running loop a parallel worker's hook call belongs to.
pub(super) fn worker_loop(paths: &LoopPaths, input: &HookInput) -> Option<LoopState> {
    if input.agent_type.as_deref() != Some(WORKER_TYPE) {
        return None;
    }
    let StateFile::Loop { state, .. } = crate::state_file::read(paths) else {
        return None;
    };
    let ours = owns(&state.session_id, input.session())
        || crate::passes::run_session(paths).as_deref() == Some(state.session_id.as_str());
    (state.active && state.parallel > 0 && ours).then_some(*state)
}

/// The worker's worktree: its hook `cwd`, when that is not the main tree.
pub(super) fn worktree_of(paths: &LoopPaths, input: &HookInput) -> Option<PathBuf> {
    let cwd = PathBuf::from(input.cwd.as_deref()?);
    let same = |a: &Path, b: &Path| {
        a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
    };
    (!same(&cwd, &paths.root)).then_some(cwd)
}

/// A worker let go without a merge: its lane goes (the main loop hands its
/// story out again), its worktree and branch once the client no longer
/// runs it ([`let_go`]). Under the loop lock.
pub(super) fn drop_lane(paths: &LoopPaths, board: &mut Board, agent: &str, lane: &Lane) {
    let_go(board, agent, lane);
    let _ = crate::parallel::disk::write_board(&paths.board, board);
}

/// A worker's stop lets it go: its lane leaves the board's lanes for
/// `let_go`, whose worktrees the next Stop that no longer sees the agent
/// run removes (`hooks::lanes_to_sync`), never its own stop. Pure.
pub(super) fn let_go(board: &mut Board, agent: &str, lane: &Lane) {
    board.lanes.remove(agent);
    board.let_go.insert(agent.to_string(), lane.clone());
}

/// A lane's worktree and its branches: the story's, and the one Claude Code
/// named (`worktree-agent-<id>`) when it was not renamed yet.
pub(super) fn remove_lane_worktree(
    paths: &LoopPaths,
    agent: &str,
    lane: &Lane,
) -> Result<(), String> {
    super::bound::forget(paths, agent);
    let client_branch = format!("worktree-agent-{agent}");
    branches::remove_worktree(&paths.root, &lane.worktree, &[&lane.branch, &client_branch])
}
