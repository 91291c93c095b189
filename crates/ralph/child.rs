//! One client run: `claude -p` in its own process group, the prompt as a
//! stream-json user message on stdin, its stream read line by line (each
//! line kept in the run's folder, printed as progress, counted), while the
//! runner watches for signals, a cancelled loop, the iteration timeout and
//! the rotation thresholds.

use crate::terminal::Out;
use crate::{loop_files, signals};
use ralph_core::activity::Action;
use ralph_core::passes::{PASS_ENV, Pass, Purpose};
use ralph_core::paths::LoopPaths;
use ralph_core::run::display::{self, Style, Tone};
use ralph_core::run::events::{Event, parse_line};
use ralph_core::run::failure::{ChildEnd, StopCause};
use ralph_core::run::rotation::{self, Rotation, Thresholds};
use ralph_core::run::tokens::{IterationTokens, human};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the loop's state file is looked at while the client runs.
const STATE_POLL: Duration = Duration::from_millis(250);
/// How long a stopped client gets between TERM and KILL.
const GRACE: Duration = Duration::from_secs(3);
/// How long a client may take to exit after its stream ended.
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// What stays the same for every client run of a `ralph run`.
pub(crate) struct RunSetup {
    pub claude: String,
    pub plugin_root: PathBuf,
    pub client_args: Vec<String>,
    pub paths: LoopPaths,
    pub session: String,
    pub thresholds: Thresholds,
    pub timeout: Option<Duration>,
    pub style: Style,
    /// `RALPH_BIN_DIR` for the client's hooks, when the runner knows it.
    pub bin_dir: Option<PathBuf>,
}

/// How a client run went.
#[derive(Default)]
pub(crate) struct ClientRun {
    pub end: ChildEnd,
    pub tokens: IterationTokens,
    /// The client's session id (from its `init` line).
    pub session_id: Option<String>,
    /// The agent's final words (the last successful result, else its last text).
    pub last_text: Option<String>,
    /// A signal made the runner stop it.
    pub interrupted: Option<i32>,
    /// The loop was cancelled (or replaced) while it ran.
    pub cancelled: bool,
    /// Why the iteration was rotated, when it was.
    pub rotated: Option<String>,
}

/// Run the client once on `prompt` for loop iteration `iteration`; `raw`
/// receives its stream.
pub(crate) fn run(
    setup: &RunSetup,
    iteration: u64,
    prompt: &str,
    raw: &std::path::Path,
    out: &mut Out,
) -> ClientRun {
    let mut ran = ClientRun::default();
    // The client's hooks know the run by a pass only this client holds
    // (`passes`), spent when this function returns.
    let run = Purpose::Run {
        session: setup.session.clone(),
    };
    let spawned = Pass::issue(&setup.paths, &run)
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|pass| spawn(setup, pass.token()).map(|child| (child, pass)));
    let (mut child, _pass) = match spawned {
        Ok(c) => c,
        Err(e) => {
            ran.end.exit_code = Some(127);
            ran.end.stderr_tail = format!("cannot start `{}`: {e}", setup.claude);
            return ran;
        }
    };
    let mut stdin = child.stdin.take();
    let line = rotation::user_message_line(prompt) + "\n";
    if let Some(s) = &mut stdin
        && s.write_all(line.as_bytes())
            .and_then(|()| s.flush())
            .is_err()
    {
        stdin = None;
    }
    let lines = read_lines(child.stdout.take(), raw);
    let stderr = keep_stderr(child.stderr.take(), raw.with_extension("stderr"));
    let mut watch = Watch {
        setup,
        stdin,
        iteration,
        asked: false,
        started: Instant::now(),
        last_poll: Instant::now(),
    };
    let stop = watch.follow(&lines, &mut ran, out);
    match stop {
        Some(_) => signals::stop_group(&mut child, GRACE),
        None => wait_exit(&mut child),
    }
    if let Ok(Some(status)) = child.try_wait() {
        ran.end.exit_code = status.code();
        #[cfg(unix)]
        {
            ran.end.signal = std::os::unix::process::ExitStatusExt::signal(&status);
        }
    }
    ran.end.stderr_tail = stderr.join().unwrap_or_default();
    ran
}

