//! The user's controls over a running loop: cancel, status, help, resume,
//! and accepting the removal of tests from the suite. Does I/O.
//!
//! Shared by `ralph-setup` (the typed commands and the terminal) and the Stop
//! hook (the same commands typed while a loop runs wait in the client's
//! queue, and the Stop hook carries them out; see `queue`).

mod accept;
mod help;
pub(crate) mod status;

pub use accept::{AcceptOutcome, accept};
pub use help::help_text;
pub use help::terminal_help;

use crate::activity::{self, Action, Code, Entry};
use crate::clock;
use crate::fmt::{self, short_session};
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::pause::Pause;
use crate::state::LoopState;
use crate::state_file::StateFile;
use crate::store::{self, StoreError};
use status::Status;

/// Cancel the project's loop, taking the lock; the message for the user either way.
pub fn cancel(paths: &LoopPaths) -> Result<String, StoreError> {
    let lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let mut message = match crate::state_file::read(paths) {
        StateFile::Missing => return Ok(nothing_to_cancel(paths)),
        StateFile::Loop { state, .. } => {
            crate::state_file::remove(paths)?;
            crate::config_seen::at_end(paths);
            let _ = activity::append(&paths.log, &cancel_entry(&state, None));
            let mut message = cancelled(&state, None);
            // --parallel: the workers' worktrees and branches go too (a
            // worker still running finds its worktree gone and stops).
            let removed =
                crate::parallel::hooks::remove_all(paths, &state.session_id, state.iteration);
            if let Some(removed) = removed {
                message.push_str(&format!(" ralph {removed}."));
            }
            message
        }
        StateFile::Unreadable(e) => cancel_corrupt(paths, &e)?,
        StateFile::Corrupt { error, .. } => cancel_corrupt(paths, &error)?,
    };
    for file in paths.sidecars() {
        let _ = store::remove_if_present(file);
        let _ = crate::seal::remove(file);
    }
    crate::pins::disk::forget(paths);
    if let Some(note) = lock.freed() {
        message.push_str(&format!(" ({note}.)"));
    }
    Ok(message)
}

/// Resume a loop paused for the user (a blocker), taking the lock: the
/// pause and the blocker file go, and the next Stop feeds the loop again.
/// The message for the user either way.
pub fn resume(paths: &LoopPaths) -> Result<Resumed, StoreError> {
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    if let Some(t) = crate::tamper::found(paths) {
        return accept_tampered(paths, &t);
    }
    if let Some(t) = watch_forged(paths) {
        return accept_tampered(paths, &t);
    }
    let (text, state) = match crate::state_file::read(paths) {
        StateFile::Loop { text, state } => (text, state),
        StateFile::Missing => {
            return Ok(Resumed::No(
                "ralph: no Ralph loop in this project to resume.".into(),
            ));
        }
        StateFile::Unreadable(e) => return Err(e),
        StateFile::Corrupt { error, .. } => {
            return Ok(Resumed::No(format!(
                "ralph: the loop's state is corrupt ({error}); /cancel-ralph keeps it aside."
            )));
        }
    };
    let at = state.iteration_label(state.iteration);
    let Some(why) = state.blocked.clone() else {
        return Ok(Resumed::No(format!(
            "ralph: the Ralph loop is not paused (iteration {at}); nothing to resume."
        )));
    };
    let resumed = LoopState {
        blocked: None,
        fresh: false,
        ..(*state).clone()
    };
    crate::state_file::write(paths, &crate::state::updated_text(&text, &resumed))?;
    let _ = store::remove_if_present(&paths.blocker);
    let entry = Entry::now(&state.session_id, state.iteration, Action::Resume, "user");
    let _ = activity::append(&paths.log, &entry.with_message(Some(&why)));
    Ok(Resumed::Yes(format!(
        "▶️ Resumed the Ralph loop at iteration {at} (it was paused: {why}). .ralph-blocker.md was removed; the loop goes on when Claude next stops."
    )))
}

/// The loop paused because its folder was changed outside ralph, and the
/// user resumes it: the files are accepted as they are now (sealed again,
/// the project's copy written from the state).
fn accept_tampered(paths: &LoopPaths, t: &crate::tamper::Tamper) -> Result<Resumed, StoreError> {
    for file in [&paths.verify, &paths.review, &paths.scores] {
        crate::seal::accept(file)?;
    }
    crate::seal::accept_inline(&paths.last_injected)?;
    crate::state_file::accept(paths)?;
    // The records as they are now are the loop's: none is expected older
    // or newer than what is there (their seals name no generation now);
    // git's watched files are recorded again as they are.
    if let StateFile::Loop { text, state } = crate::state_file::read(paths)
        && (!state.records.is_empty() || state.watched.is_some())
    {
        let accepted = LoopState {
            records: crate::records::RecordGens::default(),
            watched: state
                .watched
                .as_ref()
                .and_then(|_| crate::git_watch::record(paths)),
            ..(*state).clone()
        };
        crate::state_file::write(paths, &crate::state::updated_text(&text, &accepted))?;
    }
    let why = t.changes.join("; ");
    let entry = Entry::now(&t.owner, t.iteration, Action::Resume, "user_accepted");
    let _ = activity::append(&paths.log, &entry.with_message(Some(&why)));
    Ok(Resumed::Yes(format!(
        "▶️ Resumed the Ralph loop with its files as they are now (changed outside ralph: {why}). The loop goes on when Claude next stops."
    )))
}

