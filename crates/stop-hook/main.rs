//! ralph-stop-hook: Claude Code's Stop hook for the Ralph loop.
//!
//! Reads the hook JSON on stdin and the loop files, asks
//! `ralph_core::decision::decide`, and applies the answer: block with the next
//! prompt, or let the session stop and say why. Every internal error fails
//! open (the stop is allowed) and is reported in `systemMessage`, so the user
//! is never trapped in a loop nobody can explain.

use ralph_core::activity::{self, Action, Entry};
use ralph_core::decision::{Code, Decision, StopContext, decide};
use ralph_core::hook_input::HookInput;
use ralph_core::hook_output::{HookOutput, fail_open};
use ralph_core::paths::{LoopPaths, PrdReadError, STATE_FILE, StateFile, project_root_from_env};
use ralph_core::prd::Prd;
use ralph_core::queue::{self, QueueAction};
use ralph_core::state::{self, LoopState};
use ralph_core::store::{self, LOCK_WAIT, LoopLock, StoreError};
use ralph_core::verify::{self, CheckResult, VerifyLog};
use ralph_core::{clock, control, frontmatter, progress, promise, transcript, worktree};

fn main() {
    answer(fail_open(
        "ralph: the Stop hook hit an internal error (a bug: please report it); this stop is allowed and the loop state was left as it was.",
        run,
    ));
}

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

/// Whole-process watchdog. Whatever blocks (a file that is not what it
/// seems, a stuck disk), the hook answers "this stop is allowed" and exits,
/// which also releases the loop lock: the user is never left waiting on a
/// hook. The deadline is pushed out while verify checks run.
mod watchdog {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Time for everything but checks (reading, deciding, writing).
    pub const WORK: Duration = Duration::from_secs(30);
    static DEADLINE_MS: AtomicU64 = AtomicU64::new(u64::MAX);

    fn now_ms() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    /// Allow `budget` more from now.
    pub fn extend(budget: Duration) {
        DEADLINE_MS.store(
            now_ms().saturating_add(budget.as_millis() as u64),
            Ordering::SeqCst,
        );
    }

    pub fn start() {
        extend(WORK);
        std::thread::spawn(|| {
            loop {
                let deadline = DEADLINE_MS.load(Ordering::SeqCst);
                let now = now_ms();
                if now >= deadline {
                    super::answer(super::HookOutput::allow(
                        "ralph: the Stop hook took too long (a blocked file or disk?); this stop is allowed and the loop was not advanced.",
                    ));
                    std::process::exit(0);
                }
                std::thread::sleep(Duration::from_millis((deadline - now).min(1000)));
            }
        });
    }
}

/// Claude Code writes the input and closes the pipe at once; a pipe that
/// stays silent this long is not going to deliver.
const STDIN_DEADLINE_SECS: u64 = 10;

/// The hook's whole job; `Nothing` lets the session stop silently.
fn run() -> HookOutput {
    // The path every turn of every session takes: no state file, nothing to
    // do. Claude Code sets CLAUDE_PROJECT_DIR, so this costs one stat and
    // never waits on stdin.
    if let Some(dir) = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty())
        && !LoopPaths::new(dir).state.exists()
    {
        return HookOutput::Nothing;
    }
    watchdog::start();
    let input = HookInput::read_stdin_with_deadline(STDIN_DEADLINE_SECS);
    let root = project_root_from_env(input.as_ref().ok().and_then(|i| i.cwd.as_deref()));
    let paths = LoopPaths::new(root);
    if !paths.state.exists() {
        return HookOutput::Nothing;
    }
    let input = match input {
        Ok(input) => input,
        Err(e) => {
            return HookOutput::allow(format!(
                "ralph: {e}; the loop in {STATE_FILE} was not advanced and this stop is allowed."
            ));
        }
    };
    let mut checks = Checks::default();
    // Round 1 may find checks to run; they run without the lock (a cancel
    // must not wait for a long test suite), then round 2 decides on a fresh
    // read of the state with their results.
    // Round 1 may run story checks, round 2 the loop's own check (whether
    // completion is claimed can depend on the story checks), round 3 decides.
    for _round in 0..3 {
        let _lock = match LoopLock::acquire(&paths.lock, LOCK_WAIT) {
            Ok(lock) => lock,
            Err(e) => return HookOutput::allow(format!("ralph: {e}. This stop is allowed.")),
        };
        match step(&paths, &input, &checks) {
            Ok(Step::Done(out)) => return out,
            Ok(Step::RunChecks(jobs)) => {
                drop(_lock);
                let count = jobs.stories.len() + usize::from(jobs.loop_verify.is_some());
                watchdog::extend(jobs.timeout * count as u32 + watchdog::WORK);
                checks.run(jobs);
                watchdog::extend(watchdog::WORK);
            }
            Err(e) => {
                return HookOutput::allow(format!(
                    "ralph: {e}. The loop is paused and this stop is allowed; fix the file, or cancel with /ralph:cancel-ralph."
                ));
            }
        }
    }
    HookOutput::allow(
        "ralph: the loop state kept changing while its checks ran; this stop is allowed.",
    )
}

