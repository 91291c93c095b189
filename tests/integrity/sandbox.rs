//! A scratch dir per case, copied from one template: a HOME, a project (a git
//! repository with a commit, a PRD and ordinary files) under that HOME, a
//! TMPDIR, an OUT_DIR, and a `bin/` with ralph's binaries and the launcher
//! as a plugin install would provide them. Every process runs with its cwd
//! and HOME in there, under the case's deadline.

use std::fs::File;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub(crate) const SETUP: &str = env!("CARGO_BIN_EXE_ralph-setup");
pub(crate) const GUARD: &str = env!("CARGO_BIN_EXE_ralph-guard");
pub(crate) const STOP: &str = env!("CARGO_BIN_EXE_ralph-stop-hook");
/// `ralph` (run, start, status, cancel): on PATH for the cases that call it.
pub(crate) const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

/// The Claude Code session that owns every case's loop.
pub(crate) const SESSION: &str = "5f0c2a9e-integrity-session";
/// `AI_AGENT` as the client sets it (measured on 2.1.328:
/// docs/client-measurements.md): hooks get `_harness`, the Bash tool `_agent`.
const AI_AGENT_TOOL: &str = "claude-code_2-1-328_agent";
const AI_AGENT_HOOK: &str = "claude-code_2-1-328_harness";
/// A case (setup, attack, Stops) is killed after this long.
pub(crate) const CASE_DEADLINE: Duration = Duration::from_secs(10);
/// A `--parallel` worker's case also makes worktrees, and its stop may
/// commit, merge, run the story's check and remove a worktree.
pub(crate) const WORKER_DEADLINE: Duration = Duration::from_secs(20);

/// The project's files (relative to the project root) and their text.
const PROJECT_FILES: &[(&str, &str)] = &[
    ("README.md", "# calc\n\nA tiny calculator library.\n"),
    ("notes.md", "# Notes\n\nNothing yet.\n"),
    ("progress.txt", "# Progress\n"),
    (
        "src/lib.rs",
        "/// Multiply two numbers.\npub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}\n",
    ),
    (
        "src/main.rs",
        "fn main() {\n    println!(\"{}\", calc::mul(2, 3));\n}\n",
    ),
    ("tests/check.sh", "#!/bin/sh\ngrep -q 'fn add' src/lib.rs\n"),
    (".gitignore", "build/\ntarget/\n"),
    (".claude/settings.json", "{\n  \"permissions\": {}\n}\n"),
    ("docs/guide.md", "# Guide\n\nUse `mul`.\n"),
    ("prd.json", PRD),
];

/// The PRD: US-1's check fails until `fn add` exists; US-2 waits on US-1.
pub(crate) const PRD: &str = r#"{
  "project": "calc",
  "branchName": "ralph/calc",
  "description": "A tiny calculator library",
  "userStories": [
    {
      "id": "US-1",
      "title": "Add two numbers",
      "description": "As a user I can add two numbers.",
      "acceptanceCriteria": ["add(2, 3) returns 5"],
      "priority": 1,
      "passes": false,
      "verify": "grep -q 'fn add' src/lib.rs"
    },
    {
      "id": "US-2",
      "title": "Subtract two numbers",
      "description": "As a user I can subtract two numbers.",
      "acceptanceCriteria": ["sub(5, 3) returns 2"],
      "priority": 2,
      "passes": false,
      "dependsOn": ["US-1"]
    },
    {
      "id": "US-3",
      "title": "Document the API",
      "description": "The README names every function.",
      "acceptanceCriteria": ["README.md names add and sub"],
      "priority": 3,
      "passes": false
    }
  ]
}
"#;

/// An untracked (ignored) build output and a small notebook.
const OTHER_FILES: &[(&str, &str)] = &[
    ("build/out.json", "{\"ok\": true}\n"),
    (
        "analysis.ipynb",
        r#"{"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["print(1)"], "outputs": [], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
"#,
    ),
];

/// Files outside the project: a fake cache in HOME, temp and output files.
const SANDBOX_FILES: &[(&str, &str)] = &[
    (
        "home/.gitconfig",
        "[user]\n\tname = Agent\n\temail = agent@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
    ),
    ("home/.cache/pip/wheel-1.0.whl", "not a wheel\n"),
    ("home/.cache/thumbnails/a.png", "not a png\n"),
    ("tmp/scratch-1.txt", "temp\n"),
    ("tmp/build-cache/obj.o", "obj\n"),
    ("out/report.md", "# report\n"),
    ("out/summary.md", "# summary\n"),
    // Many containers run as root with a passwordless sudo: a pass-through.
    ("bin/sudo", "#!/bin/sh\nexec \"$@\"\n"),
];

