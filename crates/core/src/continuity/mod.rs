//! A loop across its session's life, in the hooks around the turns
//! (`ralph-setup hook-event`): `SessionStart` reminds the model of the loop
//! after a compaction, a resume, or a `/clear` whose session took the loop
//! over; `SessionEnd` records the owner's `/clear`; `StopFailure` pauses the
//! loop on an API error, and the next prompt (or Stop) resumes it. Does I/O:
//! reads the loop, and writes under the loop lock.
//!
//! - [`rules`]: pure; which session starts remind, who may take a loop over.

pub(crate) mod rules;

use crate::activity::{self, Action, Code, Entry};
use crate::clock;
use crate::control;
use crate::hook_input::HookInput;
use crate::hook_output::HookOutput;
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::pause::{self, Pause, PauseReason};
use crate::start::text;
use crate::state::owns;
use crate::state::{self, LoopState};
use crate::state_file::StateFile;
use crate::store::{self, StoreError};
use crate::transcript::{self, Awaited};
use rules::{Handover, Source};
use std::time::Duration;

/// One lifecycle hook: what the client sent, and the client's process id
/// (`CLAUDE_PID` in the hook's environment), when known.
pub fn on_event(
    paths: &LoopPaths,
    input: &HookInput,
    pid: Option<u32>,
) -> Result<HookOutput, StoreError> {
    match input.hook_event_name.as_deref() {
        Some("SessionStart") => session_start(paths, input, pid),
        Some("SessionEnd") => session_end(paths, input, pid),
        Some("StopFailure") => stop_failure(paths, input),
        _ => Ok(HookOutput::Nothing),
    }
}

/// After a compaction or a resume of the owner's session, or a `/clear`
/// that handed the loop over: the loop's summary for the model.
fn session_start(
    paths: &LoopPaths,
    input: &HookInput,
    pid: Option<u32>,
) -> Result<HookOutput, StoreError> {
    let source = Source::parse(input.source.as_deref());
    let session = input.session();
    if !source.reminds() || !paths.has_loop() {
        return Ok(HookOutput::Nothing);
    }
    let (state, note) = if source == Source::Clear {
        match rebind(paths, session, pid)? {
            Some((state, old)) => (state, Some(control::rebound(&old, session))),
            None => return Ok(HookOutput::Nothing),
        }
    } else {
        let state = match crate::state_file::read(paths) {
            StateFile::Loop { state, .. } if owns(&state.session_id, session) => *state,
            _ => return Ok(HookOutput::Nothing),
        };
        // Only the owner's resume of a running, unpaused loop reads the
        // transcript (the pause itself is written under the lock).
        let unpaused = state.active && state.api_error_pause.is_none();
        let paused = match source {
            Source::Resume if unpaused => pause_lost_at_exit(paths, input)?,
            _ => None,
        };
        (state, paused)
    };
    if !state.active {
        return Ok(HookOutput::Nothing);
    }
    let prd = state
        .prd_file
        .as_deref()
        .and_then(|f| crate::prd::read(&paths.root, f).ok());
    Ok(HookOutput::Context {
        event: "SessionStart",
        context: text::reminder(&state, prd.as_ref(), why(source), &paths.root),
        system_message: note,
    })
}

/// The session after the owner's `/clear` takes the loop over, when the
/// hand-over allows it (see `rules::may_rebind`): the loop as it is now
/// and the session that owned it.
fn rebind(
    paths: &LoopPaths,
    session: &str,
    pid: Option<u32>,
) -> Result<Option<(LoopState, String)>, StoreError> {
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let Some(handover) = store::read_optional(&paths.handover)?.and_then(|t| Handover::parse(&t))
    else {
        return Ok(None);
    };
    let StateFile::Loop { text, state } = crate::state_file::read(paths) else {
        return Ok(None);
    };
    let now = clock::unix_now();
    if session.is_empty() || !rules::may_rebind(&handover, &state.session_id, now, pid) {
        return Ok(None);
    }
    let old = state.session_id.clone();
    let next = LoopState {
        session_id: session.to_string(),
        ..*state
    };
    crate::state_file::write(paths, &state::updated_text(&text, &next))?;
    store::remove_if_present(&paths.handover)?;
    let entry = Entry::now(
        session,
        next.iteration,
        Action::Rebind,
        Code::Cleared.as_str(),
    );
    let _ = activity::append(
        &paths.log,
        &entry.with_message(Some(&format!("from {old}"))),
    );
    Ok(Some((next, old)))
}