/// Check commands to run outside the lock.
struct Jobs {
    root: std::path::PathBuf,
    stories: Vec<(String, String)>,
    loop_verify: Option<String>,
    timeout: std::time::Duration,
    fingerprint: Option<String>,
}

/// Results of the checks run in earlier rounds of this Stop.
#[derive(Default)]
struct Checks {
    stories_done: bool,
    stories: Vec<(String, CheckResult)>,
    loop_check: Option<CheckResult>,
}

impl Checks {
    fn run(&mut self, jobs: Jobs) {
        self.stories_done = true;
        for (id, cmd) in jobs.stories {
            let r = worktree::run_check(&jobs.root, &cmd, jobs.timeout, jobs.fingerprint.clone());
            self.stories.push((id, r));
        }
        if let Some(cmd) = jobs.loop_verify {
            self.loop_check = Some(worktree::run_check(
                &jobs.root,
                &cmd,
                jobs.timeout,
                jobs.fingerprint.clone(),
            ));
        }
    }
}

enum Step {
    Done(HookOutput),
    RunChecks(Jobs),
}

/// One Stop of a loop, under the lock: decide, or ask for checks to be run first.
fn step(paths: &LoopPaths, input: &HookInput, checks: &Checks) -> Result<Step, StoreError> {
    let done = |out| Ok(Step::Done(out));
    let session = input.session();
    let (text, state) = match paths.read_state() {
        // Cancelled between our existence check and the lock.
        StateFile::Missing => return done(HookOutput::Nothing),
        StateFile::Unreadable(e) if e.is_not_text() => {
            return done(corrupt(
                paths,
                session,
                0,
                "the file is not UTF-8 text".into(),
            )?);
        }
        StateFile::Unreadable(e) => return Err(e),
        StateFile::Corrupt { text, error } => {
            // A corrupt file that names another session is that session's to report.
            if frontmatter::scan(&text, "session_id")
                .is_some_and(|owner| !owner.is_empty() && owner != session)
            {
                return done(HookOutput::Nothing);
            }
            let iteration = frontmatter::scan(&text, "iteration")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            return done(corrupt(paths, session, iteration, error.to_string())?);
        }
        StateFile::Loop { text, state } => (text, state),
    };
    if !state.session_id.is_empty() && state.session_id != session {
        return done(HookOutput::Nothing);
    }
    // An unclaimed loop (the official setup, or `ralph-setup start` from a
    // terminal) belongs to the first session whose Stop sees it.
    let mut next = state.clone();
    if state.session_id.is_empty() && !session.is_empty() {
        next.session_id = session.to_string();
        // The claim is recorded for `status`; a log failure is reported with the decision's.
        let _ = log(
            paths,
            session,
            state.iteration,
            Action::Claim,
            activity::CLAIMED,
            None,
            None,
        );
    }

    let turn = read_turn(input);
    // What the user typed meanwhile comes first: it waits in the client's
    // queue until a turn ends, and a loop's turns never end on their own.
    let queued = turn
        .as_ref()
        .map(|t| queue::pending(&t.queue))
        .unwrap_or_default();
    let queue_action = queue::action(&queued, state.queue_seen.as_deref());
    if queue_action != QueueAction::None {
        next.queue_seen = queue::newest(&queued).map(str::to_string);
    }
    match &queue_action {
        QueueAction::Cancel { typed } => {
            return done(HookOutput::allow(control::cancel_locked(
                paths,
                Some(typed),
            )?));
        }
        QueueAction::Yield { .. } => {
            return done(yield_to_user(paths, session, &text, next)?);
        }
        QueueAction::Answer { .. } | QueueAction::None => {}
    }
    let said = assistant_text(input, &state, turn.as_ref());
    let prd = state.prd_file.as_deref().map(|file| paths.read_prd(file));
    let blocker = paths.read_blocker();
    let last_injected = paths.read_last_injected();

    // The breaker judges the turn from its tools (progress::turn_effect);
    // git is asked only when the tools cannot tell, or when a check may run.
    let effect = progress::turn_effect(turn.as_ref(), input.last_assistant_message.as_deref());
    let checks_may_run = state.verify.is_some()
        || matches!(&prd, Some(Ok(p)) if p.stories.iter().any(|s| s.passes && s.verify.is_some()));
    let fingerprint =
        if checks_may_run || (state.max_stalls > 0 && effect == progress::TurnEffect::Unknown) {
            worktree::fingerprint(&paths.root)
        } else {
            None
        };
    // The turn after a yield answered the user: it is not judged as work.
    let stalls = if state.yielded {
        state.stalls
    } else {
        progress::stalls_after(
            effect,
            state.stalls,
            fingerprint.as_deref(),
            state.last_fingerprint.as_deref(),
        )
    };
    next.yielded = false;
    let mut log = paths.read_verify_log().unwrap_or_default();
    for (id, result) in &checks.stories {
        log.stories.insert(id.clone(), result.clone());
    }
    if let Some(r) = &checks.loop_check {
        log.r#loop = Some(r.clone());
    }
    let story_jobs = match (&prd, checks.stories_done) {
        (Some(Ok(p)), false) => verify::stories_to_check(p, &log, fingerprint.as_deref()),
        _ => Vec::new(),
    };
    let claimed = completion_claimed(&state, said.as_deref(), prd.as_ref(), &log);
    // The loop's own check, unless it already ran on this very tree.
    let cached = log.r#loop.as_ref().filter(|r| {
        Some(&r.command) == state.verify.as_ref()
            && fingerprint.is_some()
            && r.fingerprint == fingerprint
    });
    let loop_check = checks.loop_check.as_ref().or(cached).cloned();
    let loop_verify = state
        .verify
        .clone()
        .filter(|_| claimed && loop_check.is_none() && story_jobs.is_empty());
    if !story_jobs.is_empty() || loop_verify.is_some() {
        return Ok(Step::RunChecks(Jobs {
            root: paths.root.clone(),
            stories: story_jobs,
            loop_verify,
            timeout: std::time::Duration::from_secs(state.verify_timeout),
            fingerprint,
        }));
    }
    if checks.stories_done || checks.loop_check.is_some() {
        let _ = store::atomic_write(&paths.verify, log.render().as_bytes());
    }
    let loop_check = loop_check.as_ref().filter(|_| claimed);
    let decision = decide(&StopContext {
        state: &state,
        assistant_text: said.as_deref(),
        prd: prd.as_ref(),
        blocker: blocker.as_ref(),
        last_injected: last_injected.as_ref(),
        verify_log: Some(&log),
        loop_check,
        stalls,
    });
    next.stalls = stalls;
    next.last_fingerprint = fingerprint.or(next.last_fingerprint);
    let out = apply(paths, session, &text, next, decision)?;
    done(answer_queued(paths, out, &queue_action))
}

