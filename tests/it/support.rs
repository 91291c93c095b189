//! What every integration test shares: the binaries, a throw-away project
//! and its loop files, and running a hook with any stdin (closed, kept open,
//! or huge) under a safety timeout.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub(crate) use ralph_core::paths::{
    LAST_INJECTED_FILE, LOCK_FILE, LOG_FILE, LoopPaths, STATE_FILE,
};

pub(crate) const STOP: &str = env!("CARGO_BIN_EXE_ralph-stop-hook");
pub(crate) const SETUP: &str = env!("CARGO_BIN_EXE_ralph-setup");
pub(crate) const RALPH: &str = env!("CARGO_BIN_EXE_ralph");
pub(crate) const GUARD: &str = env!("CARGO_BIN_EXE_ralph-guard");

/// The session of the hardening suites' loops.
pub(crate) const SESSION: &str = "hardening-session-1";

/// No hook may run this long: a test that reaches it kills the hook and fails.
pub(crate) const SAFETY: Duration = Duration::from_secs(90);

/// A prompt with the characters that break naive quoting.
pub(crate) const PROMPT: &str = "Build the parser: say \"hi\", run `id` and $(touch pwned) $HOME;\n---\niteration: 99\n  keep going — ünïcödé ✓\n";

/// A throw-away project folder (a git root), removed on drop.
pub(crate) struct Project {
    pub root: PathBuf,
    /// The hook's `cwd`: the root unless a test moves it.
    pub cwd: PathBuf,
}

impl Project {
    /// A git root (an empty `.git`) and nothing else.
    pub(crate) fn new(tag: &str) -> Project {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "ralph-it-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".git")).expect("project dir");
        Project {
            cwd: root.clone(),
            root,
        }
    }

    /// A git root with a `.claude/` folder, as a project that has Claude
    /// Code settings.
    pub(crate) fn with_claude_dir(tag: &str) -> Project {
        let p = Project::new(tag);
        std::fs::create_dir_all(p.path(".claude")).expect(".claude dir");
        p
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// ralph's data folder for this project (`RALPH_DATA_DIR` of every
    /// command the tests run): beside the project, outside its tree.
    pub(crate) fn data_dir(&self) -> PathBuf {
        data_dir_of(&self.root)
    }

    /// Where ralph keeps this project's loop: the authoritative state, the
    /// lock, the check results.
    pub(crate) fn loop_paths(&self) -> LoopPaths {
        LoopPaths::in_data_dir(&self.data_dir(), &self.root)
    }

    /// The session's transcript, where the client keeps it: outside the
    /// project (a file the Stop writes to the project would be work).
    pub(crate) fn transcript(&self) -> PathBuf {
        let dir = PathBuf::from(format!("{}-client", self.root.display()));
        std::fs::create_dir_all(&dir).expect("the client's folder");
        dir.join("session.jsonl")
    }

    /// The session's transcript as a test sets it (a turn with tools, a
    /// transcript that lags).
    pub(crate) fn write_transcript(&self, data: impl AsRef<[u8]>) {
        std::fs::write(self.transcript(), data).expect("the transcript");
    }

    pub(crate) fn write(&self, rel: &str, data: impl AsRef<[u8]>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, data).expect("write");
    }

