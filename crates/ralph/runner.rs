//! `ralph run`: the loop from outside the client, on the same core.
//!
//! The loop is started as `ralph start --session ralph-run-<id>` starts one (the
//! same state file and log as an in-session loop), each iteration is a fresh
//! `claude -p` (see `child`), and after each one the real `ralph-stop-hook`
//! decides, fed a Stop hook input as the client would send it. Its
//! `{"decision":"block"}` carries the next prompt; otherwise the loop ended and
//! the entry it logged says why.

use crate::child::{self, ClientRun, RunSetup};
use crate::config::Config;
use crate::prepare::prepare;
use crate::run_files::RunLock;
use crate::terminal::Out;
use crate::{loop_files, run_files, signals};
use ralph_core::activity::Action;
use ralph_core::passes::{PASS_ENV, Pass, Purpose};
use ralph_core::paths::{LoopPaths, project_root_from_env};
use ralph_core::run::display::{self, Style, Summary, Tone};
use ralph_core::run::end::{
    self, AfterStop, EXIT_USAGE, HookAnswer, RunEnd, after_stop, notify_env, parse_hook_output,
};
use ralph_core::run::events::Usage;
use ralph_core::run::failure::{NextTry, classify};
use ralph_core::run::handoff::{self, HANDOFF_FILE, RunnerNotes};
use ralph_core::run::tokens::human;
use ralph_core::run::units::human_duration;
use ralph_core::state::LoopState;
use ralph_core::state_file::StateFile;
use ralph_core::{clock, start, store};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// How long `--notify` may run.
const NOTIFY_LIMIT: Duration = Duration::from_secs(30);

/// After a run that stopped on a pause: no session drives the loop now.
const PAUSED_RUN: &str = "The run stopped; the loop stays paused. To go on, resolve it and start `ralph run` again with `--replace` (stories that pass stay passed); `ralph cancel` ends the loop.";

pub(crate) fn run(cfg: &Config) -> ExitCode {
    let root = project_root_from_env(None);
    let paths = LoopPaths::new(&root);
    let mut out = Out::new();
    let style = Style {
        color: display::use_color(
            std::io::stdout().is_terminal(),
            std::env::var("NO_COLOR").ok().as_deref(),
        ),
    };
    let prepared = match prepare(cfg, &paths, style) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ralph: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // `--notify`, else the project's default (`.claude/ralph.toml`), read
    // once now: a command planted there during the run never runs.
    let notify = match &cfg.notify {
        Some(spec) => ralph_core::notify::command_for(spec),
        None => ralph_core::notify::resolve_at_start(None, &paths.root)
            .and_then(|spec| ralph_core::notify::command_for(&spec)),
    };
    let mut run = Run {
        cfg,
        notify,
        paths,
        setup: prepared.setup,
        run_id: prepared.run_id,
        run_dir: prepared.run_dir,
        hook_bin: prepared.hook_bin,
        started: Instant::now(),
        total: Usage::default(),
        iterations: 0,
        _lock: prepared.lock,
    };
    out.keep_in(&run.run_dir.join("progress.log"));
    out.line(&style.paint(
        Tone::Dim,
        &format!(
            "ralph run {} · {} · streams in {}",
            run.run_id,
            run.paths.root.display(),
            run_files::RUNS_DIR.to_string() + "/" + &run.run_id
        ),
    ));
    for line in prepared.summary.lines() {
        out.line(line);
    }
    let outcome = run.iterate(&mut out);
    run.finish(&outcome, &mut out)
}

struct Run<'a> {
    cfg: &'a Config,
    /// The notify command, resolved when the run started.
    notify: Option<String>,
    paths: LoopPaths,
    setup: RunSetup,
    run_id: String,
    run_dir: PathBuf,
    hook_bin: PathBuf,
    started: Instant,
    total: Usage,
    iterations: u64,
    _lock: RunLock,
}