/// The user's message is waiting: let this turn end without advancing the
/// loop, so the client hands the message to the model; the next Stop (after
/// the model answered) goes on with the loop.
fn yield_to_user(
    paths: &LoopPaths,
    session: &str,
    text: &str,
    mut next: LoopState,
) -> Result<HookOutput, StoreError> {
    next.yielded = true;
    store::atomic_write(&paths.state, state::updated_text(text, &next).as_bytes())?;
    let _ = log(
        paths,
        session,
        next.iteration,
        Action::Yield,
        "user_message",
        None,
        None,
    );
    Ok(HookOutput::allow(format!(
        "⏸ Ralph loop paused at iteration {} for your message; it goes on after Claude answers (/cancel-ralph ends it).",
        next.iteration_label(next.iteration)
    )))
}

/// A queued `/ralph-status` or `/ralph-help` is answered with this Stop's
/// message, after the decision was applied (so the status is current).
fn answer_queued(paths: &LoopPaths, out: HookOutput, action: &QueueAction) -> HookOutput {
    let QueueAction::Answer { status, help } = action else {
        return out;
    };
    let mut out = out;
    if *status {
        out = out.with_message_line(control::status(paths).to_text().trim_end());
    }
    if *help {
        out = out.with_message_line(&control::help_text());
    }
    out
}

/// Does this turn claim the work is done? Plain mode: the promise was kept.
/// PRD mode: every story (as judged with its checks) passes.
fn completion_claimed(
    state: &LoopState,
    said: Option<&str>,
    prd: Option<&Result<Prd, PrdReadError>>,
    log: &VerifyLog,
) -> bool {
    match prd {
        Some(Ok(p)) => {
            let all_pass = if verify::has_story_checks(p) {
                verify::effective_prd(p, log).all_pass()
            } else {
                p.all_pass()
            };
            all_pass && state.story_ids.iter().all(|id| p.story(id).is_some())
        }
        Some(Err(_)) => false,
        None => state
            .completion_promise
            .as_deref()
            .is_some_and(|p| promise::is_kept(said.unwrap_or(""), p)),
    }
}

