//! Where ralph's binaries and the plugin are: beside this binary, in
//! `$RALPH_BIN_DIR`, on `PATH`; the plugin a run gives the client.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// A ralph binary: next to this one, in `$RALPH_BIN_DIR`, or on `PATH`
/// (`NAME.exe` on Windows).
pub(crate) fn find_binary(name: &str) -> Option<PathBuf> {
    let name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let dirs = exe_dir()
        .into_iter()
        .chain(std::env::var_os("RALPH_BIN_DIR").map(PathBuf::from))
        .chain(
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()),
        );
    dirs.map(|d| d.join(&name)).find(|p| p.is_file())
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
