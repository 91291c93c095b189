//! The interactive client, driven as a person would: tmux runs it in a
//! terminal, `send-keys` types, `capture-pane` reads the screen.
//!
//! Each run gets its own tmux server (`-L`), so scenarios running at once
//! never see each other's windows. The first-run dialogs (onboarding, the API
//! key, trusting the folder, the bypass-permissions warning) are answered in
//! advance through the throw-away HOME's `.claude.json`; any dialog that still
//! shows up fails the run with the screen's text.

use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The API key the client is given: the first-run dialog approves keys by
/// their last 20 characters, so it must be at least that long.
pub(crate) const API_KEY: &str = "sk-ant-api03-ralph-e2e-not-a-real-key-0000";

/// Screens that mean the client is waiting on a question the test did not
/// expect: the run fails at once with the screen.
const UNEXPECTED: &[&str] = &[
    "Do you trust the files in this folder",
    "Select login method",
    "Detected a custom API key",
    "Bypass Permissions mode",
    "Choose the text style",
    "Unknown command",
];

/// One thing the person at the keyboard does.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Step {
    /// Type the text, then Enter.
    Type(String),
    /// Press one key (tmux key name: `Escape`, `Enter`, `C-c`).
    Key(String),
    /// Wait until the screen shows this text (whitespace-insensitive).
    WaitScreen(String),
    /// Wait until the activity log has an entry with these fields.
    WaitLog(std::collections::BTreeMap<String, Value>),
    /// Wait until the model has answered this many main requests.
    WaitReplies(usize),
    /// Wait until this project path exists.
    WaitFile(String),
}

/// A client running in its own tmux server.
pub(crate) struct Tui {
    socket: String,
    /// Every distinct screen seen since the start, oldest first: the client
    /// draws on the alternate screen, so there is no scroll-back to read later.
    film: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Tui {
    /// Start `program args` in a 160x120 terminal (tall, so that a burst of output stays on one screen), in `cwd`, with only `env`.
    pub(crate) fn start(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<Tui, String> {
        let socket = format!("ralph-e2e-{}-{name}", std::process::id());
        let tui = Tui {
            socket,
            film: Arc::default(),
            stop: Arc::default(),
        };
        let mut cmd = tui.tmux();
        cmd.args([
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            "150",
            "-y",
            "50",
            "-c",
        ])
        .arg(cwd)
        .arg("env")
        .arg("-i");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg("TERM=xterm-256color").arg(program).args(args);
        let out = cmd
            .output()
            .map_err(|e| format!("tmux: {e} (is tmux installed?)"))?;
        if !out.status.success() {
            return Err(format!(
                "tmux new-session failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        tui.record();
        Ok(tui)
    }

    fn tmux(&self) -> Command {
        tmux(&self.socket)
    }

    /// Film the screen every 50 ms until the client is ended: what a person
    /// watching the terminal saw, including what has scrolled away since.
    fn record(&self) {
        let (socket, film, stop) = (
            self.socket.clone(),
            Arc::clone(&self.film),
            Arc::clone(&self.stop),
        );
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let screen = capture(&socket);
                let mut film = film.lock().unwrap_or_else(|p| p.into_inner());
                if film.last() != Some(&screen) {
                    film.push(screen);
                }
                drop(film);
                thread::sleep(Duration::from_millis(50));
            }
        });
    }

    /// The screen now.
    pub(crate) fn screen(&self) -> String {
        capture(&self.socket)
    }

    /// Every distinct screen seen so far, separated by a line of `=`.
    pub(crate) fn everything_shown(&self) -> String {
        let film = self.film.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = film.join("\n==========\n");
        all.push('\n');
        all.push_str(&self.screen());
        all
    }

    /// Wait until `ready` holds, checking every 100 ms; the error carries the screen.
    pub(crate) fn wait(
        &self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut(&str) -> bool,
    ) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return Ok(());
            }
            if let Some(bad) = UNEXPECTED.iter().find(|u| screen.contains(*u)) {
                return Err(format!(
                    "unexpected on screen ({bad:?}) while waiting for {what}:\n{}",
                    tail(&screen)
                ));
            }
            if t0.elapsed() > timeout {
                return Err(format!(
                    "waited {}s for {what}; the screen:\n{}",
                    timeout.as_secs(),
                    tail(&screen)
                ));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Wait for the input prompt of a started client.
    pub(crate) fn wait_ready(&self) -> Result<(), String> {
        self.wait("the client's input prompt", Duration::from_secs(60), |s| {
            s.contains('❯') && s.contains("bypass permissions")
        })
    }

    /// Type `text` as a person would, then Enter. The client reads keys that
    /// arrive all at once as a paste (an Enter in a paste is a newline), so
    /// Enter comes only once the text is on the screen and a moment later.
    pub(crate) fn type_line(&self, text: &str) -> Result<(), String> {
        let status = self
            .tmux()
            .args(["send-keys", "-t", "main", "-l", text])
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("tmux send-keys failed".into());
        }
        let end: String = squash(text)
            .chars()
            .rev()
            .take(24)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        self.wait(
            &format!("the typed text {end:?}"),
            Duration::from_secs(10),
            |s| squash(s).contains(&end),
        )?;
        thread::sleep(Duration::from_millis(400));
        self.key("Enter")
    }

    pub(crate) fn key(&self, key: &str) -> Result<(), String> {
        let status = self
            .tmux()
            .args(["send-keys", "-t", "main", key])
            .status()
            .map_err(|e| e.to_string())?;
        status
            .success()
            .then_some(())
            .ok_or_else(|| format!("tmux send-keys {key} failed"))
    }
}

fn tmux(socket: &str) -> Command {
    let mut cmd = Command::new("tmux");
    cmd.arg("-L").arg(socket).stdin(Stdio::null());
    cmd
}

/// The visible screen, wrapped lines joined.
fn capture(socket: &str) -> String {
    tmux(socket)
        .args(["capture-pane", "-p", "-J", "-t", "main"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self
            .tmux()
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}

/// Text with every run of whitespace made one space: the client wraps long
/// messages itself, indenting the continuation lines.
pub(crate) fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last 60 non-empty lines of a screen, for failure messages.
pub(crate) fn tail(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// The throw-away HOME's `.claude.json`: every first-run question answered.
pub(crate) fn first_run_answers(project: &Path) -> String {
    let key_tail: String = API_KEY.chars().skip(API_KEY.len() - 20).collect();
    serde_json::json!({
        "hasCompletedOnboarding": true,
        "bypassPermissionsModeAccepted": true,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
        "projects": {project.to_string_lossy(): {"hasTrustDialogAccepted": true}},
    })
    .to_string()
}
