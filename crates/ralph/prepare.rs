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
    let summary = start_loop(paths, &session, &cfg.start_args, &cfg.claude).inspect_err(|_| {
        // Nothing was started: leave no trace of this run.
        let _ = std::fs::remove_dir(&run_dir);
        let _ = std::fs::remove_dir(root.join(run_files::RUNS_DIR));
    })?;
    // A hand-off left by an earlier run is not this run's: kept aside.
    let old = root.join(HANDOFF_FILE);
    if old.exists() {
        let _ = std::fs::rename(&old, run_dir.join("handoff-before.md"));
    }
    Ok(Prepared {
        setup: RunSetup {
            claude: cfg.claude.clone(),
            plugin_root,
            client_args: cfg.client_args.clone(),
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
) -> Result<String, String> {
    let a = ralph_core::args::parse_argv(args).map_err(|e| e.to_string())?;
    let starter = ralph_core::start::commands::Starter {
        session,
        transcript: None,
        claude: Some(claude),
    };
    let started =
        ralph_core::start::commands::start(paths, &a, &starter, ralph_policy::gather::full_gate)
            .map_err(|e| e.to_string())?;
    let summary = started.summary.split("\n\n").next().unwrap_or("");
    Ok(summary.trim_end().to_string())
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