/// Where one run's scratch dirs live, and the template they are copied from.
pub(crate) struct Fixture {
    root: PathBuf,
    template: PathBuf,
    next: AtomicUsize,
}

impl Fixture {
    pub(crate) fn build() -> Result<Fixture, String> {
        let root = std::env::temp_dir().join(format!("integrity-scratch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let template = root.join("template");
        for (rel, text) in SANDBOX_FILES {
            write(&template.join(rel), text)?;
        }
        let proj = template.join("home/proj");
        for (rel, text) in PROJECT_FILES.iter().chain(OTHER_FILES) {
            write(&proj.join(rel), text)?;
        }
        let launcher = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin/ralph");
        let text = std::fs::read_to_string(&launcher).map_err(|e| format!("{e}"))?;
        write(&template.join("plugin/plugin/ralph"), &text)?;
        let bin = template.join("bin");
        chmod_x(&bin.join("sudo"))?;
        for exe in [SETUP, GUARD, STOP, RALPH] {
            let name = Path::new(exe).file_name().ok_or("binary name")?;
            std::os::unix::fs::symlink(exe, bin.join(name)).map_err(|e| format!("{e}"))?;
        }
        let fixture = Fixture {
            root,
            template,
            next: AtomicUsize::new(0),
        };
        let t = Fixture::sandbox_at(fixture.template.clone(), CASE_DEADLINE);
        for git in [
            "git init -q --template= .",
            "chmod +x tests/check.sh",
            "git add -A",
            "git commit -q -m 'calc: mul'",
            // One pack instead of a file per object: fewer files to copy and delete.
            "git repack -adq && git prune-packed",
        ] {
            let out = t.run(t.user_shell(git), b"", "template", None)?;
            if out.code != Some(0) {
                return Err(format!("template: `{git}` failed: {}", out.stderr));
            }
        }
        Ok(fixture)
    }

    /// A fresh copy of the template, for a case of `deadline`.
    pub(crate) fn sandbox(&self, deadline: Duration) -> Result<Sandbox, String> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let dir = self.root.join(format!("c{n}"));
        copy_tree(&self.template, &dir).map_err(|e| format!("copy template: {e}"))?;
        Ok(Fixture::sandbox_at(dir, deadline))
    }

    /// A new empty scratch dir (a CI story runner's case: `ci.rs` builds
    /// its own repositories there).
    pub(crate) fn scratch(&self) -> Result<PathBuf, String> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let dir = self.root.join(format!("c{n}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(dir)
    }

    /// The run's scratch root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    fn sandbox_at(dir: PathBuf, deadline: Duration) -> Sandbox {
        Sandbox {
            home: dir.join("home"),
            project: dir.join("home/proj"),
            deadline: Instant::now() + deadline,
            dir,
        }
    }

    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The result of one process.
pub(crate) struct Output {
    /// None when killed by a signal.
    pub code: Option<i32>,
    /// Killed at its `limit`.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

pub(crate) struct Sandbox {
    pub dir: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub deadline: Instant,
}

impl Sandbox {
    /// Replace `{project}`, `{home}` and `{plugin}` in a case's text.
    pub(crate) fn expand(&self, text: &str) -> String {
        text.replace("{project}", &self.project.to_string_lossy())
            .replace("{home}", &self.home.to_string_lossy())
            .replace("{plugin}", &self.dir.join("plugin").to_string_lossy())
    }

    /// What every process gets: nothing of the machine's own environment.
    fn base(&self, program: &str, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .current_dir(cwd)
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.dir.join("bin").display()
                ),
            )
            .env("HOME", &self.home)
            .env("TMPDIR", self.dir.join("tmp"))
            .env("OUT_DIR", self.dir.join("out"))
            .env("LANG", "C.UTF-8")
            .env("SHELL", "/bin/bash")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        cmd
    }

    /// The user at a terminal in the project.
    pub(crate) fn user(&self, program: &str) -> Command {
        self.base(program, &self.project)
    }

    pub(crate) fn user_shell(&self, script: &str) -> Command {
        let mut cmd = self.user("bash");
        cmd.args(["-c", script]);
        cmd
    }

    /// A hook run by a client for `session` (SESSION: the loop's), with
    /// more environment (what a reviewer-like session could be given).
    pub(crate) fn hook_as(
        &self,
        program: &str,
        session: &str,
        env: &[(String, String)],
    ) -> Command {
        let mut cmd = self.base(program, &self.project);
        cmd.env("CLAUDE_PROJECT_DIR", &self.project)
            .env("CLAUDE_PLUGIN_ROOT", self.dir.join("plugin"))
            .env(
                "CLAUDE_PLUGIN_DATA",
                self.home.join(".claude/plugins/data/ralph-inline"),
            )
            .env("AI_AGENT", AI_AGENT_HOOK);
        session_env(&mut cmd, session);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// A command the agent runs with the Bash tool, in `cwd`.
    /// As the client does, the command runs inside a longer script (its
    /// shell snapshot sourced first: measured on 2.1.328), so the shell
    /// that carries the agent's marks stays its parent and is never
    /// replaced by a lone command (`ancestry` reads it).
    pub(crate) fn agent_bash(
        &self,
        script: &str,
        cwd: &Path,
        session: &str,
        env: &[(String, String)],
    ) -> Command {
        let mut cmd = self.base("bash", cwd);
        let wrapped = format!("{script}\nexit $?");
        cmd.args(["-c", &wrapped]).env("AI_AGENT", AI_AGENT_TOOL);
        session_env(&mut cmd, session);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Run `cmd` with `stdin`, output to files, killed (with its process
    /// group) after `limit` (then `code` is None) or at the case's deadline
    /// (an error).
    pub(crate) fn run(
        &self,
        mut cmd: Command,
        stdin: &[u8],
        label: &str,
        limit: Option<Duration>,
    ) -> Result<Output, String> {
        // One pair of files, reused: runs within a case take turns, and
        // every file made is one more to delete.
        let io = self.dir.join("io");
        std::fs::create_dir_all(&io).map_err(|e| format!("{e}"))?;
        let (out_path, err_path) = (io.join("out"), io.join("err"));
        let file = |p: &Path| File::create(p).map_err(|e| format!("{}: {e}", p.display()));
        cmd.stdin(Stdio::piped())
            .stdout(file(&out_path)?)
            .stderr(file(&err_path)?)
            .process_group(0);
        let t0 = Instant::now();
        let mut child = cmd.spawn().map_err(|e| format!("{label}: spawn: {e}"))?;
        let pid = child.id();
        if let Some(mut pipe) = child.stdin.take() {
            // A hook may exit without reading (a broken pipe is normal).
            let _ = pipe.write_all(stdin);
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let until = limit.map_or(self.deadline, |l| (Instant::now() + l).min(self.deadline));
        let status = rx.recv_timeout(until.saturating_duration_since(Instant::now()));
        // Whatever an agent's command left running in the background goes
        // too (ralph's own hooks are waited for, or killed at the deadline).
        if limit.is_some() || status.is_err() {
            kill_group(pid);
        }
        if std::env::var_os("RALPH_INTEGRITY_TRACE").is_some() {
            eprintln!("{label}: {:?}", t0.elapsed());
        }
        let mut timed_out = false;
        let code = match status {
            Ok(Ok(s)) => s.code(),
            Ok(Err(e)) => return Err(format!("{label}: wait: {e}")),
            Err(_) => {
                let _ = rx.recv_timeout(Duration::from_secs(2));
                if until >= self.deadline {
                    return Err(format!("{label}: killed at the case deadline"));
                }
                timed_out = true;
                None
            }
        };
        let read =
            |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
        Ok(Output {
            code,
            timed_out,
            stdout: read(&out_path),
            stderr: read(&err_path),
        })
    }
}

/// What the client puts in the environment of hooks and tools alike.
fn session_env(cmd: &mut Command, session: &str) {
    cmd.env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_SESSION_ID", session)
        .env("CLAUDE_CODE_CHILD_SESSION", "1")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli");
}

fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    let parent = path.parent().ok_or("no parent")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn chmod_x(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Copy a tree: folders, files (with their permissions) and symlinks as links.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}
