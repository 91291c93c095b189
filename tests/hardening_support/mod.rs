//! Helpers shared by the `tests/hardening_*.rs` suites: a throw-away project,
//! running a hook binary with any stdin (closed, kept open, or huge) under a
//! safety timeout, and reading back the loop files.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const STOP: &str = env!("CARGO_BIN_EXE_ralph-stop-hook");
pub const SETUP: &str = env!("CARGO_BIN_EXE_ralph-setup");
pub const GUARD: &str = env!("CARGO_BIN_EXE_ralph-guard");

pub const STATE: &str = ".claude/ralph-loop.local.md";
pub const LOG: &str = ".claude/ralph-loop.log.jsonl";
pub const LOCK: &str = ".claude/ralph-loop.lock";
pub const SESSION: &str = "hardening-session-1";

/// No hook may run this long: a test that reaches it kills the hook and fails.
pub const SAFETY: Duration = Duration::from_secs(90);

/// A prompt with the characters that break naive quoting.
pub const PROMPT: &str = "Build the parser: say \"hi\", run `id` and $(touch pwned) $HOME;\n---\niteration: 99\n  keep going — ünïcödé ✓\n";

/// A throw-away project folder (a git repo), removed on drop.
pub struct Project {
    pub root: PathBuf,
}

impl Project {
    pub fn new(tag: &str) -> Project {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "ralph-hard-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".git")).expect("project dir");
        std::fs::create_dir_all(root.join(".claude")).expect(".claude dir");
        Project { root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, data: impl AsRef<[u8]>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, data).expect("write");
    }

    pub fn read(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(rel)).ok()
    }

    pub fn state(&self) -> Option<String> {
        std::fs::read_to_string(self.path(STATE)).ok()
    }

    /// Every line of the activity log, each parsed (a torn line fails the test).
    pub fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path(LOG))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("torn log line {l:?}: {e}")))
            .collect()
    }

    /// Names in `.claude/`.
    pub fn claude_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(".claude"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Files moved aside as corrupt, with their contents.
    pub fn corrupt_copies(&self) -> Vec<(String, Vec<u8>)> {
        self.claude_files()
            .into_iter()
            .filter(|n| n.starts_with("ralph-loop.local.md.corrupt-"))
            .map(|n| {
                let data = self.read(&format!(".claude/{n}")).expect("corrupt copy");
                (n, data)
            })
            .collect()
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A plain-mode loop owned by `SESSION`.
pub fn state_text(iteration: u64, max_iterations: u64) -> String {
    format!(
        "---\nactive: true\niteration: {iteration}\nsession_id: \"{SESSION}\"\nmax_iterations: {max_iterations}\ncompletion_promise: \"ALL DONE\"\nstarted_at: \"2026-11-30T00:00:00Z\"\n---\n\n{PROMPT}"
    )
}

/// A Stop hook input for `SESSION` in `root`.
pub fn stop_input(root: &Path, said: &str) -> Vec<u8> {
    serde_json::json!({
        "session_id": SESSION,
        "transcript_path": "",
        "cwd": root,
        "prompt_id": "p-1",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": true,
        "last_assistant_message": said,
    })
    .to_string()
    .into_bytes()
}

/// What a finished hook did.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    /// The hook's JSON output; None when it printed nothing. Panics on
    /// anything that is neither empty nor one JSON object.
    pub fn json(&self) -> Option<Value> {
        let t = self.stdout.trim();
        if t.is_empty() {
            return None;
        }
        let v: Value = serde_json::from_str(t)
            .unwrap_or_else(|e| panic!("hook output is not JSON ({e}): {t:?}"));
        assert!(v.is_object(), "hook output is not an object: {t}");
        Some(v)
    }

    pub fn is_block(&self) -> bool {
        self.json()
            .is_some_and(|v| v.get("decision").and_then(Value::as_str) == Some("block"))
    }

    pub fn system_message(&self) -> String {
        self.json()
            .and_then(|v| {
                v.get("systemMessage")
                    .and_then(Value::as_str)
                    .map(String::from)
            })
            .unwrap_or_default()
    }

    /// Exit 0 and valid-or-empty output: what every hook run must give.
    pub fn assert_fail_open(&self, what: &str) {
        assert_eq!(
            self.code,
            Some(0),
            "{what}: exit code; stderr: {}",
            self.stderr
        );
        let _ = self.json();
        assert!(
            !self.stderr.contains("panicked"),
            "{what}: panicked: {}",
            self.stderr
        );
    }
}

/// How the hook's stdin behaves.
pub enum Stdin<'a> {
    /// Write these bytes and close the pipe.
    Bytes(&'a [u8]),
    /// Write these bytes and keep the pipe open until the hook exits.
    KeepOpen(&'a [u8]),
}

pub fn command(bin: &str, project: &Project, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .current_dir(&project.root)
        .env("CLAUDE_PROJECT_DIR", &project.root)
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Start a hook and feed its stdin from a thread (the hook may stop reading
/// early; a broken pipe is fine).
pub fn spawn(
    mut cmd: Command,
    stdin: Stdin<'_>,
) -> (Child, std::thread::JoinHandle<Option<ChildStdin>>) {
    let mut child = cmd.spawn().expect("spawn hook");
    let mut pipe = child.stdin.take().expect("stdin");
    let (data, keep) = match stdin {
        Stdin::Bytes(d) => (d.to_vec(), false),
        Stdin::KeepOpen(d) => (d.to_vec(), true),
    };
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
        let _ = pipe.flush();
        keep.then_some(pipe)
    });
    (child, feeder)
}

/// Wait for a started hook (killing it at the safety bound) and collect its output.
pub fn finish(
    mut child: Child,
    feeder: std::thread::JoinHandle<Option<ChildStdin>>,
    started: Instant,
) -> Outcome {
    use std::io::Read;
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if started.elapsed() > SAFETY {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hook still running after {SAFETY:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    // Now the hook is gone: drop a pipe kept open.
    drop(feeder.join().expect("feeder"));
    let stdout = String::from_utf8_lossy(&out_t.join().expect("stdout reader")).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().expect("stderr reader")).into_owned();
    Outcome {
        code: status.code(),
        stdout,
        stderr,
        elapsed,
    }
}

pub fn run(cmd: Command, stdin: Stdin<'_>) -> Outcome {
    let started = Instant::now();
    let (child, feeder) = spawn(cmd, stdin);
    finish(child, feeder, started)
}

pub fn run_stop(project: &Project, stdin: &[u8]) -> Outcome {
    run(command(STOP, project, &[]), Stdin::Bytes(stdin))
}
