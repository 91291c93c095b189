//! One bench case: the process, its input and files, what it must print,
//! its target; and how it is run and timed. Below the runner and the
//! steady-state cases, which both make cases.

use serde_json::{Value, json};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The loop paths' target, in ms (the steady-state cases share it).
pub(crate) const LOOP_TARGET_MS: f64 = 3.0;
/// Peak memory is read from a few runs and the largest kept: one run is what
/// the target is about, the repeats only guard against a lucky one.
pub(crate) const RSS_RUNS: usize = 3;
const GNU_TIME: &str = "/usr/bin/time";

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Expect {
    /// Prints nothing: the session stops.
    Silent,
    /// Feeds the model: the loop goes on (`additionalContext` under the
    /// client named in `AI_AGENT` below, `{"decision":"block",...}` under
    /// an older one: `ralph_core::hook_output::FeedForm`).
    Block,
    /// The reference process: whatever it does.
    Any,
    /// A status line starting so.
    Line(&'static str),
}

impl Expect {
    pub(crate) fn matches(self, out: &[u8]) -> bool {
        match self {
            Expect::Any => true,
            Expect::Silent => out.iter().all(u8::is_ascii_whitespace),
            Expect::Line(start) => out.starts_with(start.as_bytes()),
            Expect::Block => serde_json::from_slice::<Value>(out).is_ok_and(|v| {
                v.get("decision") == Some(&json!("block"))
                    || v.pointer("/hookSpecificOutput/hookEventName") == Some(&json!("Stop"))
            }),
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Target {
    None,
    Ms(f64),
}

#[derive(Clone)]
pub(crate) struct Case {
    pub label: String,
    pub(crate) program: PathBuf,
    /// Fresh copies of `program`, run in turn (`--copies`; empty: the
    /// program itself).
    pub(crate) copies: Vec<PathBuf>,
    /// The program's arguments (`statusline` for ralph-setup).
    pub(crate) args: Vec<String>,
    pub(crate) project: PathBuf,
    /// `{RUN}` in it becomes the run's number (a new turn each run).
    pub(crate) stdin: Vec<u8>,
    /// Bytes appended to files before every run, outside the timing (the
    /// guard's record of the turn's tools, the turn's lines of the
    /// transcript, in the steady cases); `{RUN}` becomes the run's number.
    pub(crate) append: Vec<(PathBuf, Vec<u8>)>,
    /// Bytes appended to a file this long after the spawn, while the hook
    /// runs: the turn's last line, as the client writes it after its Stop
    /// hook has started (case 8); `{RUN}` becomes the run's number.
    pub(crate) late: Option<(PathBuf, Vec<u8>, Duration)>,
    /// Files written back before every run, outside the timing: the block path
    /// advances the iteration (and, in PRD mode, the re-injection counter), so
    /// without this each run would take a slightly different path and a PRD
    /// loop would halt after `max_story_attempts` runs.
    pub(crate) reset: Vec<(PathBuf, Vec<u8>)>,
    pub expect: Expect,
    pub target: Target,
    /// Whether the RSS target applies (not to the reference process).
    pub rss_target: bool,
}

impl Case {
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(&self.args)
            .current_dir(&self.project)
            .env("CLAUDE_PROJECT_DIR", &self.project)
            .env("RALPH_DATA_DIR", self.data_dir())
            // As Claude Code runs its hooks (docs/client-measurements.md):
            // the hook's check of who started it reads one ancestor, as
            // under the client, instead of walking up to init.
            .env("AI_AGENT", "claude-code_2-1-328_harness")
            .env("CLAUDE_PID", std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd
    }

    /// ralph's data folder for this case (beside the project): never the
    /// user's own `~/.claude/ralph`.
    pub(crate) fn data_dir(&self) -> PathBuf {
        let mut name = self.project.as_os_str().to_owned();
        name.push(".ralph-data");
        PathBuf::from(name)
    }

    fn reset(&self, run: usize) -> std::io::Result<()> {
        // The loop is set up again from the project's file each run (ralph
        // adopts a project file with no state of its own: the same reads and
        // writes as a loop it already keeps).
        if !self.reset.is_empty() {
            match fs::remove_dir_all(self.data_dir()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        for (path, bytes) in &self.reset {
            fs::write(path, bytes)?;
        }
        for (path, bytes) in &self.append {
            append(path, &with_run(bytes, run))?;
        }
        Ok(())
    }

    /// Make `k` copies of the program under `dir`, to be run in turn. The
    /// reference (`/bin/true`) stays as it is: it is the floor.
    pub(crate) fn spread_over_copies(&mut self, dir: &Path, k: usize) -> std::io::Result<()> {
        if k < 2 || matches!(self.expect, Expect::Any) {
            return Ok(());
        }
        let name = self.program.file_name().unwrap_or_default().to_owned();
        for i in 0..k {
            let copy = dir.join(i.to_string()).join(&name);
            fs::create_dir_all(dir.join(i.to_string()))?;
            fs::copy(&self.program, &copy)?;
            self.copies.push(copy);
        }
        Ok(())
    }

    /// The input of run number `run`.
    fn stdin_of(&self, run: usize) -> Vec<u8> {
        with_run(&self.stdin, run)
    }

    /// One run (number `run`), timed from spawn to exit, as the client would see it.
    pub(crate) fn run_once(&self, run: usize) -> std::io::Result<(Duration, Vec<u8>)> {
        self.reset(run)?;
        let stdin = self.stdin_of(run);
        let program = match self.copies.len() {
            0 => &self.program,
            n => &self.copies[run % n],
        };
        let start = Instant::now();
        let writer = self.write_late(run, start);
        let out = feed(self.command(program), &stdin)?;
        let took = start.elapsed();
        finish_late(writer)?;
        Ok((took, out))
    }

    /// The late line's writer (case 8), started at the spawn.
    fn write_late(&self, run: usize, start: Instant) -> Option<Writer> {
        self.late.clone().map(|(path, bytes, after)| {
            let bytes = with_run(&bytes, run);
            std::thread::spawn(move || {
                std::thread::sleep(after.saturating_sub(start.elapsed()));
                append(&path, &bytes)
            })
        })
    }

    /// Peak resident memory of the hook in KiB, via GNU time.
    ///
    /// Why not `wait4` on our own child: std spawns with vfork semantics
    /// (CLONE_VM), and at exec Linux folds the old address space's high-water
    /// mark into the child's `ru_maxrss`, so the child would inherit this
    /// bench's own RSS (tens of MB while it holds request-blob templates).
    /// GNU time forks from a process of about 1 MB, below the hook's figure;
    /// the `/bin/true` row shows that floor. Its figure is the largest of the
    /// hook and the children it waited for (`git status` in loop cases).
    pub(crate) fn peak_rss_kib(&self) -> Option<u64> {
        if !Path::new(GNU_TIME).is_file() {
            return None;
        }
        let out_file = self.project.join(".ralph-bench-rss");
        let mut peak = None;
        for run in 0..RSS_RUNS {
            self.reset(usize::MAX - run).ok()?;
            let mut cmd = self.command(Path::new(GNU_TIME));
            cmd.arg("-f").arg("%M").arg("-o").arg(&out_file);
            cmd.arg(&self.program);
            let writer = self.write_late(usize::MAX - run, Instant::now());
            feed(cmd, &self.stdin_of(usize::MAX - run)).ok()?;
            finish_late(writer).ok()?;
            let kib: u64 = fs::read_to_string(&out_file).ok()?.trim().parse().ok()?;
            peak = peak.max(Some(kib));
        }
        let _ = fs::remove_file(&out_file);
        peak
    }
}

type Writer = std::thread::JoinHandle<std::io::Result<()>>;

/// The late line written (before the next run resets the files).
fn finish_late(writer: Option<Writer>) -> std::io::Result<()> {
    match writer {
        Some(w) => w
            .join()
            .map_err(|_| std::io::Error::other("the late writer panicked"))?,
        None => Ok(()),
    }
}

/// `bytes` with `{RUN}` made the run's number.
fn with_run(bytes: &[u8], run: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    if text.contains("{RUN}") {
        text.replace("{RUN}", &run.to_string()).into_bytes()
    } else {
        bytes.to_vec()
    }
}

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(bytes)
}

/// Spawn, write all of stdin and close it, read stdout to the end, wait.
fn feed(mut cmd: Command, stdin: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut child = cmd.spawn()?;
    if let Some(mut pipe) = child.stdin.take() {
        // A hook may exit without reading all of stdin; that is its right.
        let _ = pipe.write_all(stdin);
    }
    let mut out = Vec::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_end(&mut out)?;
    }
    child.wait()?;
    Ok(out)
}
