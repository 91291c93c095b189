//! Before a run's first iteration: the binaries found, the run lock taken,
//! the loop started with the same start as `/ralph-loop`, the run's folder.

use crate::child::RunSetup;
use crate::config::Config;
use crate::run_files::{self, RunLock};
use crate::{installed, signals};
use ralph_core::clock;
use ralph_core::paths::LoopPaths;
use ralph_core::run::display::Style;
use ralph_core::run::handoff::HANDOFF_FILE;
use ralph_core::sandbox::{Availability, RunSandbox, Seen};
use std::path::{Path, PathBuf};

pub(crate) struct Prepared {
    pub setup: RunSetup,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub hook_bin: PathBuf,
    pub lock: RunLock,
    pub summary: String,
}

/// Everything before the first iteration: binaries, lock, the loop's start.
pub(crate) fn prepare(cfg: &Config, paths: &LoopPaths, style: Style) -> Result<Prepared, String> {
    // The client's hooks run the binaries beside it (`RALPH_BIN_DIR`).
    let setup_bin = installed::find_binary("ralph-setup").ok_or(installed::SETUP_MISSING)?;
    let hook_bin = installed::find_binary("ralph-stop-hook")
        .ok_or("ralph-stop-hook not found next to ralph, in $RALPH_BIN_DIR or on PATH")?;
    let plugin_root = installed::plugin_root()?;
    let root = &paths.root;
    std::fs::create_dir_all(root.join(".claude"))
        .map_err(|e| format!("cannot create {}/.claude: {e}", root.display()))?;
    let run_id = new_run_id();
    let holder = format!(
        "pid {}, run {run_id}, since {}",
        std::process::id(),
        clock::now_rfc3339()
    );
    let lock = RunLock::acquire(root, &holder).map_err(|who| {
        format!(
            "another `ralph run` is running in {} ({who}); nothing was started. Wait for it, or end it with `ralph cancel`.",
            root.display()
        )
    })?;
    signals::install_signal_flags().map_err(|e| format!("cannot handle signals: {e}"))?;
    let session = format!("ralph-run-{run_id}");
    let run_dir = root.join(run_files::RUNS_DIR).join(&run_id);
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| format!("cannot create {}: {e}", run_dir.display()))?;
    let seen = sandbox_seen(cfg);
    let leave_no_trace = |_: &String| {
        // Nothing was started: leave no trace of this run.
        let _ = std::fs::remove_dir(&run_dir);
        let _ = std::fs::remove_dir(root.join(run_files::RUNS_DIR));
    };
    let mut client_args = sandboxed_client_args(cfg, &seen).inspect_err(leave_no_trace)?;
    let mut summary = start_loop(paths, &session, &cfg.start_args, &cfg.claude, seen.clone())
        .inspect_err(leave_no_trace)?;
    let ralph_files = ralph_files(&setup_bin, &plugin_root);
    match &seen {
        Seen::On(_) => {
            let pins = match ralph_core::state_file::read(paths) {
                ralph_core::state_file::StateFile::Loop { state, .. } => {
                    state.pins.keys().cloned().collect()
                }
                _ => Vec::new(),
            };
            let plan = RunSandbox::plan(paths, &pins, &ralph_files);
            let settings = plan.settings(git_config_taken());
            client_args.splice(0..0, ["--settings".to_string(), settings.to_string()]);
            summary = format!("{summary}\n{}", plan.describe());
        }
        Seen::Off(why) => summary = format!("{summary}\n{}", unsandboxed_note(why)),
        Seen::Unknown => {}
    }
    // A hand-off left by an earlier run is not this run's: kept aside.
    let old = root.join(HANDOFF_FILE);
    if old.exists() {
        let _ = std::fs::rename(&old, run_dir.join("handoff-before.md"));
    }
    Ok(Prepared {
        setup: RunSetup {
            claude: cfg.claude.clone(),
            plugin_root,
            client_args,
            paths: paths.clone(),
            session,
            thresholds: cfg.thresholds,
            timeout: cfg.iteration_timeout,
            style,
            bin_dir: setup_bin.parent().map(Path::to_path_buf),
        },
        run_id,
        run_dir,
        hook_bin,
        lock,
        summary,
    })
}

