//! The working tree, seen from the loop: its fingerprint, and check commands
//! run in it. Does I/O (spawns git, through `git`, and `sh -c`).

use crate::clock;
use crate::git::Git;
use crate::verify::{self, CheckResult};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fingerprint of the working tree: HEAD, plus every changed or untracked
/// path with its status, size and mtime (so re-editing an already-modified
/// file changes it too). ralph's own files (`.claude/ralph-*`,
/// `.ralph-blocker.md`) are left out: they change at every Stop, and a
/// project that does not git-ignore `.claude/` would otherwise never look
/// stalled. `None` outside a git repository.
pub fn fingerprint(root: &Path) -> Option<String> {
    // A read: git never takes the index lock for a refresh (we only look),
    // and nothing of the repository's runs (`git::Git`).
    let out = Git::read(root)
        .run(&[
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=all",
        ])
        .ok()?;
    let mut hash = Fnv::new();
    for (record, path) in status_records(&out) {
        if path.is_some_and(is_ralph_file) {
            continue;
        }
        hash.write(record);
        hash.write(&[0]);
        if let Some(path) = path
            && let Ok(meta) = std::fs::symlink_metadata(root.join(path))
        {
            hash.write(&meta.len().to_le_bytes());
            if let Ok(m) = meta.modified()
                && let Ok(d) = m.duration_since(std::time::UNIX_EPOCH)
            {
                hash.write(&d.as_nanos().to_le_bytes());
            }
        }
    }
    Some(format!("{:016x}", hash.0))
}

/// The records of `git status --porcelain=v2 -z`, each with the path it is
/// about (`None` for `# branch` headers). Paths may hold spaces, so they are
/// found by field count; a rename record is followed by its original path,
/// which is skipped.
fn status_records(out: &[u8]) -> Vec<(&[u8], Option<&str>)> {
    let mut records = Vec::new();
    let mut items = out.split(|b| *b == 0).filter(|r| !r.is_empty());
    while let Some(record) = items.next() {
        // Fields before the path: `1` has 8, `2` has 9 (then the original
        // path follows as its own item), `u` has 10, `?` and `!` have 1.
        let fields = match record.first() {
            Some(b'1') => 8,
            Some(b'2') => {
                items.next();
                9
            }
            Some(b'u') => 10,
            Some(b'?') | Some(b'!') => 1,
            _ => {
                records.push((record, None));
                continue;
            }
        };
        let path = record
            .splitn(fields + 1, |b| *b == b' ')
            .nth(fields)
            .and_then(|p| std::str::from_utf8(p).ok());
        records.push((record, path));
    }
    records
}

/// ralph's own files, which change at every Stop.
pub(crate) fn is_ralph_file(path: &str) -> bool {
    path.starts_with(".claude/ralph-") || path == ".ralph-blocker.md"
}

/// The commit checked out in `root` (`git rev-parse HEAD`): `None` outside
/// git or before the first commit.
pub fn head(root: &Path) -> Option<String> {
    let sha = Git::read(root)
        .text(&["rev-parse", "--verify", "-q", "HEAD"])
        .ok()?;
    (!sha.is_empty()).then_some(sha)
}

/// Run `command` with `sh -c` in `root`, at most `timeout`; of what it
/// prints, the tail is kept.
pub fn run_check(
    root: &Path,
    command: &str,
    timeout: Duration,
    fingerprint: Option<String>,
) -> CheckResult {
    let started = Instant::now();
    let time = clock::now_rfc3339();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(root);
    let (exit, timed_out, output_tail) = match run_bounded(&mut cmd, timeout) {
        Ok(b) => (b.exit, b.timed_out, b.output),
        Err(e) => (None, false, format!("could not start `sh -c`: {e}")),
    };
    CheckResult {
        command: command.to_string(),
        exit,
        timed_out,
        output_tail,
        fingerprint,
        time,
        duration_ms: started.elapsed().as_millis() as u64,
        pinned: false,
        put_back: Vec::new(),
    }
}

/// A process run by [`run_bounded`].
#[derive(Debug)]
pub struct Bounded {
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// The tail of its stdout and stderr, interleaved as written.
    pub output: String,
}