/// The loop paused because ralph's record of git's watched files is not
/// as it left it (`git_watch::changes`): the same words as the Stop's.
fn watch_forged(paths: &LoopPaths) -> Option<crate::tamper::Tamper> {
    let StateFile::Loop { state, .. } = crate::state_file::read(paths) else {
        return None;
    };
    state.watched.as_ref()?;
    let places = crate::git_watch::Places::of(&paths.root)?;
    let what = crate::git_watch::changes(paths, &places).err()?;
    Some(crate::tamper::Tamper {
        owner: state.session_id.clone(),
        iteration: state.iteration,
        changes: vec![what],
    })
}

/// What a resume did, with the message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resumed {
    Yes(String),
    /// Nothing was paused (or there is no loop): why.
    No(String),
}

impl Resumed {
    pub fn message(&self) -> &str {
        match self {
            Resumed::Yes(m) | Resumed::No(m) => m,
        }
    }
}

/// The log line of a cancel: under the loop's session, wherever it was typed.
pub(crate) fn cancel_entry(state: &LoopState, message: Option<&str>) -> Entry {
    let code = Code::Cancelled.as_str();
    Entry::now(&state.session_id, state.iteration, Action::Cancel, code).with_message(message)
}

/// A running loop was cancelled; `typed` is the command the user queued,
/// when a Stop carried it out.
pub(crate) fn cancelled(state: &LoopState, typed: Option<&str>) -> String {
    let at = state.iteration_label(state.iteration);
    match typed {
        Some(t) => format!("🛑 Cancelled the Ralph loop at iteration {at}: you typed {t}."),
        None => format!(
            "🛑 Cancelled the Ralph loop at iteration {at} (session {}).",
            short_session(&state.session_id)
        ),
    }
}

/// A turn ended on an API error and the loop waits (StopFailure).
pub(crate) fn paused(state: &LoopState, pause: &Pause) -> String {
    let resets = match &pause.resets_at {
        Some(r) => format!(" (the limit resets at {r})"),
        None => String::new(),
    };
    format!(
        "⏸ Ralph loop paused at iteration {}: the turn ended on an API error ({}){resets}. Not counted as an iteration; it goes on at your next prompt (or /cancel-ralph ends it).",
        state.iteration_label(state.iteration),
        pause.reason.as_str()
    )
}

/// The loop goes on after a pause.
pub(crate) fn resumed(pause: &Pause) -> String {
    format!(
        "▶ Ralph loop resumed (it was paused on {} since {}).",
        pause.reason.as_str(),
        pause.at
    )
}

/// After `/clear`, the new session took the loop over from the old one.
pub(crate) fn rebound(old: &str, new: &str) -> String {
    format!(
        "🔁 Ralph loop: this session ({}) took over the loop of the session you cleared ({}).",
        short_session(new),
        short_session(old)
    )
}