/// Carry out a decision. `next` is the state as it stands after this Stop
/// (claimed session, stall count), before the iteration moves on.
fn apply(
    paths: &LoopPaths,
    session: &str,
    text: &str,
    mut next: LoopState,
    decision: Decision,
) -> Result<HookOutput, StoreError> {
    let code = decision.code().as_str();
    match decision {
        Decision::Continue {
            next_iteration,
            reason,
            mut system_message,
            story,
            injected,
            remove_blocker,
            ..
        } => {
            next.iteration = next_iteration;
            let updated = state::updated_text(text, &next);
            // Save before blocking: a block whose increment was not saved could
            // loop past the cap forever.
            store::atomic_write(&paths.state, updated.as_bytes())?;
            if let Some(injected) = injected
                && let Err(e) =
                    store::overwrite_hint(&paths.last_injected, injected.render().as_bytes())
            {
                system_message.push_str(&format!(" (re-injection counter not saved: {e})"));
            }
            if remove_blocker {
                let _ = store::remove_if_present(&paths.blocker);
            }
            if let Err(e) = log(
                paths,
                session,
                next_iteration,
                Action::Block,
                code,
                story,
                None,
            ) {
                system_message.push_str(&format!(" (activity log not written: {e})"));
            }
            Ok(HookOutput::Block {
                reason,
                system_message: Some(system_message),
            })
        }
        Decision::End {
            iterations,
            mut system_message,
            story,
            remove_blocker,
            ..
        } => {
            store::remove_if_present(&paths.state)?;
            let _ = store::remove_if_present(&paths.last_injected);
            if remove_blocker {
                let _ = store::remove_if_present(&paths.blocker);
            }
            if let Err(e) = log(
                paths,
                session,
                iterations,
                Action::End,
                code,
                story,
                Some(&system_message),
            ) {
                system_message.push_str(&format!(" (activity log not written: {e})"));
            }
            Ok(HookOutput::allow(system_message))
        }
    }
}

/// A corrupt state file: stop the loop, keep the file aside, say which field.
fn corrupt(
    paths: &LoopPaths,
    session: &str,
    iteration: u64,
    why: String,
) -> Result<HookOutput, StoreError> {
    let kept = store::move_aside(&paths.state, clock::unix_now())?;
    let _ = store::remove_if_present(&paths.last_injected);
    let kept = kept
        .strip_prefix(&paths.root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| kept.display().to_string());
    let text = format!(
        "⚠️ Ralph loop stopped{}: {STATE_FILE} is corrupt: {why}. The file was kept as {kept}; fix it and move it back to {STATE_FILE} to resume, or start a new loop with /ralph:ralph-loop.",
        if iteration > 0 {
            format!(" at iteration {iteration}")
        } else {
            String::new()
        }
    );
    let _ = log(
        paths,
        session,
        iteration,
        Action::End,
        Code::Corrupt.as_str(),
        None,
        Some(&text),
    );
    Ok(HookOutput::allow(text))
}

/// The last turn from the transcript, read from its end (bounded), if there is one.
fn read_turn(input: &HookInput) -> Option<transcript::Turn> {
    let path = input.transcript_path.as_deref().filter(|p| !p.is_empty())?;
    transcript::last_turn(path.as_ref(), transcript::DEFAULT_MAX_BYTES).ok()
}

/// What the assistant said this turn. `last_assistant_message` is the final
/// message only; when it lacks the promise, the transcript's last turn may
/// hold it in an earlier text block (a transcript that lags simply adds nothing).
fn assistant_text(
    input: &HookInput,
    state: &LoopState,
    turn: Option<&transcript::Turn>,
) -> Option<String> {
    let last = input.last_assistant_message.as_deref();
    let kept = |t: &str| {
        state
            .completion_promise
            .as_deref()
            .is_some_and(|p| promise::is_kept(t, p))
    };
    if last.is_some_and(|t| kept(t) || state.completion_promise.is_none()) {
        return last.map(str::to_string);
    }
    match (turn.and_then(|t| t.text.as_deref()), last) {
        (Some(t), Some(l)) => Some(format!("{t}\n{l}")),
        (t, l) => t.or(l).map(str::to_string),
    }
}

fn log(
    paths: &LoopPaths,
    session: &str,
    iteration: u64,
    action: Action,
    reason: &str,
    story: Option<String>,
    message: Option<&str>,
) -> Result<(), StoreError> {
    let entry = Entry::now(session, iteration, action, reason)
        .with_story(story)
        .with_message(message);
    activity::append(&paths.log, &entry)
}