    /// A file's text; None when it is missing (or not UTF-8).
    pub(crate) fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    pub(crate) fn read_bytes(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(rel)).ok()
    }

    /// The loop's state: the authoritative copy in ralph's data folder, else
    /// the project's file (not adopted yet).
    /// The loop's state (without the seal line ralph keeps inside it).
    pub(crate) fn state(&self) -> Option<String> {
        std::fs::read_to_string(self.loop_paths().state)
            .ok()
            .map(|t| ralph_core::seal::split_inline(&t).0.to_string())
            .or_else(|| self.read(STATE_FILE))
    }

    /// The project's copy of the state (`.claude/ralph-loop.local.md`).
    pub(crate) fn mirror(&self) -> Option<String> {
        self.read(STATE_FILE)
    }

    /// Every line of the activity log, each parsed (a torn line fails the test).
    pub(crate) fn log(&self) -> Vec<Value> {
        self.read(LOG_FILE)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("torn log line {l:?}: {e}")))
            .collect()
    }

    /// Names in the folder `rel`, sorted.
    pub(crate) fn files_in(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(rel))
            .map(|d| {
                d.map(|e| {
                    e.expect("dir entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Names in `.claude/`.
    pub(crate) fn claude_files(&self) -> Vec<String> {
        self.files_in(".claude")
    }

    /// Temp files of atomic writes left in `.claude/` (a write killed
    /// between creating its temp file and renaming it).
    pub(crate) fn temp_files(&self) -> Vec<String> {
        self.claude_files()
            .into_iter()
            .filter(|n| Path::new(n).extension().is_some_and(|e| e == "tmp"))
            .collect()
    }

    /// Files moved aside as corrupt, with their contents.
    pub(crate) fn corrupt_copies(&self) -> Vec<(String, Vec<u8>)> {
        self.claude_files()
            .into_iter()
            .filter(|n| n.starts_with("ralph-loop.local.md.corrupt-"))
            .map(|n| {
                let data = self
                    .read_bytes(&format!(".claude/{n}"))
                    .expect("corrupt copy");
                (n, data)
            })
            .collect()
    }

    /// Write a state file in the official plugin's layout plus extra lines.
    pub(crate) fn loop_state(
        &self,
        session: &str,
        iteration: u64,
        max: u64,
        promise: Option<&str>,
        extra: &str,
        prompt: &str,
    ) {
        let promise = promise
            .map(|p| format!("\"{p}\""))
            .unwrap_or_else(|| "null".into());
        self.write(
            STATE_FILE,
            format!(
                "---\nactive: true\niteration: {iteration}\nsession_id: {session}\nmax_iterations: {max}\ncompletion_promise: {promise}\nstarted_at: \"2026-11-29T00:00:00Z\"\n{extra}---\n\n{prompt}"
            ),
        );
    }

    /// Run the Stop hook as session `session`; returns the parsed output (None if empty).
    /// The Stop the client sends at the end of `session`'s turn, once it
    /// has written the turn (see [`client_writes_turn`]).
    pub(crate) fn stop(&self, session: &str, last_message: Option<&str>) -> Option<Value> {
        let transcript = self.transcript();
        if let Some(said) = last_message {
            client_writes_turn(&transcript, said);
        }
        let mut input = serde_json::json!({
            "session_id": session,
            "transcript_path": transcript,
            "cwd": self.cwd,
            "hook_event_name": "Stop",
            "stop_hook_active": false,
        });
        if let Some(m) = last_message {
            input["last_assistant_message"] = Value::String(m.into());
        }
        run_json(STOP, &[], &self.root, &input.to_string())
    }

    /// `ralph-setup hook-prompt` with the raw prompt text.
    pub(crate) fn prompt(&self, session: &str, prompt: &str) -> Option<Value> {
        let input = serde_json::json!({
            "session_id": session, "cwd": self.cwd, "hook_event_name": "UserPromptSubmit", "prompt": prompt,
        });
        run_json(SETUP, &["hook-prompt"], &self.root, &input.to_string())
    }

    /// `ralph-setup ARGS` in the project; (exit code, stdout).
    pub(crate) fn setup(&self, args: &[&str]) -> (i32, String) {
        self.run_in(SETUP, args)
    }

    /// `ralph ARGS` typed in the project's terminal; (exit code, stdout then
    /// stderr: its errors are on stderr alone).
    pub(crate) fn ralph(&self, args: &[&str]) -> (i32, String) {
        self.run_in(RALPH, args)
    }

    fn run_in(&self, program: &str, args: &[&str]) -> (i32, String) {
        let out = Command::new(program)
            .args(args)
            .current_dir(&self.root)
            .env("CLAUDE_PROJECT_DIR", &self.root)
            .env("RALPH_DATA_DIR", self.data_dir())
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }

    /// The guard let `session` call `tool` this turn: the line it appends to
    /// the turn's tool record (see `ralph_core::turn_tools`).
    pub(crate) fn guard_saw(&self, session: &str, tool: &str) {
        use std::io::Write as _;
        let record = self.loop_paths().turn_tools;
        std::fs::create_dir_all(record.parent().expect("loop dir")).expect("loop dir");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(record)
            .expect("turn tools record");
        writeln!(f, "{session}\t{tool}").expect("append");
    }

    /// Make the project a real git repository (for fingerprints).
    pub(crate) fn git_init(&self) {
        let _ = std::fs::remove_dir_all(self.path(".git"));
        let ok = Command::new("git")
            .args(["init", "-q", "--initial-branch=master", "."])
            .current_dir(&self.root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init");
    }
}

/// The data folder the tests give the project at `root`.
pub(crate) fn data_dir_of(root: &Path) -> PathBuf {
    PathBuf::from(format!("{}-data", root.display()))
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
        let _ = std::fs::remove_dir_all(self.data_dir());
        let _ = std::fs::remove_dir_all(format!("{}-client", self.root.display()));
    }
}

// ------------------------------------------------------ hooks as JSON ---

/// Run `bin args` with `stdin`, CLAUDE_PROJECT_DIR = `root`; assert exit 0 and
/// parse stdout as JSON (None when empty).
pub(crate) fn run_json(bin: &str, args: &[&str], root: &Path, stdin: &str) -> Option<Value> {
    let (code, stdout) = run_raw(bin, args, root, stdin.as_bytes());
    assert_eq!(code, 0, "{bin} exited {code}: {stdout}");
    let t = stdout.trim();
    (!t.is_empty())
        .then(|| serde_json::from_str(t).unwrap_or_else(|e| panic!("not JSON ({e}): {t}")))
}

pub(crate) fn run_raw(bin: &str, args: &[&str], root: &Path, stdin: &[u8]) -> (i32, String) {
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        .env("RALPH_DATA_DIR", data_dir_of(root))
        // The feed's form follows the client named here (a test run inside
        // Claude Code inherits one): unnamed, every feed is a block.
        .env_remove("AI_AGENT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hook may exit without reading its input (the no-loop fast path does):
    // a broken pipe here is normal, as it is for Claude Code.
    match child.stdin.take().unwrap().write_all(stdin) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The `reason` of a block, panicking on anything else.
pub(crate) fn reason(out: Option<&Value>) -> String {
    let v = out.expect("expected a block, got no output");
    assert_eq!(v["decision"], "block", "{v}");
    v["reason"].as_str().unwrap().to_string()
}

/// The `systemMessage` of an output.
pub(crate) fn message(out: Option<&Value>) -> String {
    out.expect("expected output")["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn is_block(out: Option<&Value>) -> bool {
    out.is_some_and(|v| v["decision"] == "block")
}

// ------------------------------------------- hooks under a safety bound ---

/// What the client writes to a session's transcript at the end of a turn
/// whose last words are `said`, before the Stop hook reads it (ralph's Stop
/// waits for that: `ralph_core::transcript::written`). A new turn (the Stop's
/// feed, then the words), unless a test wrote the transcript since: then
/// nothing when it ends with those words, else the words closing the
/// test's turn.
pub(crate) fn client_writes_turn(transcript: &Path, said: &str) {
    static TURNS: AtomicUsize = AtomicUsize::new(0);
    let text = std::fs::read_to_string(transcript).unwrap_or_default();
    // The length this function left it at.
    let mark = transcript.with_extension("client-wrote");
    let ours = std::fs::read_to_string(&mark).ok() == Some(text.len().to_string());
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let words = |v: &Value| -> Option<String> {
        (v["type"] == "assistant").then_some(())?;
        let blocks = v["message"]["content"].as_array()?;
        let texts: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    };
    let newest = lines.iter().rev().find_map(words);
    if !ours && newest.as_deref().map(str::trim) == Some(said.trim()) {
        return;
    }
    let n = TURNS.fetch_add(1, Ordering::Relaxed);
    let id = format!("{}-{n}", std::process::id());
    let mut add = String::new();
    if ours || lines.last().is_none_or(|l| words(l).is_some()) {
        let feed = serde_json::json!({"type": "user", "message": {"role": "user",
            "content": format!("Stop hook feedback:\nturn {id}")}});
        add.push_str(&format!("{feed}\n"));
    }
    let line = serde_json::json!({"type": "assistant", "uuid": format!("u-{id}"),
        "message": {"id": format!("m-{id}"), "role": "assistant",
            "content": [{"type": "text", "text": said}]}});
    add.push_str(&format!("{line}\n"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(transcript)
        .unwrap_or_else(|e| panic!("{}: {e}", transcript.display()));
    file.write_all(add.as_bytes()).unwrap();
    std::fs::write(mark, (text.len() + add.len()).to_string()).unwrap();
}

/// A plain-mode loop owned by `SESSION`.
pub(crate) fn state_text(iteration: u64, max_iterations: u64) -> String {
    format!(
        "---\nactive: true\niteration: {iteration}\nsession_id: \"{SESSION}\"\nmax_iterations: {max_iterations}\ncompletion_promise: \"ALL DONE\"\nstarted_at: \"2026-11-30T00:00:00Z\"\n---\n\n{PROMPT}"
    )
}

/// A Stop hook input for `SESSION` in `root`. Its transcript cannot be read
/// (the path is the project's folder: nothing will come, so nothing is
/// waited for), so nothing tells one turn from the next and every such Stop
/// counts as a new turn (see `ralph_core::stop::gather::turn_key`).
pub(crate) fn stop_input(root: &Path, said: &str) -> Vec<u8> {
    serde_json::json!({
        "session_id": SESSION,
        "transcript_path": root,
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

/// A PreToolUse hook input for `SESSION` in `root`: Bash running `command_line`.
pub(crate) fn bash_input(root: &Path, command_line: &str) -> Vec<u8> {
    serde_json::json!({"session_id": SESSION, "cwd": root, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command_line, "description": "x"}})
    .to_string()
    .into_bytes()
}

/// A UserPromptSubmit hook input for `SESSION` in `root`.
pub(crate) fn prompt_input(root: &Path, prompt: &str) -> Vec<u8> {
    serde_json::json!({"session_id": SESSION, "cwd": root,
        "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    .to_string()
    .into_bytes()
}

/// What a finished hook did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    /// The hook's JSON output; None when it printed nothing. Panics on
    /// anything that is neither empty nor one JSON object.
    pub(crate) fn json(&self) -> Option<Value> {
        let t = self.stdout.trim();
        if t.is_empty() {
            return None;
        }
        let v: Value = serde_json::from_str(t)
            .unwrap_or_else(|e| panic!("hook output is not JSON ({e}): {t:?}"));
        assert!(v.is_object(), "hook output is not an object: {t}");
        Some(v)
    }

    pub(crate) fn is_block(&self) -> bool {
        self.json()
            .is_some_and(|v| v.get("decision").and_then(Value::as_str) == Some("block"))
    }

    /// The guard denied the tool call.
    pub(crate) fn is_denied(&self) -> bool {
        self.json()
            .is_some_and(|v| v["hookSpecificOutput"]["permissionDecision"] == "deny")
    }

    pub(crate) fn system_message(&self) -> String {
        self.json()
            .and_then(|v| {
                v.get("systemMessage")
                    .and_then(Value::as_str)
                    .map(String::from)
            })
            .unwrap_or_default()
    }

    /// Exit 0 and valid-or-empty output: what every hook run must give.
    pub(crate) fn assert_fail_open(&self, what: &str) {
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
pub(crate) enum Stdin<'a> {
    /// Write these bytes and close the pipe.
    Bytes(&'a [u8]),
    /// Write these bytes and keep the pipe open until the hook exits.
    KeepOpen(&'a [u8]),
}

pub(crate) fn command(bin: &str, project: &Project, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .current_dir(&project.root)
        .env("CLAUDE_PROJECT_DIR", &project.root)
        .env("RALPH_DATA_DIR", project.data_dir())
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("AI_AGENT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Start a hook and feed its stdin from a thread (the hook may stop reading
/// early; a broken pipe is fine).
pub(crate) fn spawn(
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
pub(crate) fn finish(
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

pub(crate) fn run(cmd: Command, stdin: Stdin<'_>) -> Outcome {
    let started = Instant::now();
    let (child, feeder) = spawn(cmd, stdin);
    finish(child, feeder, started)
}

pub(crate) fn run_stop(project: &Project, stdin: &[u8]) -> Outcome {
    run(command(STOP, project, &[]), Stdin::Bytes(stdin))
}

/// Run a hook for at most `secs`; true when it exited by itself (else it
/// is killed), with what it did.
pub(crate) fn exits_within(mut cmd: Command, stdin: Stdin<'_>, secs: u64) -> (bool, Outcome) {
    cmd.stdin(Stdio::piped());
    let started = Instant::now();
    let (mut child, feeder) = spawn(cmd, stdin);
    let mut exited = false;
    while started.elapsed() < Duration::from_secs(secs) {
        if child.try_wait().expect("wait").is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !exited {
        let _ = child.kill();
    }
    (exited, finish(child, feeder, started))
}

/// `git ARGS` in `dir` with a fixed identity (tests make commits in fresh
/// repositories); its stdout, or the test fails with git's stderr.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    run_git(Command::new("git"), dir, args)
}

/// [`git`] with `home` as HOME (its own global configuration).
pub(crate) fn git_at_home(dir: &Path, home: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    run_git(cmd, dir, args)
}

fn run_git(mut cmd: Command, dir: &Path, args: &[&str]) -> String {
    let out = cmd
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@x")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@x")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The guard's refusal reason; the test fails when the call was allowed.
pub(crate) fn denied(out: Option<Value>) -> String {
    let o = out.expect("a decision");
    assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "deny", "{o}");
    o["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The guard let the call through.
pub(crate) fn allowed(out: Option<Value>) -> bool {
    out.is_none_or(|o| o["hookSpecificOutput"]["permissionDecision"] != "deny")
}
