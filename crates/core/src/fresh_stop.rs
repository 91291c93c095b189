//! `SubagentStop` of a `--fresh` loop's worker: the check a worker meets in
//! its own fresh context, in the Stop's stages: [`gather`] (the only reads:
//! the state, the PRD, the counter, the worker's record), [`plan`] (pure:
//! the check to run first, or the verdict, by `fresh::judge_worker`), the
//! words (`fresh::worker_block_reason`, `fresh::worker_kept_working`), and
//! [`apply`] (the only writes: the worker record and the log). Does I/O,
//! under the loop lock; the story's check runs in the binary with the lock
//! released, like the Stop's checks.

use crate::activity::{self, Action, Entry};
use crate::fresh::{self, WorkerRecord, WorkerVerdict};
use crate::hook_input::HookInput;
use crate::hook_output::{FeedHook, HookOutput};
use crate::paths::LoopPaths;
use crate::state::{LoopState, owns};
use crate::state_file::StateFile;
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

/// What a worker's stop is judged on.
#[derive(Debug)]
pub struct WorkerInputs {
    pub state: LoopState,
    pub agent_id: String,
    /// How many times this worker's stop was blocked already.
    pub blocked_before: u32,
    /// PRD mode: the story it was handed (the one the loop fed last).
    pub story: Option<HandedStory>,
    /// What the worker said last.
    pub said: String,
}

/// The story a worker was handed, as the PRD has it now.
#[derive(Debug)]
pub struct HandedStory {
    pub id: String,
    pub passes: bool,
    /// Its check, as recorded at start.
    pub check: Option<String>,
}

/// What a worker's stop does: pure data.
#[derive(Debug, PartialEq, Eq)]
pub enum WorkerPlan {
    /// Run the story's check first (outside the lock).
    RunCheck { command: String, timeout: Duration },
    /// The verdict, with the record to keep.
    Judged {
        verdict: WorkerVerdict,
        record: WorkerRecord,
    },
}

/// One pass of a worker's `SubagentStop`; `ran` is the story's check result
/// from an earlier pass.
pub fn step(
    paths: &LoopPaths,
    input: &HookInput,
    ran: Option<&CheckResult>,
) -> Result<WorkerStep, StoreError> {
    let Some(inputs) = gather(paths, input) else {
        return Ok(WorkerStep::Done(HookOutput::Nothing));
    };
    Ok(match plan(&inputs, ran) {
        WorkerPlan::RunCheck { command, timeout } => WorkerStep::RunCheck { command, timeout },
        WorkerPlan::Judged { verdict, record } => {
            WorkerStep::Done(apply(paths, input.session(), &inputs, &verdict, &record))
        }
    })
}

/// The reads, under the loop lock; `None` when this stop is not the loop's
/// to judge (another subagent, no running `--fresh` loop of this session,
/// a PRD that cannot be read: the main Stop repairs it, a story it lacks).
pub(crate) fn gather(paths: &LoopPaths, input: &HookInput) -> Option<WorkerInputs> {
    if !fresh::from_worker(input) {
        return None;
    }
    let StateFile::Loop { state, .. } = crate::state_file::read(paths) else {
        return None;
    };
    if !state.active || !state.fresh || !owns(&state.session_id, input.session()) {
        return None;
    }
    let agent_id = input.agent_id.clone().unwrap_or_default();
    let previous = crate::fresh::read_worker(&paths.worker).filter(|r| r.agent_id == agent_id);
    // The story this worker was handed: the one the loop fed last.
    let story_id = state
        .prd_file
        .as_ref()
        .and_then(|_| {
            state
                .injected
                .clone()
                .or_else(|| crate::state_file::read_injected(paths))
        })
        .map(|i| i.story_id);
    let story = match (&state.prd_file, story_id) {
        (Some(file), Some(id)) => {
            let prd = crate::prd::read(&paths.root, file).ok()?;
            let story = prd
                .with_recorded_checks(&state.story_checks)
                .story(&id)?
                .clone();
            Some(HandedStory {
                id,
                passes: story.passes,
                check: story.verify,
            })
        }
        _ => None,
    };
    Some(WorkerInputs {
        agent_id,
        blocked_before: previous.as_ref().map_or(0, |r| r.blocked),
        story,
        said: input.last_assistant_message.clone().unwrap_or_default(),
        state: *state,
    })
}

