//! `SubagentStop` of a `--fresh` loop's worker: the gate a worker meets in
//! its own fresh context. Does I/O (reads the state, the PRD, the counter;
//! writes the worker record and the log), under the loop lock; the story's
//! check runs in the binary with the lock released, like the Stop's checks.
//! The rules are `fresh::judge_worker`.

use crate::activity::{self, Action, Entry};
use crate::fresh::{self, WorkerRecord, WorkerVerdict};
use crate::hook_input::HookInput;
use crate::hook_output::HookOutput;
use crate::paths::{LoopPaths, StateFile};
use crate::state::owns;
use crate::store::StoreError;
use crate::verify::CheckResult;
use std::time::Duration;

/// Where a pass of [`step`] got to.
#[derive(Debug)]
pub enum WorkerStep {
    /// Judged and recorded: the hook's answer.
    Done(HookOutput),
    /// The story's check must run (outside the lock) first.
    RunCheck { command: String, timeout: Duration },
}

/// One pass of a worker's `SubagentStop`; `ran` is the story's check result
/// from an earlier pass.
pub fn step(
    paths: &LoopPaths,
    input: &HookInput,
    ran: Option<&CheckResult>,
) -> Result<WorkerStep, StoreError> {
    let nothing = Ok(WorkerStep::Done(HookOutput::Nothing));
    if !fresh::from_worker(input) {
        return nothing;
    }
    let StateFile::Loop { state, .. } = paths.read_state() else {
        return nothing;
    };
    if !state.active || !state.fresh || !owns(&state.session_id, input.session()) {
        return nothing;
    }
    let agent_id = input.agent_id.clone().unwrap_or_default();
    let previous = paths.read_worker().filter(|r| r.agent_id == agent_id);
    let blocked_before = previous.as_ref().map_or(0, |r| r.blocked);
    // The story this worker was handed: the one the loop fed last.
    let story_id = state
        .prd_file
        .as_ref()
        .and_then(|_| paths.read_last_injected())
        .map(|i| i.story_id);
    let (verdict, story) = match (&state.prd_file, story_id) {
        (Some(file), Some(id)) => {
            let prd = match paths.read_prd(file) {
                Ok(prd) => prd.with_recorded_checks(&state.story_checks),
                // An unreadable PRD is the main Stop's to repair.
                Err(_) => return nothing,
            };
            let Some(story) = prd.story(&id) else {
                return nothing;
            };
            let said = input.last_assistant_message.as_deref().unwrap_or("");
            let claimed = fresh::claims_done(said, &id);
            if story.passes
                && ran.is_none()
                && let Some(cmd) = &story.verify
            {
                return Ok(WorkerStep::RunCheck {
                    command: cmd.clone(),
                    timeout: Duration::from_secs(state.verify_timeout),
                });
            }
            let verdict = fresh::judge_worker(
                claimed,
                story.passes,
                ran,
                blocked_before,
                state.max_story_attempts,
            );
            (verdict, Some(id))
        }
        _ => (WorkerVerdict::Reported, None),
    };
    let blocked = blocked_before + u32::from(verdict.blocks());
    let record = WorkerRecord {
        agent_id,
        story: story.clone(),
        blocked,
        outcome: verdict.as_str().to_string(),
    };
    let mut note = None;
    if let Err(e) = paths.write_worker(&record) {
        note = Some(format!("ralph: the worker's record was not saved: {e}"));
    }
    let entry = Entry::now(
        input.session(),
        state.iteration,
        Action::Worker,
        verdict.code().as_str(),
    )
    .with_story(story.clone())
    .with_worker(Some(verdict.as_str().to_string()));
    let _ = activity::append(&paths.log, &entry);
    let out = match (&verdict, story) {
        (v, Some(id)) if v.blocks() => HookOutput::Block {
            reason: fresh::worker_block_reason(v, &id, blocked, state.max_story_attempts),
            system_message: Some(format!(
                "🔁 Ralph worker for {id}: not done yet ({}); kept working ({blocked}/{}).",
                verdict.as_str(),
                state.max_story_attempts
            )),
        },
        _ => match note {
            Some(n) => HookOutput::allow(n),
            None => HookOutput::Nothing,
        },
    };
    Ok(WorkerStep::Done(out))
}
