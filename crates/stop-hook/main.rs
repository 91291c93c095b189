//! ralph-stop-hook: Claude Code's Stop hook for the Ralph loop.
//!
//! Reads the hook JSON on stdin and runs `ralph_core::stop::step` under the
//! loop lock: gather, plan, decide, apply. When the plan has checks to run,
//! they run here with the lock released, and the step runs again. Every
//! internal error fails open (the stop is allowed) and is reported in
//! `systemMessage`, so the user is never trapped in a loop nobody can explain.

use ralph_core::fresh_stop::{self, WorkerStep};
use ralph_core::hook_input::{HookInput, InputError};
use ralph_core::hook_output::{HookOutput, fail_open};
use ralph_core::loop_lock::{LOCK_WAIT, LoopLock};
use ralph_core::notify::Pending;
use ralph_core::parallel;
use ralph_core::paths::{LoopPaths, project_root_from_env};
use ralph_core::pins;
use ralph_core::stop::plan::Ran;
use ralph_core::stop::{Step, step, text};

fn main() {
    answer(fail_open(text::INTERNAL_ERROR, run));
    // The answer is out and the lock released: a loop that ended now is
    // announced (`--notify`), for at most a few seconds.
    if let Some(pending) = NOTIFY.get() {
        let _ = pending.fire();
    }
}

/// The notify command of the loop this Stop may end (set by `run`).
static NOTIFY: std::sync::OnceLock<Pending> = std::sync::OnceLock::new();

/// Print the hook's answer once: the watchdog and the main thread race for it.
fn answer(output: HookOutput) {
    static ANSWERED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut answered = ANSWERED.lock().unwrap_or_else(|e| e.into_inner());
    if *answered {
        return;
    }
    *answered = true;
    output.print();
}

/// Whole-process watchdog for the long work (checks, reviews, the merge
/// queue): whatever blocks there, the hook answers "this stop is allowed"
/// and exits, which also releases the loop lock, so the user is never left
/// waiting on a hook. Its thread starts at the first [`extend`], so the
/// turn that runs no long work (the steady path) starts no thread: every
/// step there is bounded by itself (the input's deadline, the lock's wait,
/// reads that refuse FIFOs and links, git run with a timeout).
mod watchdog {
    use std::sync::Once;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Time for everything but checks (reading, deciding, writing).
    pub(crate) const WORK: Duration = Duration::from_secs(30);
    static DEADLINE_MS: AtomicU64 = AtomicU64::new(u64::MAX);
    static STARTED: Once = Once::new();

    fn now_ms() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    /// Allow `budget` more from now (the watchdog starts with the first).
    pub(crate) fn extend(budget: Duration) {
        DEADLINE_MS.store(
            now_ms().saturating_add(budget.as_millis() as u64),
            Ordering::SeqCst,
        );
        STARTED.call_once(start);
    }

    fn start() {
        std::thread::spawn(move || {
            loop {
                let deadline = DEADLINE_MS.load(Ordering::SeqCst);
                let now = now_ms();
                if now >= deadline {
                    super::answer(super::HookOutput::allow(super::text::TOO_SLOW));
                    std::process::exit(0);
                }
                std::thread::sleep(Duration::from_millis((deadline - now).min(1000)));
            }
        });
    }
}