/// Pure: the check to run first (a story that claims `passes`, not checked
/// yet at this stop), else the verdict and the record it leaves.
pub fn plan(inputs: &WorkerInputs, ran: Option<&CheckResult>) -> WorkerPlan {
    let state = &inputs.state;
    let verdict = match &inputs.story {
        Some(story) => {
            if story.passes
                && ran.is_none()
                && let Some(cmd) = &story.check
            {
                return WorkerPlan::RunCheck {
                    command: cmd.clone(),
                    timeout: Duration::from_secs(state.verify_timeout),
                };
            }
            fresh::judge_worker(
                fresh::claims_done(&inputs.said, &story.id),
                story.passes,
                ran,
                inputs.blocked_before,
                state.max_story_attempts,
            )
        }
        // Plain mode: the report goes to the main thread's Stop.
        None => WorkerVerdict::Reported,
    };
    let record = WorkerRecord {
        agent_id: inputs.agent_id.clone(),
        story: inputs.story.as_ref().map(|s| s.id.clone()),
        blocked: inputs.blocked_before + u32::from(verdict.blocks()),
        outcome: verdict.as_str().to_string(),
    };
    WorkerPlan::Judged { verdict, record }
}

/// The writes: the worker record (read by the main Stop and status) and
/// one log line; the hook's answer.
pub(crate) fn apply(
    paths: &LoopPaths,
    session: &str,
    inputs: &WorkerInputs,
    verdict: &WorkerVerdict,
    record: &WorkerRecord,
) -> HookOutput {
    let state = &inputs.state;
    let saved = crate::fresh::write_worker(&paths.worker, record);
    let entry = Entry::now(
        session,
        state.iteration,
        Action::Worker,
        verdict.code().as_str(),
    )
    .with_story(record.story.clone())
    .with_worker(Some(verdict.as_str().to_string()));
    let _ = activity::append(&paths.log, &entry);
    match &record.story {
        Some(id) if verdict.blocks() => {
            let (blocked, max) = (record.blocked, state.max_story_attempts);
            HookOutput::Feed {
                hook: FeedHook::SubagentStop,
                text: fresh::worker_block_reason(verdict, id, blocked, max),
                system_message: Some(fresh::worker_kept_working(verdict, id, blocked, max)),
            }
        }
        _ => match saved {
            Err(e) => HookOutput::allow(fresh::worker_record_not_saved(&e)),
            Ok(()) => HookOutput::Nothing,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(passes: bool, said: &str) -> WorkerInputs {
        WorkerInputs {
            state: crate::state::sample(2, 10, None),
            agent_id: "a1".into(),
            blocked_before: 1,
            story: Some(HandedStory {
                id: "US-1".into(),
                passes,
                check: Some("make check".into()),
            }),
            said: said.into(),
        }
    }

    #[test]
    fn the_plan_asks_for_the_check_then_judges_with_it() {
        let claimed = inputs(true, "STORY DONE: US-1");
        let WorkerPlan::RunCheck { command, .. } = plan(&claimed, None) else {
            panic!("the check runs first");
        };
        assert_eq!(command, "make check");
        let failed = CheckResult {
            command: "make check".into(),
            exit: Some(1),
            timed_out: false,
            output_tail: String::new(),
            fingerprint: None,
            time: "t".into(),
            duration_ms: 1,
            pinned: false,
            put_back: Vec::new(),
            score: None,
            not_run: false,
        };
        let WorkerPlan::Judged { verdict, record } = plan(&claimed, Some(&failed)) else {
            panic!("judged once the check ran");
        };
        assert!(verdict.blocks());
        assert_eq!((record.blocked, record.story.as_deref()), (2, Some("US-1")));
        // Plain mode: nothing to check, the report goes to the main thread.
        let plain = WorkerInputs {
            story: None,
            ..inputs(false, "")
        };
        let WorkerPlan::Judged { verdict, record } = plan(&plain, None) else {
            panic!("judged");
        };
        assert_eq!((verdict, record.blocked), (WorkerVerdict::Reported, 1));
    }
}