/// The same start as `/ralph-loop`, for the run's session. Returns its
/// summary (the lines before the task). `claude`: the client this run
/// drives, recorded at start as the reviewers'.
fn start_loop(
    paths: &LoopPaths,
    session: &str,
    args: &[String],
    claude: &str,
    sandbox: Seen,
) -> Result<String, String> {
    let a = ralph_core::args::parse_argv(args).map_err(|e| e.to_string())?;
    let starter = ralph_core::start::commands::Starter {
        session,
        transcript: None,
        claude: Some(claude),
        sandbox,
    };
    let started =
        ralph_core::start::commands::start(paths, &a, &starter, ralph_policy::gather::full_gate)
            .map_err(|e| e.to_string())?;
    let summary = started.summary.split("\n\n").next().unwrap_or("");
    Ok(summary.trim_end().to_string())
}

/// Whether this run's clients run in the sandbox: asked (not
/// `--no-sandbox`) and able to run here.
fn sandbox_seen(cfg: &Config) -> Seen {
    if !cfg.sandbox {
        return Seen::Off("--no-sandbox was given".to_string());
    }
    match Availability::here().why_not() {
        None => Seen::On("ralph run".to_string()),
        Some(why) => Seen::Off(why),
    }
}

/// The client's flags: the user's, after the permission mode a sandboxed
/// run needs (file tools allowed in the project; Bash is allowed by the
/// run's settings, inside the sandbox) unless the user chose one. A
/// sandboxed run brings its own `--settings`: the user's would replace it.
fn sandboxed_client_args(cfg: &Config, seen: &Seen) -> Result<Vec<String>, String> {
    let given = |flag: &str| {
        cfg.client_args
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    if !matches!(seen, Seen::On(_)) {
        return Ok(cfg.client_args.clone());
    }
    if given("--settings") {
        return Err("ralph run gives its clients their sandbox with --settings, so it cannot take yours: put your settings in .claude/settings.json (the client reads both), or run with --no-sandbox".to_string());
    }
    let mut args = Vec::new();
    if !given("--permission-mode") && !given("--dangerously-skip-permissions") {
        args.extend(["--permission-mode".to_string(), "acceptEdits".to_string()]);
    }
    args.extend(cfg.client_args.iter().cloned());
    Ok(args)
}

/// What a run without the sandbox is, in its first lines.
fn unsandboxed_note(why: &str) -> String {
    format!(
        "⚠️  sandbox off: {why}. The agent's commands run with your rights; ralph's guard reads each one, and a write it cannot see (an interpreter's) is only caught afterwards, pausing the loop. Without client flags, -p cannot approve the agent's Bash commands: pass them after `--` (e.g. `-- --permission-mode acceptEdits --allowedTools Bash`)."
    )
}

/// ralph's own programs and plugin: denied to the agent's commands.
fn ralph_files(setup_bin: &Path, plugin_root: &Path) -> Vec<PathBuf> {
    let mut files = vec![plugin_root.to_path_buf()];
    if let Some(dir) = setup_bin.parent()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        files.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("ralph"))
                .map(|e| e.path()),
        );
    }
    files
}

/// Whether the runner's environment sets git configuration itself (the
/// run then leaves `GIT_CONFIG_*` alone).
fn git_config_taken() -> bool {
    std::env::var_os("GIT_CONFIG_COUNT").is_some()
}

/// `20261201-001502-4f2a`: sortable, and unique enough for one project.
fn new_run_id() -> String {
    let now = clock::rfc3339(clock::unix_now());
    let stamp: String = now.chars().filter(char::is_ascii_digit).take(14).collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{:04x}",
        &stamp[..8.min(stamp.len())],
        &stamp[8.min(stamp.len())..],
        (nanos ^ std::process::id()) & 0xffff
    )
}