/// Run `cmd` (no stdin) in its own process group, so a timeout kills the
/// whole tree it started, at most `timeout`; stdout and stderr go to a temp
/// file (no pipe to fill up), of which the tail is kept.
pub fn run_bounded(cmd: &mut Command, timeout: Duration) -> std::io::Result<Bounded> {
    let (exit, timed_out, [output, _]) = spawn_bounded(cmd, timeout, false)?;
    Ok(Bounded {
        exit,
        timed_out,
        output: verify::tail(&String::from_utf8_lossy(&output)),
    })
}

/// A process run by [`run_bounded_capture`]: its whole stdout (up to
/// [`CAPTURE_LIMIT`]) apart from the tail of its stderr.
#[derive(Debug)]
pub struct Captured {
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr_tail: String,
}

/// The most of a process's stdout [`run_bounded_capture`] reads.
pub const CAPTURE_LIMIT: u64 = 256 << 20;

/// [`run_bounded`], keeping stdout whole and apart (git's `-z` output, a
/// diff): the same process group, timeout and temp files.
pub fn run_bounded_capture(cmd: &mut Command, timeout: Duration) -> std::io::Result<Captured> {
    let (exit, timed_out, [stdout, stderr]) = spawn_bounded(cmd, timeout, true)?;
    Ok(Captured {
        exit,
        timed_out,
        stdout,
        stderr_tail: verify::tail(&String::from_utf8_lossy(&stderr)),
    })
}

/// The one way ralph runs a process it waits for: no stdin, its own process
/// group (a timeout kills the whole tree), output to temp files (no pipe to
/// fill up), removed after. `apart`: stdout and stderr in two files (stdout
/// read whole, up to [`CAPTURE_LIMIT`]; stderr's tail), else one file, its
/// tail in the first slot.
fn spawn_bounded(
    cmd: &mut Command,
    timeout: Duration,
    apart: bool,
) -> std::io::Result<(Option<i32>, bool, [Vec<u8>; 2])> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let started = Instant::now();
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
    let texts = if apart {
        [read_all(&out_path), read_end(&err_path)]
    } else {
        [read_end(&out_path), Vec::new()]
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

/// The end of a possibly huge output file, without reading it whole
/// (enough for [`verify::tail`]).
fn read_end(path: &Path) -> Vec<u8> {
    let Ok(mut f) = File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let keep = (verify::TAIL_BYTES as u64) * 4;
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

/// FNV-1a, 64 bit: a stable fingerprint hash with no dependency.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_records_find_paths_with_spaces_and_skip_rename_origins() {
        let out = b"# branch.oid abc\x001 .M N... 100644 100644 100644 h1 h2 my file.rs\x002 R. N... 100644 100644 100644 h1 h2 R100 new name.rs\x00old name.rs\x00? .claude/ralph-loop.local.md\x00? notes.txt\x00";
        let paths: Vec<Option<&str>> = status_records(out).into_iter().map(|(_, p)| p).collect();
        assert_eq!(
            paths,
            [
                None,
                Some("my file.rs"),
                Some("new name.rs"),
                Some(".claude/ralph-loop.local.md"),
                Some("notes.txt")
            ]
        );
        assert!(is_ralph_file(".claude/ralph-loop.local.md"));
        assert!(is_ralph_file(".claude/ralph-guard.wrap-noted"));
        assert!(!is_ralph_file(".claude/settings.json"));
    }

    #[test]
    fn check_passes_fails_and_times_out() {
        let dir = std::env::temp_dir();
        let ok = run_check(&dir, "echo hello", Duration::from_secs(10), None);
        assert!(ok.passed());
        assert_eq!(ok.output_tail, "hello");
        let bad = run_check(&dir, "echo nope >&2; exit 3", Duration::from_secs(10), None);
        assert_eq!(bad.exit, Some(3));
        assert_eq!(bad.output_tail, "nope");
        let slow = run_check(
            &dir,
            "sleep 5 & sleep 5; echo never",
            Duration::from_millis(200),
            None,
        );
        assert!(slow.timed_out && !slow.passed());
        assert!(slow.duration_ms < 3000, "{}", slow.duration_ms);
    }
}
