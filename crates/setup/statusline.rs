//! `ralph-setup statusline [--then CMD]` (what `ralph statusline install` puts in the settings): Claude Code's status line. Reads
//! the client's JSON on stdin, prints the loop's line (`ralph_core::statusline`)
//! or nothing when no loop runs, then the output of the user's own
//! status-line command (`--then`), which gets the same stdin.
//!
//! The client runs it at start and after each message: without a loop it
//! costs one read of stdin and two stats (docs/benchmarks.md).

use ralph_core::paths::{LoopPaths, project_root};
use ralph_core::statusline::{LineInput, StatusLine, use_color};
use ralph_core::statusline_install;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The client's JSON is a few kilobytes; more is not read.
const MAX_INPUT: u64 = 1 << 20;
/// How long the user's own command may take (the client itself gives a
/// status line about this long before it drops the update).
const THEN_LIMIT: Duration = Duration::from_secs(5);

/// `statusline` or `statusline --then CMD` (`--then=CMD`): `Some(then)`;
/// anything else (`--help`, `--install`, a typo) goes to the full parser.
pub(crate) fn fast_args() -> Option<Option<String>> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != "statusline" {
        return None;
    }
    let rest: Vec<_> = args.collect();
    match rest.as_slice() {
        [] => Some(None),
        [flag, cmd] if flag == "--then" => Some(Some(cmd.to_str()?.to_string())),
        [one] => one
            .to_str()?
            .strip_prefix("--then=")
            .map(|cmd| Some(cmd.to_string())),
        _ => None,
    }
}

/// `/ralph-statusline` (`off`: undo), for the user's settings file.
pub(crate) fn install_or_off(off: bool) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("where is ralph-setup? {e}"))?;
    let ours = format!(
        "{}{}",
        statusline_install::sh_quote(&exe.to_string_lossy()),
        statusline_install::MARK
    );
    let settings = statusline_install::settings_file();
    let data = ralph_core::paths::data_root();
    if off {
        statusline_install::uninstall(&settings, &data, &ours)
    } else {
        statusline_install::install(&settings, &data, &ours)
    }
}

pub(crate) fn run(then: Option<&str>) {
    let stdin = read_stdin();
    let input = LineInput::parse(&stdin);
    // The client's project folder, else the git root above its cwd (as the
    // hooks resolve it).
    let env = std::env::var("CLAUDE_PROJECT_DIR").ok();
    let root = match (input.project_dir(), input.cwd()) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(cwd)) => project_root(env.as_deref(), Path::new(cwd)),
        (None, None) => project_root(env.as_deref(), &std::env::current_dir().unwrap_or_default()),
    };
    let ours = StatusLine::gather(&LoopPaths::new(root), &input, ralph_core::clock::unix_now())
        .map(|g| g.line(use_color(std::env::var("NO_COLOR").ok().as_deref())));
    let theirs = then
        .filter(|c| !c.trim().is_empty())
        .and_then(|cmd| run_then(cmd, &stdin));
    let mut out = std::io::stdout().lock();
    let _ = match (ours, theirs) {
        (Some(ours), Some(theirs)) => write!(out, "{ours}  {theirs}"),
        (Some(ours), None) => writeln!(out, "{ours}"),
        (None, Some(theirs)) => write!(out, "{theirs}"),
        (None, None) => Ok(()),
    };
}

fn read_stdin() -> Vec<u8> {
    let mut buf = Vec::new();
    // The client writes its JSON and closes the pipe; a terminal gives EOF on ^D.
    let _ = std::io::stdin()
        .lock()
        .take(MAX_INPUT)
        .read_to_end(&mut buf);
    buf
}

/// The user's command's output, as it printed it (`None` when it printed
/// nothing, failed to start or ran too long).
fn run_then(cmd: &str, stdin: &[u8]) -> Option<String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin);
    }
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        text
    });
    let deadline = Instant::now() + THEN_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let text = String::from_utf8_lossy(&reader.join().ok()?).into_owned();
    (!text.trim().is_empty()).then_some(text)
}
