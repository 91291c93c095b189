//! The user's controls over a running loop: cancel, status and help. Does I/O.
//!
//! Shared by `ralph-setup` (the typed commands and the terminal) and the Stop
//! hook (the same commands typed while a loop runs wait in the client's
//! queue, and the Stop hook answers them; see `queue`).

use crate::activity::{self, Action, Entry};
use crate::args::USAGE;
use crate::clock;
use crate::decision::Code;
use crate::fmt::short_session as short;
use crate::paths::{LoopPaths, StateFile};
use crate::setup::Status;
use crate::state::LoopState;
use crate::store::{self, LOCK_WAIT, LoopLock, StoreError};
use std::path::Path;

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
    cancel_locked(paths, None)
}

/// Cancel with the lock already held. `typed` is the queued command that
/// asked for it, when the Stop hook cancels on the user's behalf.
pub fn cancel_locked(paths: &LoopPaths, typed: Option<&str>) -> Result<String, StoreError> {
    let msg = match read_state(paths) {
        ReadState::None => {
            let root = paths.root.display();
            // A cancel queued while the loop ran was carried out at the Stop
            // before the client got to run it: say so rather than "nothing".
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
            return Ok(format!(
                "No Ralph loop is active in {root}: nothing to cancel{last}."
            ));
        }
        ReadState::Loop(state, _) => {
            store::remove_if_present(&paths.state)?;
            let msg = match typed {
                Some(t) => format!(
                    "🛑 Cancelled the Ralph loop at iteration {}: you typed {t}.",
                    state.iteration_label(state.iteration)
                ),
                None => format!(
                    "🛑 Cancelled the Ralph loop at iteration {} (session {}).",
                    state.iteration_label(state.iteration),
                    short(&state.session_id)
                ),
            };
            let entry = Entry::now(
                &state.session_id,
                state.iteration,
                Action::Cancel,
                Code::Cancelled.as_str(),
            )
            .with_message(typed.map(|_| msg.as_str()));
            let _ = activity::append(&paths.log, &entry);
            msg
        }
        ReadState::Corrupt(e) => {
            let kept = store::move_aside(&paths.state, clock::unix_now())?;
            format!(
                "🛑 Cancelled the Ralph loop; its state file was corrupt ({e}) and was kept as {}.",
                relative(&paths.root, &kept)
            )
        }
    };
    let _ = store::remove_if_present(&paths.last_injected);
    Ok(msg)
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

/// `p` relative to `root` when it lies inside it.
pub fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| p.display().to_string())
}