/// A state file that cannot be used is cancelled by keeping it aside.
fn cancel_corrupt(paths: &LoopPaths, why: &dyn std::fmt::Display) -> Result<String, StoreError> {
    let kept = crate::state_file::move_aside(paths, clock::unix_now())?;
    Ok(format!(
        "🛑 Cancelled the Ralph loop; its state file was corrupt ({why}) and was kept as {}.",
        fmt::relative(&paths.root, &kept)
    ))
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

/// The project's loop, as `status` shows it.
pub fn status(paths: &LoopPaths) -> Status {
    let last = activity::last_entry(&paths.log);
    let project = paths.root.display().to_string();
    // Paused for evidence of tampering: said so, with what changed and how
    // to go on, rather than read as a corrupt state.
    if let Some(t) = crate::tamper::found(paths) {
        return Status::tampered(project, &t, last);
    }
    match crate::state_file::read(paths) {
        StateFile::Missing => Status::new(project, None, None, None, None, last),
        StateFile::Unreadable(e) => {
            Status::new(project, None, Some(e.to_string()), None, None, last)
        }
        StateFile::Corrupt { error, .. } => {
            Status::new(project, None, Some(error.to_string()), None, None, last)
        }
        StateFile::Loop { state, .. } => {
            let prd = state
                .prd_file
                .as_deref()
                .map(|f| crate::prd::read(&paths.root, f));
            let checks = crate::verify::read_log(&paths.verify);
            let now = Some(clock::unix_now());
            let mut status =
                Status::at(project, Some(&state), None, prd.as_ref(), checks, last, now);
            status.state_file = Some(paths.state.display().to_string());
            status.score = crate::score::summary::ScoreSummary::of(
                &crate::score::history::read(&paths.scores),
                state.max_plateau,
            );
            status.suite = crate::suite::overview::SuiteSummary::of_loop(paths);
            status.worker = state
                .fresh
                .then(|| crate::fresh::read_worker(&paths.worker))
                .flatten();
            let scripts =
                crate::pins::scripts::shown(&crate::pins::disk::read_manifest(paths).scripts);
            if !state.pins.is_empty() || !scripts.is_empty() {
                let mut back: Vec<String> = crate::pins::disk::history(paths)
                    .into_iter()
                    .map(|b| b.path)
                    .collect();
                back.dedup();
                let mut pins = status::PinsStatus::new(&state, back);
                pins.scripts = scripts;
                status.pins = Some(pins);
            }
            if state.parallel > 0 {
                status.parallel = Some(status::ParallelStatus::new(
                    state.parallel,
                    &crate::parallel::disk::read_board(&paths.board),
                ));
            }
            if state.review.is_on() {
                let log = crate::review::disk::read_log(&paths.review).unwrap_or_default();
                status.review = Some(status::ReviewStatus::new(&state.review, &log));
            }
            status
        }
    }
}

/// Why this program counts as run by the agent (its Bash tool, or a skill
/// body, which the client runs the same way) rather than by a hook or the
/// user, in words; `None`: it does not. Claude Code marks the agent's
/// commands `AI_AGENT=claude-code_…_agent`, its hooks `…_harness`, and the
/// user's own terminal has neither, or another tool's (measured on 2.1.328:
/// docs/client-measurements.md); and since the agent can unset its mark
/// (`env -u AI_AGENT …`), the ancestors' initial environments count too
/// (`ancestry`: the agent's shell above it, or a hook that no client
/// started, or a process detached to init).
pub fn agent_origin() -> Option<String> {
    if crate::ancestry::is_agents_mark(std::env::var("AI_AGENT").ok().as_deref()) {
        return Some("its environment carries the Bash tool's mark".into());
    }
    match crate::ancestry::this_origin() {
        crate::ancestry::Origin::Agent(why) => Some(why),
        _ => None,
    }
}

/// Whether [`agent_origin`] names a reason.
pub fn this_process_run_by_agent() -> bool {
    agent_origin().is_some()
}

/// The refusal when the agent runs a command that starts, replaces or ends a loop.
pub fn agent_refused(command: &str) -> String {
    format!(
        "`{command}` was run by the agent: only the user starts, replaces or ends a Ralph loop (/ralph-loop, /cancel-ralph in Claude Code, or this command in the user's own terminal). The loop goes on."
    )
}

/// The refusal of one of ralph's commands typed in a session whose hooks
/// count as run by the agent (`why`: a client the agent started, say), in
/// one line: never silence.
pub fn session_refused(why: &str) -> String {
    format!(
        "ralph: not here: this session's hooks count as run by a coding agent ({why}), and only the user starts, replaces or ends a Ralph loop. Start Claude Code from your own terminal, or use `ralph` there."
    )
}

/// Print a command's error once: on stderr, and on stdout too only when
/// stdout is another file (a skill's `!` line or a script reads stdout; a
/// terminal shows both streams, so the same line twice is noise).
pub fn print_error(e: &dyn std::fmt::Display) {
    eprintln!("ralph: {e}");
    if !stdout_is_stderr() {
        println!("ralph: {e}");
    }
}

/// Whether stdout and stderr are the same file (one terminal, or `2>&1`).
/// Elsewhere than Unix: not known, so both are written.
#[cfg(not(unix))]
fn stdout_is_stderr() -> bool {
    false
}

/// Whether stdout and stderr are the same file (one terminal, or `2>&1`).
#[cfg(unix)]
fn stdout_is_stderr() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let id = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let meta = file.metadata().ok()?;
        Some((meta.dev(), meta.ino(), meta.rdev()))
    };
    let out = id(std::io::stdout().as_fd());
    out.is_some() && out == id(std::io::stderr().as_fd())
}

#[cfg(test)]
mod who_tests {
    use crate::ancestry::is_agents_mark;

    #[test]
    fn the_agent_is_told_apart_from_hooks_the_terminal_and_other_tools() {
        assert!(is_agents_mark(Some("claude-code_2-1-328_agent")));
        assert!(is_agents_mark(Some("claude-code_2-2-0_agent")));
        assert!(!is_agents_mark(Some("claude-code_2-1-328_harness")));
        assert!(!is_agents_mark(None));
        assert!(!is_agents_mark(Some("")));
        // Another agent tool's mark, carried in from the user's terminal.
        assert!(!is_agents_mark(Some("cursor-cli_1-2_agent")));
        assert!(!is_agents_mark(Some("codex_agent")));
    }
}
