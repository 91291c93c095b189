//! The runner's I/O at the edge: signals, finding the binaries and the
//! plugin, the run lock, the loop's files, process groups, and
//! the terminal.

use ralph_core::activity::{self, Action, Entry};
use ralph_core::paths::LoopPaths;
use ralph_core::paths::StateFile;
use ralph_core::store::{self, LOCK_WAIT, LoopLock};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The run lock: held for the whole run, so a second `ralph run` in the same
/// project is refused.
pub(crate) const RUN_LOCK_FILE: &str = ".claude/ralph-run.lock";
/// Where each run keeps its streams and notes.
pub(crate) const RUNS_DIR: &str = ".claude/ralph-runs";

// ---------------------------------------------------------------------------
// Signals

static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// SIGINT, SIGTERM and SIGHUP set a flag the runner polls (at least every
/// 250 ms): the child is stopped and the loop cancelled by the runner itself.
pub(crate) fn install_signal_flags() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    #[cfg(unix)]
    let signals = [SIGINT, SIGTERM, signal_hook::consts::SIGHUP];
    #[cfg(not(unix))]
    let signals = [SIGINT, SIGTERM];
    for sig in signals {
        signal_hook::flag::register_usize(sig, &SIGNAL, sig as usize)?;
    }
    Ok(())
}

/// The signal received, if any.
pub(crate) fn pending_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

pub(crate) fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

// ---------------------------------------------------------------------------
// Binaries and the plugin

fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// A ralph binary: next to this one, in `$RALPH_BIN_DIR`, or on `PATH`.
pub(crate) fn find_binary(name: &str) -> Option<PathBuf> {
    let dirs = exe_dir()
        .into_iter()
        .chain(std::env::var_os("RALPH_BIN_DIR").map(PathBuf::from))
        .chain(
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()),
        );
    dirs.map(|d| d.join(name)).find(|p| p.is_file())
}

/// The plugin root given to the client with `--plugin-dir`:
/// `$RALPH_PLUGIN_ROOT`, else the checkout this binary was built in (the
/// nearest folder above it holding `.claude-plugin/plugin.json`), else the
/// newest ralph the client installed from a marketplace
/// (`<config>/plugins/cache/<marketplace>/ralph/<version>/`).
pub(crate) fn plugin_root() -> Result<PathBuf, String> {
    let is_plugin = |d: &Path| d.join(".claude-plugin/plugin.json").is_file();
    if let Some(root) = std::env::var_os("RALPH_PLUGIN_ROOT").filter(|r| !r.is_empty()) {
        let root = PathBuf::from(root);
        return if is_plugin(&root) {
            Ok(root)
        } else {
            Err(format!(
                "RALPH_PLUGIN_ROOT={} holds no .claude-plugin/plugin.json: set it to the ralph plugin's folder (installed from a marketplace: ~/.claude/plugins/cache/<marketplace>/ralph/<version>; from a clone: the clone's root)",
                root.display()
            ))
        };
    }
    exe_dir()
        .and_then(|d| d.ancestors().find(|a| is_plugin(a)).map(Path::to_path_buf))
        .or_else(installed_plugin)
        .ok_or_else(|| {
            "cannot find the ralph plugin (no .claude-plugin/plugin.json above this binary, none under ~/.claude/plugins/cache/*/ralph/): set RALPH_PLUGIN_ROOT to its folder, e.g. RALPH_PLUGIN_ROOT=~/.claude/plugins/cache/<marketplace>/ralph/<version> (installed with /plugin install), or the root of your ralph clone".into()
        })
}

/// The newest ralph under the client's plugin cache, if any.
fn installed_plugin() -> Option<PathBuf> {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))?;
    let dirs = |p: PathBuf| {
        std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
    };
    dirs(config.join("plugins/cache"))
        .flat_map(|market| dirs(market.join("ralph")))
        .filter(|v| v.join(".claude-plugin/plugin.json").is_file())
        .max_by_key(|v| std::fs::metadata(v).and_then(|m| m.modified()).ok())
}

/// When `ralph-setup` (the hooks' binary, which does the work of `start`,
/// `resume`, `report` and `statusline`) is not found.
pub(crate) const SETUP_MISSING: &str = "ralph-setup (installed beside ralph) is not next to ralph, in $RALPH_BIN_DIR or on PATH: put the release's binaries in one folder, or set RALPH_BIN_DIR to theirs";

/// `ralph SUB ARGS...`: `ralph-setup SUB ARGS...`, by running it.
pub(crate) fn exec_setup(sub: &str, args: &[String]) -> ExitCode {
    let Some(bin) = find_binary("ralph-setup") else {
        eprintln!("ralph: {SETUP_MISSING}");
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(&bin);
    cmd.arg(sub).args(args);
    run_in_place(&mut cmd, &bin)
}

/// Become `cmd` (Unix `exec`: its exit is this process's); elsewhere run
/// it, wait, and exit with its code.
fn run_in_place(cmd: &mut Command, bin: &std::path::Path) -> ExitCode {
    #[cfg(unix)]
    let err = std::os::unix::process::CommandExt::exec(cmd);
    #[cfg(not(unix))]
    let err = match cmd.status() {
        Ok(status) => {
            return ExitCode::from(
                status
                    .code()
                    .and_then(|c| u8::try_from(c).ok())
                    .unwrap_or(1),
            );
        }
        Err(e) => e,
    };
    eprintln!("ralph: cannot run {}: {err}", bin.display());
    ExitCode::from(2)
}

// ---------------------------------------------------------------------------
// The run lock

pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Take the project's run lock, or say who holds it.
    pub(crate) fn acquire(root: &Path, holder: &str) -> Result<RunLock, String> {
        let path = root.join(RUN_LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {
                let _ = file.set_len(0);
                let _ = file.write_all(holder.as_bytes());
                Ok(RunLock { _file: file })
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                Err(text.trim().to_string())
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(format!("cannot lock {}: {e}", path.display()))
            }
        }
    }
}