/// The owner's session ends with `/clear`: note the hand-over for the
/// session the client starts next.
fn session_end(
    paths: &LoopPaths,
    input: &HookInput,
    pid: Option<u32>,
) -> Result<HookOutput, StoreError> {
    let session = input.session();
    if input.reason.as_deref() != Some("clear") || session.is_empty() || !paths.has_loop() {
        return Ok(HookOutput::Nothing);
    }
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    match crate::state_file::read(paths) {
        StateFile::Loop { state, .. } if state.active && state.session_id == session => {
            let handover = Handover {
                session: session.to_string(),
                at: clock::unix_now(),
                pid,
            };
            store::atomic_write(&paths.handover, handover.render().as_bytes())?;
        }
        _ => {}
    }
    Ok(HookOutput::Nothing)
}

/// A turn of the owner's session ended on an API error: the loop is paused
/// (not an iteration, not a stall) until the next prompt or Stop.
fn stop_failure(paths: &LoopPaths, input: &HookInput) -> Result<HookOutput, StoreError> {
    let pause = Pause {
        reason: PauseReason::parse(input.error.as_deref()),
        at: clock::now_rfc3339(),
        resets_at: pause::reset_time(input.error_details.as_ref()),
    };
    Ok(
        match pause_loop(paths, input.session(), pause, PauseSeen::AtTheError)? {
            Some(message) => HookOutput::allow(message),
            None => HookOutput::Nothing,
        },
    )
}

/// When a pause is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PauseSeen {
    /// By the `StopFailure` hook of the turn.
    AtTheError,
    /// At the owner's resume: `claude -p` exits at once on an API error
    /// and ends its hooks (docs/client-measurements.md); a fresh-clone run
    /// of scenario 53 once found no pause after one, the hook never having
    /// written it. A loop already paused is left as it is.
    AtResume,
}

/// Pause the owner's active loop: the state, then its log line. The user's
/// message, when it was paused.
fn pause_loop(
    paths: &LoopPaths,
    session: &str,
    pause: Pause,
    seen: PauseSeen,
) -> Result<Option<String>, StoreError> {
    if !paths.has_loop() {
        return Ok(None);
    }
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let StateFile::Loop { text, state } = crate::state_file::read(paths) else {
        return Ok(None);
    };
    if !state.active || !owns(&state.session_id, session) {
        return Ok(None);
    }
    if seen == PauseSeen::AtResume && state.api_error_pause.is_some() {
        return Ok(None);
    }
    let next = LoopState {
        api_error_pause: Some(pause.clone()),
        ..*state
    };
    crate::state_file::write(paths, &state::updated_text(&text, &next))?;
    let reason = pause.reason.as_str();
    let entry = Entry::now(&next.session_id, next.iteration, Action::Pause, reason);
    let message = control::paused(&next, &pause);
    let logged = match seen {
        PauseSeen::AtTheError => message.clone(),
        PauseSeen::AtResume => format!(
            "{message} (recorded at the session's resume: the client exited before its StopFailure hook paused the loop)"
        ),
    };
    let _ = activity::append(&paths.log, &entry.with_message(Some(&logged)));
    Ok(Some(message))
}

/// At the owner's resume: the last turn ended on an API error (the
/// client's message for it is the transcript's newest assistant line) and
/// no pause was recorded: it is now. The user's message, when it was.
fn pause_lost_at_exit(paths: &LoopPaths, input: &HookInput) -> Result<Option<String>, StoreError> {
    let path = input.transcript_path.as_deref().map(std::path::Path::new);
    let written = transcript::written(path, Awaited::Nothing, Duration::ZERO);
    let Some(code) = written.last_api_error(transcript::DEFAULT_MAX_BYTES) else {
        return Ok(None);
    };
    let pause = Pause {
        reason: PauseReason::parse(Some(&code)),
        at: clock::now_rfc3339(),
        resets_at: None,
    };
    pause_loop(paths, input.session(), pause, PauseSeen::AtResume)
}

/// A prompt of the owner's session while the loop is paused: it goes on.
/// The message for the user, when it resumed.
pub fn resume_on_prompt(paths: &LoopPaths, session: &str) -> Result<Option<String>, StoreError> {
    if !paths.has_loop() {
        return Ok(None);
    }
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let StateFile::Loop { text, state } = crate::state_file::read(paths) else {
        return Ok(None);
    };
    let Some(pause) = state.api_error_pause.clone() else {
        return Ok(None);
    };
    if !owns(&state.session_id, session) {
        return Ok(None);
    }
    let next = LoopState {
        api_error_pause: None,
        ..*state
    };
    crate::state_file::write(paths, &state::updated_text(&text, &next))?;
    let entry = Entry::now(
        session,
        next.iteration,
        Action::Resume,
        pause.reason.as_str(),
    );
    let _ = activity::append(&paths.log, &entry);
    Ok(Some(control::resumed(&pause)))
}

/// What happened to the session, in the reminder's words.
fn why(source: Source) -> &'static str {
    match source {
        Source::Compact => "the conversation was compacted",
        Source::Resume => "this session was resumed",
        Source::Clear => "the conversation was cleared and this session took the loop over",
        Source::Startup | Source::Other => "this session started",
    }
}
