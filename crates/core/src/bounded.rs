//! The one way ralph runs a process it waits for (a check, git, a
//! reviewer's client): no stdin, its own process group, at most a timeout,
//! output to temp files. Below `git` and `worktree`, which both run through
//! it. Does I/O (spawns processes).

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The output kept from a check: at most this many lines...
pub(crate) const TAIL_LINES: usize = 60;
/// ...and this many bytes.
pub(crate) const TAIL_BYTES: usize = 8 * 1024;

/// Keep the last `TAIL_LINES` lines and at most `TAIL_BYTES` bytes of `output`
/// (cut on a character boundary).
pub(crate) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    let joined = lines[from..].join("\n");
    if joined.len() <= TAIL_BYTES {
        return joined;
    }
    let mut cut = joined.len() - TAIL_BYTES;
    while !joined.is_char_boundary(cut) {
        cut += 1;
    }
    format!("…{}", &joined[cut..])
}

/// A process run by [`run_bounded`].
#[derive(Debug)]
pub(crate) struct Bounded {
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// The tail of its stdout and stderr, interleaved as written.
    pub output: String,
}

/// The most of a check's output read for its score (its end: runners
/// print their summary last).
pub(crate) const SCORE_READ_LIMIT: u64 = 8 << 20;

/// Run `cmd` (no stdin) in its own process group, so a timeout kills the
/// whole tree it started, at most `timeout`; stdout and stderr go to a temp
/// file (no pipe to fill up): its tail, and its end up to
/// [`SCORE_READ_LIMIT`] (a check's score is read from it, `score::runners`).
pub(crate) fn run_bounded(
    cmd: &mut Command,
    timeout: Duration,
) -> std::io::Result<(Bounded, String)> {
    let (exit, timed_out, [output, _]) = spawn_bounded(cmd, timeout, Keep::Whole)?;
    let whole = String::from_utf8_lossy(&output).into_owned();
    let bounded = Bounded {
        exit,
        timed_out,
        output: tail(&whole),
    };
    Ok((bounded, whole))
}

/// What [`spawn_bounded`] keeps of the output.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// stdout and stderr together, up to [`SCORE_READ_LIMIT`] of the end.
    Whole,
    /// stdout whole and apart, stderr's end.
    Apart,
}

/// A process run by [`run_bounded_capture`]: its whole stdout (up to
/// [`CAPTURE_LIMIT`]) apart from the tail of its stderr.
#[derive(Debug)]
pub(crate) struct Captured {
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr_tail: String,
}

/// The most of a process's stdout [`run_bounded_capture`] reads.
pub(crate) const CAPTURE_LIMIT: u64 = 256 << 20;

/// [`run_bounded`], keeping stdout whole and apart (git's `-z` output, a
/// diff): the same process group, timeout and temp files.
pub(crate) fn run_bounded_capture(
    cmd: &mut Command,
    timeout: Duration,
) -> std::io::Result<Captured> {
    let (exit, timed_out, [stdout, stderr]) = spawn_bounded(cmd, timeout, Keep::Apart)?;
    Ok(Captured {
        exit,
        timed_out,
        stdout,
        stderr_tail: tail(&String::from_utf8_lossy(&stderr)),
    })
}

/// The one way ralph runs a process it waits for: no stdin, its own process
/// group (a timeout kills the whole tree), output to temp files (no pipe to
/// fill up), removed after. `Keep::Apart`: stdout and stderr in two files
/// (stdout read whole, up to [`CAPTURE_LIMIT`]; stderr's tail), else one
/// file, its end in the first slot.
fn spawn_bounded(
    cmd: &mut Command,
    timeout: Duration,
    keep: Keep,
) -> std::io::Result<(Option<i32>, bool, [Vec<u8>; 2])> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let started = Instant::now();
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let apart = keep == Keep::Apart;
    let path = |kind: &str| {
        std::env::temp_dir().join(format!("ralph-run-{}-{seq}.{kind}", std::process::id()))
    };
    let (out_path, err_path) = (path("log"), path("err"));
    let out = File::create(&out_path)?;
    let err = if apart {
        File::create(&err_path)
    } else {
        out.try_clone()
    };
    let cleanup = || {
        let _ = std::fs::remove_file(&out_path);
        let _ = std::fs::remove_file(&err_path);
    };
    let err = err.inspect_err(|_| cleanup())?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().inspect_err(|_| cleanup())?;
    let (exit, timed_out) = wait_bounded(&mut child, started, timeout);
    let tail = (TAIL_BYTES as u64) * 4;
    let texts = match keep {
        Keep::Apart => [read_all(&out_path), read_end(&err_path, tail)],
        Keep::Whole => [read_end(&out_path, SCORE_READ_LIMIT), Vec::new()],
    };
    cleanup();
    Ok((exit, timed_out, texts))
}

/// Wait for `child` (started in its own process group at `started`) at
/// most `timeout`, then kill its whole group: (exit code, timed out).
pub(crate) fn wait_bounded(
    child: &mut std::process::Child,
    started: Instant,
    timeout: Duration,
) -> (Option<i32>, bool) {
    let mut pause = Duration::from_millis(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (status.code(), false),
            Ok(None) if started.elapsed() >= timeout => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return (None, true);
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(_) => return (None, false),
        }
    }
}

fn kill_group(pid: u32) {
    // std cannot signal a process group; `kill -- -PGID` can.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

/// The last `keep` bytes of a possibly huge output file, without reading
/// it whole.
fn read_end(path: &Path, keep: u64) -> Vec<u8> {
    let Ok(mut f) = File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > keep {
        use std::io::{Seek, SeekFrom};
        let _ = f.seek(SeekFrom::Start(len - keep));
    }
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    buf
}

/// A captured stdout, up to [`CAPTURE_LIMIT`].
fn read_all(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = File::open(path) {
        let _ = f.take(CAPTURE_LIMIT).read_to_end(&mut buf);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_is_bounded() {
        let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let t = tail(&long);
        assert_eq!(t.lines().count(), TAIL_LINES);
        assert!(t.ends_with("line 199"));
        let wide = "é".repeat(10_000);
        assert!(tail(&wide).len() <= TAIL_BYTES + 4);
    }
}
