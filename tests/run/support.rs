//! What the `ralph run` tests share: a project with its own HOME, the
//! scripted model, and `ralph run` started with the real client.

use ralph_fake_model::{FakeModel, Recorded, Reply, Script};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");
pub(crate) const RALPH: &str = env!("CARGO_BIN_EXE_ralph");
pub(crate) const STATE_FILE: &str = ".claude/ralph-loop.local.md";
pub(crate) const LOG_FILE: &str = ".claude/ralph-loop.log.jsonl";

/// The client: `RALPH_CLAUDE_BIN`, else the pinned one `scripts/install-client`
/// puts in `.cc-client`. Missing: the test is skipped, or fails under `CI`.
pub(crate) fn claude() -> Option<PathBuf> {
    let path = std::env::var_os("RALPH_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(CHECKOUT).join(".cc-client/node_modules/.bin/claude"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no Claude Code client at {} (run scripts/install-client)",
        path.display()
    );
    eprintln!(
        "skipped: no Claude Code client at {} (run scripts/install-client)",
        path.display()
    );
    None
}

/// A fresh git project and HOME under the temp dir (kept when a test fails).
pub(crate) struct Project {
    pub root: PathBuf,
    pub dir: PathBuf,
    pub home: PathBuf,
}

impl Project {
    pub(crate) fn new(name: &str) -> Project {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let root =
            std::env::temp_dir().join(format!("ralph-run-{name}-{}-{stamp}", std::process::id()));
        let dir = root.join("project");
        let home = root.join("home");
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(&home).unwrap();
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(git.success());
        // The first-run answers, so no dialog waits for a person.
        let answers = serde_json::json!({
            "hasCompletedOnboarding": true,
            "bypassPermissionsModeAccepted": true,
            "customApiKeyResponses": {"approved": ["x"], "rejected": []},
            "projects": {dir.display().to_string(): {"hasTrustDialogAccepted": true}},
        });
        fs::write(home.join(".claude.json"), answers.to_string()).unwrap();
        Project { root, dir, home }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    /// `ralph ARGS` in the project, with nothing of this machine's setup.
    pub(crate) fn ralph(&self, model: Option<&FakeModel>) -> Command {
        let mut cmd = ralph_in(&self.dir, &self.home);
        if let Some(m) = model {
            cmd.env("ANTHROPIC_BASE_URL", m.base_url());
        }
        cmd
    }

    /// `ralph run --claude CLIENT ARGS`: no client flags, as a user's first
    /// run (the run gives its clients the sandbox and their permissions).
    pub(crate) fn run_cmd(
        &self,
        model: Option<&FakeModel>,
        claude: &Path,
        args: &[&str],
    ) -> Command {
        let mut cmd = self.ralph(model);
        cmd.arg("run").arg("--claude").arg(claude).args(args);
        cmd
    }

    pub(crate) fn log(&self) -> Vec<Value> {
        self.read(LOG_FILE)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The log's decisions as `decision/reason`.
    pub(crate) fn decisions(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|e| {
                format!(
                    "{}/{}",
                    e["decision"].as_str().unwrap_or(""),
                    e["reason"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    /// The one run folder's file `name`.
    pub(crate) fn run_file(&self, name: &str) -> String {
        let runs = self.path(".claude/ralph-runs");
        let dir = fs::read_dir(&runs)
            .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
            .find_map(Result::ok)
            .expect("a run folder")
            .path();
        fs::read_to_string(dir.join(name)).unwrap_or_default()
    }

    pub(crate) fn done(self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// The scripted model, one reply per request of every client the run starts.
pub(crate) fn model(replies: Vec<Reply>) -> FakeModel {
    FakeModel::start(Script {
        replies,
        ..Script::default()
    })
    .unwrap()
}

/// What a finished `ralph run` showed.
pub(crate) struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    pub(crate) fn from_output(o: &Output) -> Finished {
        Finished {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Assert the exit code, showing everything when it differs.
    pub(crate) fn expect_code(&self, code: i32) {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
    }

    pub(crate) fn shows(&self, text: &str) {
        assert!(
            self.stdout.contains(text) || self.stderr.contains(text),
            "expected {text:?} in the output\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
    }
}

/// Run to the end (at most 90 s).
pub(crate) fn finish(mut cmd: Command) -> Finished {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_output(child, Duration::from_secs(90))
}

pub(crate) fn wait_output(child: Child, limit: Duration) -> Finished {
    let pid = child.id();
    let guard = std::thread::spawn(move || {
        std::thread::sleep(limit);
        // Still running after the limit: kill it so the test fails, not hangs.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    });
    let out = child.wait_with_output().unwrap();
    drop(guard);
    let f = Finished::from_output(&out);
    // Shown by the test harness when the test fails (and with --nocapture).
    println!(
        "--- ralph stdout\n{}--- ralph stderr\n{}",
        f.stdout, f.stderr
    );
    f
}

/// Wait until `cond` holds (polling), or fail saying what was awaited.
pub(crate) fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The main requests' texts as the model saw them, each as one string.
pub(crate) fn told(r: &Recorded) -> String {
    r.body
        .get("messages")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .map(|m| ralph_fake_model::content_text(m.get("content").unwrap_or(&Value::Null)))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The requests that opened a session: their only non-system message is the
/// user's prompt (no earlier turns).
pub(crate) fn first_requests(model: &FakeModel) -> Vec<Recorded> {
    model
        .main_requests()
        .into_iter()
        .filter(|r| conversation(r).len() == 1)
        .collect()
}

/// The user and assistant messages of a request (system entries left out).
pub(crate) fn conversation(r: &Recorded) -> Vec<Value> {
    r.body
        .get("messages")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .filter(|m| m.get("role").and_then(Value::as_str) != Some("system"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The processes whose command line holds `tag` (zombies aside).
pub(crate) fn running_with(tag: &str) -> Vec<String> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id() && is_alive(*pid))
        .filter_map(|pid| {
            let cmd = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(tag).then(|| format!("{pid}: {cmd}"))
        })
        .collect()
}

pub(crate) fn is_alive(pid: u32) -> bool {
    // A zombie is gone for our purposes: its process has exited.
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
        .unwrap_or(false)
}

/// `claude -p PROMPT` in `dir`, as a user runs it with the plugin loaded
/// (this checkout, its binaries through `RALPH_BIN_DIR`), against `model`,
/// with `home` and nothing else of the caller's environment but `PATH`.
/// Its temporary files are its own (`home/tmp`): clients of one user that
/// run at once with the same `--settings` share one file there, which the
/// first to exit removes under the other's sandboxed commands
/// (docs/client-measurements.md), as two tests at once would.
pub(crate) fn claude_p(
    claude: &Path,
    dir: &Path,
    home: &Path,
    model: &FakeModel,
    prompt: &str,
) -> Command {
    let bins = Path::new(RALPH).parent().expect("the binaries' folder");
    let mut cmd = Command::new(claude);
    users_env(&mut cmd, home)
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("RALPH_BIN_DIR", bins)
        .env("CLAUDE_CODE_TMPDIR", home.join("tmp"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .arg("-p")
        .arg(prompt)
        .arg("--plugin-dir")
        .arg(CHECKOUT)
        .arg("--dangerously-skip-permissions");
    cmd
}

/// The environment of a user at `home` and nothing else of the caller's
/// but `PATH`: a fake API key, no traffic beyond the model.
fn users_env<'c>(cmd: &'c mut Command, home: &Path) -> &'c mut Command {
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .env("IS_SANDBOX", "1")
        .env("ANTHROPIC_API_KEY", "x")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
}

/// `git ARGS` in `dir` with a test identity; its stdout, trimmed. Panics
/// with git's words when it fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// `ralph` in `dir` with `home` and nothing else of the caller's
/// environment but `PATH`: a fake API key, no traffic beyond the model,
/// this checkout as the plugin.
pub(crate) fn ralph_in(dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(RALPH);
    users_env(&mut cmd, home)
        .env("RALPH_PLUGIN_ROOT", CHECKOUT)
        // Waits in milliseconds where a user waits seconds.
        .env("RALPH_RUN_WAIT_UNIT_MS", "10")
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd
}
