//! `--fresh`: each story (or each iteration of a plain task) is worked by a
//! `ralph:ralph-worker` subagent with a fresh context, so the main thread's
//! conversation grows by a dispatch and a report per story, not by the work.
//! Pure, but for [`read_worker`] and [`write_worker`] (the worker's record): what the main thread is told, when a Stop waits for a worker in
//! flight, and how a worker's own stop (`SubagentStop`) is judged. The
//! reads and writes are in `fresh_stop` (the hook) and the guard.

use crate::hook_input::{BackgroundTask, HookInput};
use crate::verify::CheckResult;
use serde::{Deserialize, Serialize};

/// The worker's `subagent_type`: agent `ralph-worker` of plugin `ralph`.
pub const WORKER_TYPE: &str = "ralph:ralph-worker";

/// A worker ends its report with this line when it believes its story done
/// (`STORY DONE: US-1`); the SubagentStop hook then checks the claim.
pub(crate) const DONE_MARKER: &str = "STORY DONE";

/// Whether a hook call comes from a ralph worker subagent.
pub(crate) fn from_worker(input: &HookInput) -> bool {
    input.agent_type.as_deref() == Some(WORKER_TYPE)
}

/// A worker still running in the background (2.1.328 runs agents in the
/// background unless `run_in_background: false`): the main thread's turn
/// ended before its worker's. The Stop then waits for the worker's report
/// rather than feeding a second worker for the same story.
pub(crate) fn worker_in_flight(tasks: &[BackgroundTask]) -> Option<&BackgroundTask> {
    tasks
        .iter()
        .find(|t| t.agent_type == WORKER_TYPE && t.status == "running")
}

/// The feed of a `--fresh` PRD loop for one story: short, since the worker
/// reads the story from the PRD itself and every word here stays in the
/// main thread's context for the rest of the loop. `note`: what the main
/// thread must pass on (a refused claim), or empty.
pub(crate) fn dispatch_story(prd_file: &str, id: &str, title: &str, note: &str) -> String {
    let title = if title.is_empty() {
        String::new()
    } else {
        format!(" ({title})")
    };
    let note = if note.trim().is_empty() {
        String::new()
    } else {
        format!(
            "\n\nPass this on to the worker in its prompt:\n{}",
            note.trim()
        )
    };
    format!(
        "Ralph loop (--fresh): story {id} goes to a fresh worker; do no work yourself. Agent tool: subagent_type \
         \"{WORKER_TYPE}\", run_in_background: false, prompt \"Work story {id}{title} of {prd_file}.\"; then end \
         your turn.{note}"
    )
}

/// The feed of a `--fresh` loop: the task (a story, or the prompt), wrapped
/// in the instruction to hand it to a worker and do nothing else.
pub(crate) fn dispatch(task: &str, story: Option<&str>) -> String {
    let what = match story {
        Some(id) => format!("story {id}"),
        None => "the next iteration of the task".to_string(),
    };
    let done = match story {
        Some(id) => format!(
            " and, only when its acceptance criteria hold and \"passes\" is true, ends its report with the line `{DONE_MARKER}: {id}`"
        ),
        None => String::new(),
    };
    format!(
        "Ralph loop (--fresh): hand {what} to a fresh worker and do no work yourself. Call the Agent tool once with \
         subagent_type \"{WORKER_TYPE}\", run_in_background: false, description \"{what}\", and as its prompt the task \
         below, word for word. Do not write, edit or run anything that changes files in this thread: the guard refuses it \
         while the loop runs. The worker reads the story, progress.txt and git history itself, does the work{done}. \
         When its report comes back, end your turn with a one-line summary of it.\n\n--- task for the worker ---\n{task}"
    )
}

/// What a worker's stop comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerVerdict {
    /// Its story passes and its check passed: it may stop.
    Done,
    /// It claimed its story done, but the story's check failed: blocked,
    /// with the check's output, to keep working.
    CheckFailed(CheckResult),
    /// It claimed its story done, but `passes` is not true: blocked.
    NotMarked,
    /// It did not claim its story done (a partial report): it may stop; the
    /// main loop feeds the story again, counting the attempt.
    NoClaim,
    /// Plain mode: no story to check; the worker's report goes to the main
    /// thread, whose Stop judges the iteration as usual.
    Reported,
    /// Blocked `max_story_attempts` times already: it may stop, and the main
    /// loop's own attempt count takes over.
    GaveUp,
}

impl WorkerVerdict {
    /// Whether the worker is kept working (its stop blocked).
    pub fn blocks(&self) -> bool {
        matches!(
            self,
            WorkerVerdict::CheckFailed(_) | WorkerVerdict::NotMarked
        )
    }

    /// The log's reason code.
    pub fn code(&self) -> crate::activity::Code {
        use crate::activity::Code;
        match self {
            WorkerVerdict::Done => Code::WorkerPassed,
            WorkerVerdict::CheckFailed(_) => Code::WorkerCheckFailed,
            WorkerVerdict::NotMarked => Code::WorkerNotMarked,
            WorkerVerdict::NoClaim => Code::WorkerNoClaim,
            WorkerVerdict::GaveUp => Code::WorkerGaveUp,
            WorkerVerdict::Reported => Code::WorkerReported,
        }
    }

    /// As recorded in the worker file, the log and status.
    pub fn as_str(&self) -> &'static str {
        match self {
            WorkerVerdict::Done => "passed",
            WorkerVerdict::CheckFailed(_) => "check_failed",
            WorkerVerdict::NotMarked => "not_marked",
            WorkerVerdict::NoClaim => "no_claim",
            WorkerVerdict::GaveUp => "gave_up",
            WorkerVerdict::Reported => "reported",
        }
    }
}