fn spawn(setup: &RunSetup, pass: &str) -> std::io::Result<Child> {
    let mut cmd = Command::new(&setup.claude);
    cmd.args(["-p", "--input-format", "stream-json"])
        .args(["--output-format", "stream-json", "--verbose"])
        .arg("--plugin-dir")
        .arg(&setup.plugin_root)
        .args(&setup.client_args)
        .current_dir(&setup.paths.root)
        // The run notifies once, at its end; the session's hooks do not.
        // --parallel: the workers' hooks merge for the run's loop.
        .env(PASS_ENV, pass)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own group: a Ctrl-C at the terminal reaches the runner only,
    // and stopping the client stops the tools it runs too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    if std::env::var_os("RALPH_BIN_DIR").is_none()
        && let Some(dir) = &setup.bin_dir
    {
        cmd.env("RALPH_BIN_DIR", dir);
    }
    cmd.spawn()
}

/// The stream's lines, each also written to `raw`, through a channel.
fn read_lines(
    stdout: Option<std::process::ChildStdout>,
    raw: &std::path::Path,
) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let mut file = File::create(raw).ok();
    if let Some(stdout) = stdout {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(f) = &mut file {
                    let _ = writeln!(f, "{line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// The client's stderr, kept whole in a file; its last 8 KB returned.
fn keep_stderr(stderr: Option<std::process::ChildStderr>, path: PathBuf) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        if let Some(mut s) = stderr {
            let _ = s.read_to_end(&mut all);
        }
        if !all.is_empty() {
            let _ = std::fs::write(&path, &all);
        }
        let tail = &all[all.len().saturating_sub(8192)..];
        String::from_utf8_lossy(tail).into_owned()
    })
}

/// After the stream ended, the client exits by itself; a stuck one is stopped.
fn wait_exit(child: &mut Child) {
    let deadline = Instant::now() + EXIT_WAIT;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signals::stop_group(child, GRACE);
}

struct Watch<'a> {
    setup: &'a RunSetup,
    stdin: Option<ChildStdin>,
    iteration: u64,
    asked: bool,
    started: Instant,
    last_poll: Instant,
}

/// Why the runner stopped the client.
enum Stop {
    Signal,
    Cancelled,
    Cause,
}