/// Who runs `ralph run` in this project now, if anyone.
pub(crate) fn run_lock_holder(root: &Path) -> Option<String> {
    let mut file = File::open(root.join(RUN_LOCK_FILE)).ok()?;
    match file.try_lock_shared() {
        Ok(()) => None,
        Err(_) => {
            let mut text = String::new();
            file.read_to_string(&mut text).ok()?;
            Some(text.trim().to_string())
        }
    }
}

// ---------------------------------------------------------------------------
// The loop's files

/// Whether the loop of `session` is still there (not cancelled, not replaced).
pub(crate) fn loop_is_ours(paths: &LoopPaths, session: &str) -> bool {
    match paths.read_state() {
        StateFile::Loop { state, .. } => state.session_id == session,
        // A corrupt file is the Stop hook's to report.
        StateFile::Corrupt { .. } | StateFile::Unreadable(_) => true,
        StateFile::Missing => false,
    }
}

/// End this run's loop from the runner (interrupted, or the client kept
/// failing): under the loop lock, remove the state and its sidecar, and log
/// why. Nothing happens when the loop is gone or belongs to someone else.
pub(crate) fn end_loop(
    paths: &LoopPaths,
    session: &str,
    decision: Action,
    reason: &str,
    message: &str,
) -> Result<bool, String> {
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT).map_err(|e| e.to_string())?;
    let StateFile::Loop { state, .. } = paths.read_state() else {
        return Ok(false);
    };
    if state.session_id != session {
        return Ok(false);
    }
    paths.remove_state().map_err(|e| e.to_string())?;
    let _ = store::remove_if_present(&paths.last_injected);
    let entry = Entry::now(session, state.iteration, decision, reason).with_message(Some(message));
    let _ = activity::append(&paths.log, &entry);
    Ok(true)
}

/// Append a runner entry (a wait, a retry) to the loop's activity log.
pub(crate) fn log(
    paths: &LoopPaths,
    session: &str,
    iteration: u64,
    decision: Action,
    reason: &str,
    msg: &str,
) {
    let entry = Entry::now(session, iteration, decision, reason).with_message(Some(msg));
    let _ = activity::append(&paths.log, &entry);
}

/// The length of the activity log now (entries after it are new).
pub(crate) fn log_len(paths: &LoopPaths) -> u64 {
    std::fs::metadata(&paths.log).map(|m| m.len()).unwrap_or(0)
}

/// The last entry of `session` appended to the log after `offset`.
pub(crate) fn log_entry_since(paths: &LoopPaths, offset: u64, session: &str) -> Option<Entry> {
    let mut f = File::open(&paths.log).ok()?;
    f.seek(SeekFrom::Start(offset)).ok()?;
    let mut buf = String::new();
    f.read_to_string(&mut buf).ok()?;
    buf.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
        .find(|e| e.session == session)
}

/// The client's transcript of `session`: `<config>/projects/<dir>/<session>.jsonl`
/// (`<config>` is `$CLAUDE_CONFIG_DIR` or `~/.claude`).
pub(crate) fn transcript_of(session: &str) -> Option<PathBuf> {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))?;
    let name = format!("{session}.jsonl");
    std::fs::read_dir(config.join("projects"))
        .ok()?
        .filter_map(Result::ok)
        .map(|d| d.path().join(&name))
        .find(|p| p.is_file())
}

/// `git log -1 --format='%h %s'` in the project, if it is a repository.
pub(crate) fn last_commit(root: &Path) -> Option<String> {
    let text = ralph_core::git::Git::read(root)
        .text(&["log", "-1", "--format=%h %s"])
        .ok()?;
    let text = text.trim().to_string();
    (!text.is_empty()).then_some(text)
}

// ---------------------------------------------------------------------------
// Processes

/// Send `signal` (a name: TERM, KILL) to the process group `pgid`.
fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stop a child started in its own process group: TERM to the group, up to
/// `grace` to exit, then KILL. Returns once the child is reaped.
pub(crate) fn stop_group(child: &mut Child, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        // The leader is gone; its group may still hold the tools it ran.
        signal_group(child.id(), "KILL");
        return;
    }
    signal_group(child.id(), "TERM");
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            signal_group(child.id(), "KILL");
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    signal_group(child.id(), "KILL");
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------------------
// The terminal

/// Prints progress lines, and keeps a plain copy in the run's progress.log.
pub(crate) struct Out {
    log: Option<File>,
}

impl Out {
    pub(crate) fn new() -> Out {
        Out { log: None }
    }

    pub(crate) fn keep_in(&mut self, path: &Path) {
        self.log = OpenOptions::new().create(true).append(true).open(path).ok();
    }

    pub(crate) fn line(&mut self, text: &str) {
        println!("{text}");
        let _ = std::io::stdout().flush();
        if let Some(f) = &mut self.log {
            let _ = writeln!(f, "{}", ralph_core::run::progress::strip_ansi(text));
        }
    }
}