/// Whether the worker's last message claims `story` done.
pub(crate) fn claims_done(said: &str, story: &str) -> bool {
    said.lines().any(|l| {
        l.trim()
            .trim_matches('`')
            .strip_prefix(DONE_MARKER)
            .and_then(|r| r.trim_start().strip_prefix(':'))
            .is_some_and(|id| id.trim().trim_matches('`') == story)
    })
}

/// Judge a worker's stop. `blocked_before`: how many times this worker's
/// stop was already blocked; `check`: the story's check result, run only
/// when the story claims `passes`.
pub(crate) fn judge_worker(
    claimed: bool,
    passes: bool,
    check: Option<&CheckResult>,
    blocked_before: u32,
    max_attempts: u32,
) -> WorkerVerdict {
    let verdict = match (claimed || passes, passes, check) {
        (false, _, _) => WorkerVerdict::NoClaim,
        (true, false, _) => WorkerVerdict::NotMarked,
        (true, true, Some(c)) if !c.passed() => WorkerVerdict::CheckFailed(c.clone()),
        (true, true, _) => WorkerVerdict::Done,
    };
    if verdict.blocks() && blocked_before >= max_attempts {
        WorkerVerdict::GaveUp
    } else {
        verdict
    }
}

/// The reason fed to a blocked worker.
pub(crate) fn worker_block_reason(
    verdict: &WorkerVerdict,
    story: &str,
    attempt: u32,
    max: u32,
) -> String {
    let why = match verdict {
        WorkerVerdict::CheckFailed(c) => format!(
            "its check `{}` failed (exit {}{}):\n{}{}",
            c.command,
            c.exit.map_or("none".to_string(), |e| e.to_string()),
            if c.timed_out { ", timed out" } else { "" },
            c.output_tail.trim_end(),
            c.put_back_note()
        ),
        _ => "its \"passes\" is not true in the PRD".to_string(),
    };
    format!(
        "Ralph worker: story {story} is not done: {why}\n\nFix it (attempt {attempt}/{max}): make the acceptance criteria hold, \
         set \"passes\": true only then, append what you did to progress.txt, and end your report with `{DONE_MARKER}: {story}`. \
         If you cannot finish, end your report saying what blocks it, without the {DONE_MARKER} line."
    )
}

/// What the user sees when a worker is kept working.
pub(crate) fn worker_kept_working(
    verdict: &WorkerVerdict,
    story: &str,
    blocked: u32,
    max: u32,
) -> String {
    format!(
        "🔁 Ralph worker for {story}: not done yet ({}); kept working ({blocked}/{max}).",
        verdict.as_str()
    )
}

/// The worker's record could not be written.
pub(crate) fn worker_record_not_saved(e: &dyn std::fmt::Display) -> String {
    format!("ralph: the worker's record was not saved: {e}")
}

/// The last worker's run, kept in the loop's folder (`worker`): written at
/// each `SubagentStop` of a worker, read by the main Stop (its log line) and
/// by status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRecord {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story: Option<String>,
    /// How many times this worker's stop was blocked.
    pub blocked: u32,
    /// `WorkerVerdict::as_str` of its last stop.
    pub outcome: String,
}

/// `--fresh`: the last worker's run recorded at `path`, if one was (a small
/// file; an unreadable one reads as none).
pub(crate) fn read_worker(path: &std::path::Path) -> Option<WorkerRecord> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Record the last worker's run at `path` (atomically: status may read it).
pub(crate) fn write_worker(
    path: &std::path::Path,
    record: &WorkerRecord,
) -> Result<(), crate::store::StoreError> {
    let text = serde_json::to_string(record).unwrap_or_default();
    crate::store::atomic_write(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(exit: i32) -> CheckResult {
        CheckResult {
            command: "test -f a".into(),
            exit: Some(exit),
            timed_out: false,
            output_tail: "no a".into(),
            fingerprint: None,
            time: "t".into(),
            duration_ms: 1,
            pinned: false,
            put_back: Vec::new(),
            score: None,
            not_run: false,
        }
    }

    #[test]
    fn a_worker_is_held_to_its_claim() {
        assert_eq!(
            judge_worker(false, false, None, 0, 5),
            WorkerVerdict::NoClaim
        );
        assert_eq!(
            judge_worker(true, false, None, 0, 5),
            WorkerVerdict::NotMarked
        );
        assert_eq!(
            judge_worker(true, true, Some(&check(1)), 0, 5),
            WorkerVerdict::CheckFailed(check(1))
        );
        assert_eq!(
            judge_worker(true, true, Some(&check(0)), 0, 5),
            WorkerVerdict::Done
        );
        // passes set without the marker line still counts as a claim
        assert_eq!(
            judge_worker(false, true, Some(&check(0)), 0, 5),
            WorkerVerdict::Done
        );
        assert_eq!(
            judge_worker(true, true, Some(&check(1)), 5, 5),
            WorkerVerdict::GaveUp
        );
    }

    #[test]
    fn the_done_line_names_the_story() {
        assert!(claims_done("did it\nSTORY DONE: US-1\n", "US-1"));
        assert!(claims_done("`STORY DONE: US-1`", "US-1"));
        assert!(!claims_done("STORY DONE: US-10", "US-1"));
        assert!(!claims_done("not STORY DONE yet", "US-1"));
    }

    #[test]
    fn only_a_running_worker_is_waited_for() {
        let t = |agent: &str, status: &str| BackgroundTask {
            id: "a".into(),
            status: status.into(),
            agent_type: agent.into(),
            description: "story US-1".into(),
        };
        assert!(worker_in_flight(&[t(WORKER_TYPE, "running")]).is_some());
        assert!(worker_in_flight(&[t(WORKER_TYPE, "completed")]).is_none());
        assert!(worker_in_flight(&[t("other:agent", "running")]).is_none());
    }
}