/// Claude Code writes the input and closes the pipe at once; a pipe that
/// stays silent this long is not going to deliver.
const STDIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// The hook's whole job; `Nothing` lets the session stop silently.
fn run() -> HookOutput {
    // The path every turn of every session takes: no state file, nothing to
    // do. Claude Code sets CLAUDE_PROJECT_DIR, so this costs two stats and
    // never waits on stdin.
    let early = std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|d| !d.is_empty())
        .map(LoopPaths::new);
    if early.as_ref().is_some_and(|p| !p.has_loop()) {
        return HookOutput::Nothing;
    }
    // Only the first JSON value is read, within the deadline (a silent
    // stdin, or a pipe kept open after the value, never makes it wait).
    let input = match HookInput::read_stdin_with_deadline(STDIN_DEADLINE.as_secs()) {
        Ok(input) => input,
        Err(e) => return without_input(&e),
    };
    let root = project_root_from_env(input.cwd.as_deref());
    // The paths cost a walk of the root's links: made once when the input
    // names the same project (then the loop is known to be there).
    let (paths, known) = match early.filter(|p| p.root == root) {
        Some(paths) => (paths, true),
        None => (LoopPaths::new(root), false),
    };
    if let Some(out) = not_for_this_hook(&paths, known) {
        return out;
    }
    // --parallel: a worker's start (its worktree recorded) and its stop
    // (the merge queue, which takes its locks itself).
    let parallel_worker = input.agent_type.as_deref() == Some(parallel::WORKER_TYPE);
    match input.hook_event_name.as_deref() {
        Some("SubagentStart") => return parallel::hooks::started(&paths, &input),
        Some("SubagentStop") if parallel_worker => {
            // A merge into the user's tree is not cut short by the client's exit.
            ralph_core::exit_signals::hold_off_termination();
            return parallel::hooks::worker_stop(&paths, &input, &watchdog::extend);
        }
        Some("SubagentStop") => return worker_stop(&paths, &input),
        _ => {}
    }
    // The rounds (`stop::MAX_ROUNDS`): checks and reviews run without the
    // lock (a cancel must not wait for a long test suite); each round reads
    // the state afresh.
    let mut transcript = ralph_core::stop::await_transcript(&input);
    let mut ran = Ran::default();
    let mut put_back = Vec::new();
    let notify = std::cell::OnceCell::new();
    for _round in 0..ralph_core::stop::MAX_ROUNDS {
        let lock = match LoopLock::acquire(&paths.lock, LOCK_WAIT) {
            Ok(lock) => lock,
            Err(e) => return HookOutput::allow(text::lock_failed(&e)),
        };
        // The agent's process held it and was stopped: said and logged.
        ran.lock_freed.extend(lock.freed().map(str::to_string));
        let stepped = step(&paths, &input, &transcript, &ran, &notify);
        if let Some(Some(pending)) = notify.get() {
            let _ = NOTIFY.set(pending.clone());
        }
        match stepped {
            Ok(Step::Done(out)) => return pins::told(out, &put_back),
            Ok(Step::RunChecks(jobs)) => {
                // Checks run against the files pinned at start (under the lock).
                let pins = pins::before_checks(&paths);
                put_back.extend(pins.put_back.iter().cloned());
                drop(lock);
                watchdog::extend(jobs.budget() + watchdog::WORK);
                jobs.run(&paths, &pins, &mut ran);
                watchdog::extend(watchdog::WORK);
            }
            Ok(Step::AwaitNewerTurn(answered)) => {
                drop(lock);
                transcript = ralph_core::stop::await_newer_turn(&input, &answered);
            }
            Err(e) => return HookOutput::allow(text::file_failed(&e)),
        }
    }
    HookOutput::allow(text::KEPT_CHANGING)
}

/// The input did not come (or is not JSON): with a loop this hook would
/// act on, the stop is allowed with a message saying why.
fn without_input(e: &InputError) -> HookOutput {
    let paths = LoopPaths::new(project_root_from_env(None));
    not_for_this_hook(&paths, false).unwrap_or_else(|| HookOutput::allow(text::bad_input(e)))
}

/// `Some(Nothing)` when this Stop is not the loop's to judge: no loop (not
/// looked at again when `has_loop` is known), the agent running the hook
/// itself, or a reviewer's session.
fn not_for_this_hook(paths: &LoopPaths, has_loop: bool) -> Option<HookOutput> {
    if !has_loop && !paths.has_loop() {
        return Some(HookOutput::Nothing);
    }
    // Git's configuration read is kept in the loop's folder across hooks.
    ralph_core::git::cache_config_in(&paths.git_config);
    // Claude Code runs this hook (`AI_AGENT=…_harness`, below the client);
    // the agent running it from Bash with a forged input (a promise, a
    // burned iteration, another worker's stop) gets nothing, whatever
    // environment it gives it (`ancestry`).
    if ralph_core::control::this_process_run_by_agent() {
        return Some(HookOutput::Nothing);
    }
    // A reviewer's own session (`--review`) is not the loop's (a pass only
    // ralph hands out: `passes`).
    if ralph_core::passes::in_reviewer_session(paths) {
        return Some(HookOutput::Nothing);
    }
    None
}

/// `--fresh`: a worker subagent's stop (`SubagentStop`), judged in its own
/// context. Round 1 may ask for the story's check, which runs here with the
/// lock released; round 2 decides with its result.
fn worker_stop(paths: &LoopPaths, input: &HookInput) -> HookOutput {
    let mut ran = None;
    for _round in 0..2 {
        let lock = match LoopLock::acquire(&paths.lock, LOCK_WAIT) {
            Ok(lock) => lock,
            Err(e) => return HookOutput::allow(text::lock_failed(&e)),
        };
        match fresh_stop::step(paths, input, ran.as_ref()) {
            Ok(WorkerStep::Done(out)) => return out,
            Ok(WorkerStep::RunCheck { command, timeout }) => {
                let pins = pins::before_checks(paths);
                drop(lock);
                watchdog::extend(timeout + watchdog::WORK);
                ran = Some(pins.run_check(
                    &paths.root,
                    &command,
                    timeout,
                    None,
                    Some(&paths.reports),
                ));
                watchdog::extend(watchdog::WORK);
            }
            Err(e) => return HookOutput::allow(text::file_failed(&e)),
        }
    }
    HookOutput::allow(text::KEPT_CHANGING)
}
