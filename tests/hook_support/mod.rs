//! Shared helpers for tests that drive the real binaries with JSON on stdin.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const STOP: &str = env!("CARGO_BIN_EXE_ralph-stop-hook");
pub const SETUP: &str = env!("CARGO_BIN_EXE_ralph-setup");

/// A throw-away project folder (a git repo), removed on drop.
pub struct Project {
    pub root: PathBuf,
}

impl Project {
    pub fn new(tag: &str) -> Project {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "ralph-it-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join(".git")).unwrap();
        Project { root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    pub fn state(&self) -> Option<String> {
        self.read(".claude/ralph-loop.local.md")
    }

    pub fn log(&self) -> Vec<Value> {
        self.read(".claude/ralph-loop.log.jsonl")
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn files_in(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(rel))
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Write a state file in the official plugin's layout plus extra lines.
    pub fn loop_state(
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
            ".claude/ralph-loop.local.md",
            &format!(
                "---\nactive: true\niteration: {iteration}\nsession_id: {session}\nmax_iterations: {max}\ncompletion_promise: {promise}\nstarted_at: \"2026-11-29T00:00:00Z\"\n{extra}---\n\n{prompt}"
            ),
        );
    }

    /// Run the Stop hook as session `session`; returns the parsed output (None if empty).
    pub fn stop(&self, session: &str, last_message: Option<&str>) -> Option<Value> {
        let mut input = serde_json::json!({
            "session_id": session,
            "transcript_path": self.path("transcript.jsonl"),
            "cwd": self.root,
            "hook_event_name": "Stop",
            "stop_hook_active": false,
        });
        if let Some(m) = last_message {
            input["last_assistant_message"] = Value::String(m.into());
        }
        run_json(STOP, &[], &self.root, &input.to_string())
    }

    /// `ralph-setup hook-prompt` with the raw prompt text.
    pub fn prompt(&self, session: &str, prompt: &str) -> Option<Value> {
        let input = serde_json::json!({
            "session_id": session, "cwd": self.root, "hook_event_name": "UserPromptSubmit", "prompt": prompt,
        });
        run_json(SETUP, &["hook-prompt"], &self.root, &input.to_string())
    }

    /// `ralph-setup ARGS` in the project; (exit code, stdout).
    pub fn setup(&self, args: &[&str]) -> (i32, String) {
        let out = Command::new(SETUP)
            .args(args)
            .current_dir(&self.root)
            .env("CLAUDE_PROJECT_DIR", &self.root)
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Run `bin args` with `stdin`, CLAUDE_PROJECT_DIR = `root`; assert exit 0 and
/// parse stdout as JSON (None when empty).
pub fn run_json(bin: &str, args: &[&str], root: &Path, stdin: &str) -> Option<Value> {
    let (code, stdout) = run_raw(bin, args, root, stdin.as_bytes());
    assert_eq!(code, 0, "{bin} exited {code}: {stdout}");
    let t = stdout.trim();
    (!t.is_empty())
        .then(|| serde_json::from_str(t).unwrap_or_else(|e| panic!("not JSON ({e}): {t}")))
}

pub fn run_raw(bin: &str, args: &[&str], root: &Path, stdin: &[u8]) -> (i32, String) {
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
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
pub fn reason(out: Option<&Value>) -> String {
    let v = out.expect("expected a block, got no output");
    assert_eq!(v["decision"], "block", "{v}");
    v["reason"].as_str().unwrap().to_string()
}

/// The `systemMessage` of an output.
pub fn message(out: Option<&Value>) -> String {
    out.expect("expected output")["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn is_block(out: Option<&Value>) -> bool {
    out.is_some_and(|v| v["decision"] == "block")
}

impl Project {
    /// Make the project a real git repository (for fingerprints).
    pub fn git_init(&self) {
        let _ = std::fs::remove_dir_all(self.path(".git"));
        let ok = Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&self.root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init");
    }
}