/// Why the runner stopped before the loop decided.
enum Halt {
    Signal(i32),
    Cancelled,
    /// The run cannot go on: a reason code for the log, and why.
    Failed(&'static str, String),
}

impl Run<'_> {
    /// Iterations until the loop ends.
    fn iterate(&mut self, out: &mut Out) -> RunEnd {
        let mut prompt = match self.first_prompt() {
            Some(p) => p,
            None => return self.halted(Halt::Cancelled, 0),
        };
        // Client runs in a row whose Stop counted nothing (the same turn
        // again: a client that writes no transcript and says the same
        // words): the cap never comes near, and each run costs a turn.
        let mut uncounted = 0;
        loop {
            let state = match ralph_core::state_file::read(&self.paths) {
                StateFile::Loop { state: s, .. } if s.session_id == self.setup.session => s,
                _ => return self.halted(Halt::Cancelled, self.iterations),
            };
            let label = display::iteration_label(state.iteration, state.max_iterations);
            let began = Instant::now();
            out.line(&display::iteration_start(
                self.setup.style,
                &label,
                self.story(&state).as_deref(),
            ));
            let ran = match self.attempts(&state, &prompt, out) {
                Ok(ran) => ran,
                Err(halt) => return self.halted(halt, state.iteration),
            };
            self.iterations = state.iteration;
            self.total.add(ran.tokens.totals());
            let mark = loop_files::log_len(&self.paths);
            let answer = match self.stop_hook(&state, &ran) {
                Ok(a) => a,
                Err(halt) => return self.halted(halt, state.iteration),
            };
            let entry = loop_files::log_entry_since(&self.paths, mark, &self.setup.session);
            uncounted = end::uncounted_after(uncounted, entry.as_ref());
            if let Some(why) = end::not_counted(uncounted) {
                return self.halted(Halt::Failed("turns_not_counted", why), state.iteration);
            }
            let message = match &answer {
                HookAnswer::Block { message, .. } | HookAnswer::Stop { message } => message.clone(),
            };
            for line in display::ralph_lines(self.setup.style, message.as_deref().unwrap_or("")) {
                out.line(&line);
            }
            out.line(&display::summary(
                self.setup.style,
                &Summary {
                    label,
                    stories: self.stories(&state),
                    tokens: ran.tokens.totals(),
                    peak_context: ran.tokens.peak_context,
                    requests: ran.tokens.requests,
                    elapsed: began.elapsed(),
                },
            ));
            match answer {
                HookAnswer::Block { reason, .. } => {
                    self.write_notes(&state, &ran);
                    prompt = reason;
                }
                HookAnswer::Stop { message } => {
                    match after_stop(entry.as_ref(), message.as_deref()) {
                        AfterStop::Again => {}
                        AfterStop::Done(outcome) => return outcome,
                    }
                }
            }
        }
    }

    /// The first iteration's prompt: what the in-session loop shows the
    /// model at its start (settings and task, or the first story).
    fn first_prompt(&self) -> Option<String> {
        match ralph_core::state_file::read(&self.paths) {
            StateFile::Loop { state, .. } if state.session_id == self.setup.session => {
                let prd = self.prd(&state);
                Some(start::text::describe(
                    &state,
                    prd.as_ref(),
                    &self.paths.root,
                ))
            }
            _ => None,
        }
    }

    fn prd(&self, state: &LoopState) -> Option<ralph_core::prd::Prd> {
        state
            .prd_file
            .as_deref()
            .and_then(|f| ralph_core::prd::read(&self.paths.root, f).ok())
    }

    /// The PRD as the Stop hook judges it: a story whose check failed on
    /// the current tree does not pass, whatever the file says.
    fn judged_prd(&self, state: &LoopState) -> Option<ralph_core::prd::Prd> {
        let prd = self.prd(state)?;
        let log = ralph_core::verify::read_log(&self.paths.verify).unwrap_or_default();
        let judged = ralph_core::stop::completion::JudgedPrd::new(&prd, state, &log);
        Some(judged.prd.into_owned())
    }

    /// The story the loop feeds now, for the iteration's first line.
    fn story(&self, state: &LoopState) -> Option<String> {
        let prd = self.judged_prd(state)?;
        let (pass, total) = prd.progress();
        prd.next_runnable()
            .map(|s| format!("{} {} ({pass}/{total} pass)", s.id, s.title))
    }

    /// PRD progress, for the iteration's summary line.
    fn stories(&self, state: &LoopState) -> Option<String> {
        let (pass, total) = self.judged_prd(state)?.progress();
        Some(format!("{pass}/{total} stories pass"))
    }

