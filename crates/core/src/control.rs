//! The user's controls over a running loop: cancel, status and help. Does I/O.
//!
//! Shared by `ralph-setup` (the typed commands and the terminal) and the Stop
//! hook (the same commands typed while a loop runs wait in the client's
//! queue, and the Stop hook answers them; see `queue`).

use crate::activity::{self, Action, Code, Entry};
use crate::args::USAGE;
use crate::clock;
use crate::fmt;
use crate::fmt::short_session as short;
use crate::paths::{LoopPaths, StateFile};
use crate::setup::Status;
use crate::state::LoopState;
use crate::store::{self, LOCK_WAIT, LoopLock, StoreError};

/// What the state file holds.
pub enum ReadState {
    None,
    /// The state and the seconds since it was last written.
    Loop(Box<LoopState>, u64),
    Corrupt(String),
}

pub fn read_state(paths: &LoopPaths) -> ReadState {
    match paths.read_state() {
        StateFile::Missing => ReadState::None,
        StateFile::Unreadable(e) => ReadState::Corrupt(e.to_string()),
        StateFile::Corrupt { error, .. } => ReadState::Corrupt(error.to_string()),
        StateFile::Loop { state, .. } => ReadState::Loop(Box::new(state), paths.state_age_secs()),
    }
}

/// Cancel the project's loop, taking the lock; the message for the user either way.
pub fn cancel(paths: &LoopPaths) -> Result<String, StoreError> {
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let msg = match read_state(paths) {
        ReadState::None => return Ok(nothing_to_cancel(paths)),
        ReadState::Loop(state, _) => {
            store::remove_if_present(&paths.state)?;
            let _ = activity::append(&paths.log, &cancel_entry(&state, None));
            cancelled(&state, None)
        }
        ReadState::Corrupt(e) => {
            let kept = store::move_aside(&paths.state, clock::unix_now())?;
            format!(
                "🛑 Cancelled the Ralph loop; its state file was corrupt ({e}) and was kept as {}.",
                fmt::relative(&paths.root, &kept)
            )
        }
    };
    let _ = store::remove_if_present(&paths.last_injected);
    Ok(msg)
}

/// The log line of a cancel: under the loop's session, wherever it was typed.
pub fn cancel_entry(state: &LoopState, message: Option<&str>) -> Entry {
    let code = Code::Cancelled.as_str();
    Entry::now(&state.session_id, state.iteration, Action::Cancel, code).with_message(message)
}

/// A running loop was cancelled; `typed` is the command the user queued,
/// when a Stop carried it out.
pub fn cancelled(state: &LoopState, typed: Option<&str>) -> String {
    let at = state.iteration_label(state.iteration);
    match typed {
        Some(t) => format!("🛑 Cancelled the Ralph loop at iteration {at}: you typed {t}."),
        None => format!(
            "🛑 Cancelled the Ralph loop at iteration {at} (session {}).",
            short(&state.session_id)
        ),
    }
}

/// No loop to cancel. A cancel queued while the loop ran was carried out at
/// a Stop before the client got to run it: say so rather than "nothing".
fn nothing_to_cancel(paths: &LoopPaths) -> String {
    let last = match activity::last_entry(&paths.log) {
        Some(e) if e.decision == Action::Cancel.as_str() => {
            format!(" (it was cancelled at iteration {})", e.iteration)
        }
        Some(e) if e.decision == Action::End.as_str() => format!(
            " (the last one ended at iteration {}: {})",
            e.iteration, e.reason
        ),
        _ => String::new(),
    };
    format!(
        "No Ralph loop is active in {}: nothing to cancel{last}.",
        paths.root.display()
    )
}

/// The loop's status, read from its files.
pub fn status(paths: &LoopPaths) -> Status {
    let last = activity::last_entry(&paths.log);
    let project = paths.root.display().to_string();
    match read_state(paths) {
        ReadState::None => Status::new(project, None, None, None, last),
        ReadState::Corrupt(e) => Status::new(project, None, Some(e), None, last),
        ReadState::Loop(state, _) => {
            let checks = paths.read_verify_log();
            let prd = state.prd_file.as_deref().map(|f| paths.read_prd(f));
            let mut status = Status::new(project, Some(state.as_ref()), None, prd.as_ref(), last);
            status.verify = state.verify.clone();
            status.checks = checks;
            status
        }
    }
}

/// `/ralph-help`: the reference, short enough to read on one screen.
pub fn help_text() -> String {
    format!(
        "Usage: {USAGE}\n\nStarts a Ralph loop: each time Claude tries to end its turn, the Stop hook feeds the task back until the completion promise is printed (only when true), every PRD story passes, or the cap is reached.\n  --max-iterations N         turns in all (0 = unlimited; default 0)\n  --completion-promise TEXT  the loop ends when Claude prints <promise>TEXT</promise> (PRD default: RALPH-COMPLETE)\n  --prd-file PATH            feed the stories of a prd.json one by one, by priority and dependencies\n  --prompt-file PATH         read the prompt from a file (its frontmatter is not part of the prompt)\n  --verify CMD               completion counts only when CMD exits 0 (--verify-timeout SECS, default 300)\n  --max-stalls N             stop after N iterations in a row that change nothing (default 3; 0 = off)\n  --max-story-attempts N     stop when one story is fed N times in a row without passing (default 5)\n  --replace                  take over another session's running loop\n  --                         everything after it is prompt text\nWhile a loop runs: /ralph-status shows it, /cancel-ralph ends it at the next stop, anything else you type reaches Claude at the next stop and the loop goes on; Esc interrupts at once."
    )
}