impl Watch<'_> {
    /// Follow the stream to its end, or until the client must be stopped.
    fn follow(
        &mut self,
        lines: &Receiver<String>,
        ran: &mut ClientRun,
        out: &mut Out,
    ) -> Option<Stop> {
        loop {
            match lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    let events = parse_line(&line);
                    if events.is_empty() && !line.trim_start().starts_with('{') {
                        ran.end.stdout_other.push_str(&line);
                        ran.end.stdout_other.push('\n');
                    }
                    // Every event of the line first (a line carries a
                    // message's usage and its text), then a stop, if any.
                    let mut stop = None;
                    for event in events {
                        stop = stop.or(self.on_event(&event, ran, out));
                    }
                    if stop.is_some() {
                        return stop;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
            if let Some(stop) = self.check(ran, out) {
                return Some(stop);
            }
        }
    }

    /// Signals, a cancelled loop, the timeout.
    fn check(&mut self, ran: &mut ClientRun, out: &mut Out) -> Option<Stop> {
        for note in signals::take_ignored() {
            out.line(&display::note(self.setup.style, Tone::Warn, &note));
            loop_files::log(
                &self.setup.paths,
                &self.setup.session,
                self.iteration,
                Action::Tamper,
                "signal_ignored",
                &note,
            );
        }
        if let Some(sig) = signals::pending_signal() {
            ran.interrupted = Some(sig);
            return Some(Stop::Signal);
        }
        if self.last_poll.elapsed() >= STATE_POLL {
            self.last_poll = Instant::now();
            if !loop_files::loop_is_ours(&self.setup.paths, &self.setup.session) {
                ran.cancelled = true;
                return Some(Stop::Cancelled);
            }
        }
        if let Some(limit) = self.setup.timeout
            && self.started.elapsed() >= limit
        {
            let why = format!(
                "the iteration ran longer than --iteration-timeout ({}); the client was stopped",
                ralph_core::run::units::human_duration(limit)
            );
            out.line(&display::note(self.setup.style, Tone::Warn, &why));
            ran.end.stopped_by_runner = Some(StopCause::Timeout);
            return Some(Stop::Cause);
        }
        None
    }

    fn on_event(&mut self, event: &Event, ran: &mut ClientRun, out: &mut Out) -> Option<Stop> {
        let style = self.setup.style;
        if let Some(line) = display::event_line(style, event) {
            out.line(&line);
        }
        match event {
            Event::Init { session_id } => ran.session_id = Some(session_id.clone()),
            Event::Text { text, .. } => ran.last_text = Some(text.clone()),
            Event::ApiRetry { status, .. } => {
                // The client waits and retries by itself; the log says so.
                let reason = match status {
                    Some(429) => "rate_limited",
                    Some(529) => "overloaded",
                    _ => "api_error",
                };
                let said = display::event_line(Style { color: false }, event).unwrap_or_default();
                let said = said.trim_start().trim_start_matches("wait › ");
                loop_files::log(
                    &self.setup.paths,
                    &self.setup.session,
                    self.iteration,
                    Action::Wait,
                    reason,
                    &format!("ralph run: {said}"),
                );
            }
            Event::RateLimit { status, resets_at } => {
                ran.end.rate_limit = Some((status.clone(), *resets_at));
            }
            Event::Result(r) => {
                ran.tokens.on_result(r.usage);
                if !r.is_error {
                    ran.end.any_success = true;
                    if let Some(t) = r.text.as_ref().filter(|t| !t.trim().is_empty()) {
                        ran.last_text = Some(t.clone());
                    }
                }
                ran.end.result = Some(r.clone());
                // Closing stdin lets the client exit once its queue is empty.
                self.stdin = None;
            }
            Event::Usage { message_id, usage } => {
                let context = ran.tokens.on_usage(message_id, *usage)?;
                return self.rotate(context, ran, out);
            }
            _ => {}
        }
        None
    }

    fn rotate(&mut self, context: u64, ran: &mut ClientRun, out: &mut Out) -> Option<Stop> {
        let t = self.setup.thresholds;
        match rotation::check(t, context, self.asked) {
            Rotation::Nothing => None,
            Rotation::AskHandoff => {
                self.asked = true;
                let ask =
                    rotation::user_message_line(&rotation::handoff_request(context, t)) + "\n";
                let sent = self.stdin.take().is_some_and(|mut s| {
                    s.write_all(ask.as_bytes()).and_then(|()| s.flush()).is_ok()
                });
                let why = format!(
                    "context {} passed --rotate-at {}: {}",
                    human(context),
                    human(t.soft),
                    if sent {
                        "the agent is asked to write its hand-off and end its turn"
                    } else {
                        "the turn had already ended"
                    }
                );
                out.line(&display::note(self.setup.style, Tone::Warn, &why));
                ran.rotated = Some(format!("asked for a hand-off at {} tokens", human(context)));
                None
            }
            Rotation::Stop => {
                let why = format!(
                    "context {} passed --rotate-hard {}: the client is stopped",
                    human(context),
                    human(t.hard)
                );
                out.line(&display::note(self.setup.style, Tone::Warn, &why));
                ran.rotated = Some(format!("stopped at {} tokens", human(context)));
                ran.end.stopped_by_runner = Some(StopCause::Rotation);
                Some(Stop::Cause)
            }
        }
    }
}