    /// Run the iteration's client until it ran (not rate limited, not failed).
    fn attempts(
        &mut self,
        state: &LoopState,
        prompt: &str,
        out: &mut Out,
    ) -> Result<ClientRun, Halt> {
        let n = state.iteration;
        let (mut tries, mut failures, mut limited) = (0u32, 0u32, 0u32);
        let mut waited = Duration::ZERO;
        loop {
            tries += 1;
            let stem = if tries == 1 {
                format!("iter-{n}")
            } else {
                format!("iter-{n}.try{tries}")
            };
            let handoff_text = store::read_optional(&self.paths.root.join(HANDOFF_FILE))
                .ok()
                .flatten();
            let full = handoff::prompt(prompt, handoff_text.as_deref());
            let _ = std::fs::write(self.run_dir.join(format!("{stem}.prompt.md")), &full);
            let raw = self.run_dir.join(format!("{stem}.jsonl"));
            let ran = child::run(&self.setup, n, &full, &raw, out);
            if let Some(sig) = ran.interrupted {
                return Err(Halt::Signal(sig));
            }
            if ran.cancelled {
                return Err(Halt::Cancelled);
            }
            let pacing = self.cfg.pacing;
            let wait = match classify(&ran.end) {
                NextTry::Iteration => return Ok(ran),
                NextTry::RateLimited { message } => {
                    limited += 1;
                    let why = format!(
                        "rate limited or overloaded after the client's own retries: {message}"
                    );
                    (pacing.rate_limit_wait(limited), "rate_limited", why)
                }
                NextTry::UsageLimit { resets_at, message } => {
                    limited += 1;
                    let wait = pacing.usage_limit_wait(resets_at, clock::unix_now(), limited);
                    (wait, "usage_limit", format!("usage limit: {message}"))
                }
                NextTry::Failed { message } => {
                    failures += 1;
                    self.total.add(ran.tokens.totals());
                    self.failed(state, failures, &message, out)?;
                    self.sleep(pacing.failure_wait(failures))?;
                    continue;
                }
            };
            self.total.add(ran.tokens.totals());
            self.wait_out(state, wait, &mut waited, out)?;
        }
    }

    /// A client failure: said, logged, and the run ends at `--max-failures`.
    fn failed(
        &self,
        state: &LoopState,
        failures: u32,
        message: &str,
        out: &mut Out,
    ) -> Result<(), Halt> {
        let max = self.cfg.max_failures;
        let text = format!("the client failed ({failures}/{max} in a row): {message}");
        out.line(&display::note(self.setup.style, Tone::Bad, &text));
        loop_files::log(
            &self.paths,
            &self.setup.session,
            state.iteration,
            Action::Retry,
            "client_error",
            &text,
        );
        if failures >= max {
            return Err(Halt::Failed(
                "client_failed",
                format!("the client failed {failures} times in a row; the last time: {message}"),
            ));
        }
        Ok(())
    }

    /// Wait out a rate or usage limit, within `--max-wait` for waits in a row.
    fn wait_out(
        &self,
        state: &LoopState,
        (wait, reason, why): (Duration, &str, String),
        waited: &mut Duration,
        out: &mut Out,
    ) -> Result<(), Halt> {
        if *waited + wait > self.cfg.max_wait {
            return Err(Halt::Failed(
                "wait_exceeded",
                format!(
                    "{why}; after waiting {} the next wait ({}) would pass --max-wait {}",
                    human_duration(*waited),
                    human_duration(wait),
                    human_duration(self.cfg.max_wait)
                ),
            ));
        }
        let until = clock::rfc3339(clock::unix_now() + wait.as_secs());
        let text = format!(
            "{why}. Waiting {} (until {until}), then iteration {} runs again.",
            human_duration(wait),
            state.iteration
        );
        out.line(&display::note(self.setup.style, Tone::Warn, &text));
        loop_files::log(
            &self.paths,
            &self.setup.session,
            state.iteration,
            Action::Wait,
            reason,
            &text,
        );
        *waited += wait;
        self.sleep(wait)
    }

    /// Sleep, but wake for a signal or a cancelled loop.
    fn sleep(&self, d: Duration) -> Result<(), Halt> {
        let deadline = Instant::now() + d;
        loop {
            if let Some(sig) = signals::pending_signal() {
                return Err(Halt::Signal(sig));
            }
            if !loop_files::loop_is_ours(&self.paths, &self.setup.session) {
                return Err(Halt::Cancelled);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }

    /// The real Stop hook, fed what the client would have sent it.
    fn stop_hook(&self, state: &LoopState, ran: &ClientRun) -> Result<HookAnswer, Halt> {
        // A client stopped mid-turn leaves a transcript that may end in a
        // half-written turn or an unanswered queued message: not given.
        let transcript = ran
            .session_id
            .as_deref()
            .filter(|_| ran.end.stopped_by_runner.is_none())
            .and_then(loop_files::transcript_of);
        let input = serde_json::json!({
            "session_id": self.setup.session,
            "transcript_path": transcript.map(|p| p.display().to_string()).unwrap_or_default(),
            "cwd": self.paths.root.display().to_string(),
            "hook_event_name": "Stop",
            "stop_hook_active": state.iteration > 1,
            "last_assistant_message": ran.last_text,
            "background_tasks": [],
        });
        // The run notifies once, at its end (`finish`), not the hook: a pass
        // only this hook holds (`passes`), spent when it has answered.
        let run = Purpose::Run {
            session: self.setup.session.clone(),
        };
        let pass = Pass::issue(&self.paths, &run)
            .map_err(|e| Halt::Failed("hook_failed", format!("cannot run the Stop hook: {e}")))?;
        let mut command = Command::new(&self.hook_bin);
        command
            .current_dir(&self.paths.root)
            .env("CLAUDE_PROJECT_DIR", &self.paths.root)
            // `--review`: the hook's reviewers use the run's own client.
            .env("RALPH_CLAUDE", &self.setup.claude)
            .env(PASS_ENV, pass.token())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(|e| {
            Halt::Failed(
                "hook_failed",
                format!("cannot run {}: {e}", self.hook_bin.display()),
            )
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input.to_string().as_bytes());
        }
        let mut stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(s) = &mut stdout {
                let _ = s.read_to_string(&mut text);
            }
            text
        });
        loop {
            if let Some(sig) = signals::pending_signal() {
                signals::stop_group(&mut child, Duration::from_secs(1));
                return Err(Halt::Signal(sig));
            }
            if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(parse_hook_output(&reader.join().unwrap_or_default()))
    }

    /// After a blocked Stop: the runner's notes in the hand-off file, when
    /// there is a hand-off (the agent wrote one, or the iteration rotated).
    fn write_notes(&self, state: &LoopState, ran: &ClientRun) {
        let path = self.paths.root.join(HANDOFF_FILE);
        let existing = store::read_optional(&path).ok().flatten();
        if existing.is_none() && ran.rotated.is_none() {
            return;
        }
        let after = match ralph_core::state_file::read(&self.paths) {
            StateFile::Loop { state: s, .. } => s,
            _ => return,
        };
        let notes = RunnerNotes {
            run_id: self.run_id.clone(),
            iteration: state.iteration,
            last_commit: loop_files::last_commit(&self.paths.root),
            story: self.story(&after),
            last_check: self.last_check(),
            rotated: ran.rotated.clone(),
        };
        let text = handoff::with_runner_notes(existing.as_deref(), &notes);
        let _ = store::atomic_write(&path, text.as_bytes());
    }

    /// The latest check result, in one line.
    fn last_check(&self) -> Option<String> {
        let log =
            ralph_core::verify::VerifyLog::parse(&store::read_optional(&self.paths.verify).ok()??);
        let latest = log
            .r#loop
            .iter()
            .map(|r| ("loop".to_string(), r))
            .chain(log.stories.iter().map(|(id, r)| (format!("story {id}"), r)))
            .max_by(|a, b| a.1.time.cmp(&b.1.time))?;
        let (who, r) = latest;
        // The timeout the check ran under, for "timed out after N s".
        let timeout = match ralph_core::state_file::read(&self.paths) {
            StateFile::Loop { state, .. } => state.verify_timeout,
            _ => ralph_core::verify::DEFAULT_TIMEOUT_SECS,
        };
        Some(format!(
            "{who}: `{}` {} at {}",
            r.command,
            if r.passed() {
                "passed".to_string()
            } else {
                format!("FAILED ({})", r.status_text(timeout))
            },
            r.time
        ))
    }

    /// The run stopped before the loop decided: the state says why.
    fn halted(&self, halt: Halt, iteration: u64) -> RunEnd {
        let session = &self.setup.session;
        match halt {
            Halt::Signal(sig) => {
                let message = format!(
                    "🛑 ralph run interrupted ({}) at iteration {iteration}: the client was stopped and the loop cancelled.",
                    signals::signal_name(sig)
                );
                let _ = loop_files::end_loop(
                    &self.paths,
                    session,
                    Action::Cancel,
                    "interrupted",
                    &message,
                );
                RunEnd::Interrupted { message }
            }
            Halt::Cancelled => RunEnd::Cancelled {
                message: self.cancelled_message(iteration),
            },
            Halt::Failed(reason, why) => {
                let message = format!("⚠️ ralph run stopped at iteration {iteration}: {why}");
                let _ = loop_files::end_loop(&self.paths, session, Action::End, reason, &message);
                RunEnd::Failed { message }
            }
        }
    }

    fn cancelled_message(&self, iteration: u64) -> String {
        if let StateFile::Loop { state, .. } = ralph_core::state_file::read(&self.paths) {
            return format!(
                "🛑 Session {} took over this project's loop; this run stopped at iteration {iteration}.",
                state.session_id
            );
        }
        match loop_files::log_entry_since(&self.paths, 0, &self.setup.session) {
            Some(e) if e.decision == "cancel" => e.message.unwrap_or_else(|| {
                format!(
                    "🛑 The loop was cancelled (ralph cancel or /cancel-ralph) at iteration {}; the client was stopped.",
                    e.iteration
                )
            }),
            _ => format!(
                "🛑 The loop's state is gone (cancelled) at iteration {iteration}; the client was stopped."
            ),
        }
    }

    /// Say how the run ended, keep the outcome, notify, exit.
    fn finish(&self, outcome: &RunEnd, out: &mut Out) -> ExitCode {
        let style = self.setup.style;
        let tone = match outcome {
            RunEnd::Complete { .. } => Tone::Good,
            RunEnd::Ended { .. } | RunEnd::Cancelled { .. } | RunEnd::Paused { .. } => Tone::Warn,
            RunEnd::Failed { .. } | RunEnd::Interrupted { .. } => Tone::Bad,
        };
        out.line(&style.paint(tone, outcome.message()));
        if let RunEnd::Paused { .. } = outcome {
            out.line(&style.paint(tone, PAUSED_RUN));
        }
        let totals = format!(
            "ralph run {}: {} · {} · tokens {} in ({} cached), {} out · exit {}",
            self.run_id,
            ralph_core::fmt::plural(self.iterations, "iteration"),
            human_duration(self.started.elapsed()),
            human(self.total.input + self.total.cache_read + self.total.cache_creation),
            human(self.total.cache_read),
            human(self.total.output),
            outcome.exit_code()
        );
        out.line(&style.paint(Tone::Dim, &totals));
        let record = serde_json::json!({
            "run_id": self.run_id,
            "outcome": outcome.name(),
            "exit_code": outcome.exit_code(),
            "iterations": self.iterations,
            "message": outcome.message(),
            "elapsed_secs": self.started.elapsed().as_secs(),
            "tokens": {"input": self.total.input, "output": self.total.output,
                       "cache_read": self.total.cache_read, "cache_creation": self.total.cache_creation},
        });
        let _ = std::fs::write(
            self.run_dir.join("outcome.json"),
            serde_json::to_string_pretty(&record).unwrap_or_default(),
        );
        if let Some(cmd) = &self.notify {
            let env = notify_env(outcome, self.iterations, &self.run_id);
            if let Err(e) = ralph_core::notify::run(cmd, &env, &self.paths.root, NOTIFY_LIMIT) {
                out.line(&display::note(style, Tone::Warn, &e));
            }
        }
        ExitCode::from(outcome.exit_code())
    }
}
