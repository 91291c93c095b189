//! The working tree, seen from the loop: its fingerprint, and check commands
//! run in it. Does I/O (spawns git, through `git`, and `sh -c`).

use crate::bounded::run_bounded;
use crate::clock;
use crate::git::Git;
use crate::verify::CheckResult;
use std::path::Path;
use std::process::Command;
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
    // git names paths from the top of the work tree; the project may be a
    // folder below it (the client started there: its hooks' `cwd`).
    let top = crate::git::git_root(root).unwrap_or_else(|| root.to_path_buf());
    let below = root.strip_prefix(&top).unwrap_or(Path::new(""));
    let mut hash = Fnv::new();
    for (record, path) in status_records(&out) {
        let in_project = path
            .and_then(|p| Path::new(p).strip_prefix(below).ok())
            .and_then(Path::to_str);
        // The sandbox's placeholders come and go with the agent's commands.
        let placeholder = record.starts_with(b"?")
            && in_project.is_some_and(|p| crate::placeholders::is_placeholder(root, p));
        if in_project.is_some_and(is_ralph_file) || placeholder {
            continue;
        }
        hash.write(record);
        hash.write(&[0]);
        if let Some(path) = path
            && let Ok(meta) = std::fs::symlink_metadata(top.join(path))
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
pub(crate) fn run_check(
    root: &Path,
    command: &str,
    timeout: Duration,
    fingerprint: Option<String>,
) -> CheckResult {
    let started = Instant::now();
    let since = std::time::SystemTime::now();
    let time = clock::now_rfc3339();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(root);
    let (exit, timed_out, output_tail, score) = match run_bounded(&mut cmd, timeout) {
        Ok((b, whole)) => {
            let passed = b.exit == Some(0) && !b.timed_out;
            let score = junit_report(root, command, since)
                .unwrap_or_else(|| crate::score::runners::read(&whole, passed, true));
            (b.exit, b.timed_out, b.output, Some(Box::new(score)))
        }
        Err(e) => (None, false, format!("could not start `sh -c`: {e}"), None),
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
        score,
    }
}

/// The JUnit XML report a check's command names (`--junitxml=out.xml`,
/// `--junit-xml out.xml`, `mochaFile=out.xml`, `report.xml`), when it was
/// written by this run, read as a score.
fn junit_report(
    root: &Path,
    command: &str,
    since: std::time::SystemTime,
) -> Option<crate::score::Score> {
    command
        .split(|c: char| c.is_whitespace() || c == '=' || c == '\'' || c == '"')
        .filter(|word| word.ends_with(".xml"))
        .find_map(|word| {
            let path = root.join(word);
            let meta = std::fs::metadata(&path).ok()?;
            if meta.len() > crate::bounded::SCORE_READ_LIMIT || meta.modified().ok()? < since {
                return None;
            }
            crate::score::runners::junit(&std::fs::read_to_string(&path).ok()?)
        })
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
    fn a_fingerprint_passes_over_the_sandboxs_placeholders_not_the_work() {
        let dir = std::env::temp_dir().join(format!("ralph-fp-ph-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        git(&["add", "a.txt"]);
        git(&["commit", "-qm", "start"]);
        let before = fingerprint(&dir).unwrap();
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        std::fs::write(dir.join(".bashrc"), "").unwrap();
        std::fs::write(dir.join(".claude/commands"), "").unwrap();
        assert_eq!(fingerprint(&dir).unwrap(), before);
        std::fs::write(dir.join(".bashrc"), "export A=1\n").unwrap();
        assert_ne!(fingerprint(&dir).unwrap(), before, "a real .bashrc is work");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn in_a_project_below_the_top_ralphs_files_are_passed_over_too() {
        let top = std::env::temp_dir().join(format!("ralph-fp-sub-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let dir = top.join("app");
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&top)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "start"]);
        std::fs::write(dir.join(".claude/ralph-loop.local.md"), "1").unwrap();
        let before = fingerprint(&dir).unwrap();
        // A Stop rewrites the loop's files: no change of the work.
        std::fs::write(dir.join(".claude/ralph-loop.local.md"), "two").unwrap();
        std::fs::write(dir.join(".claude/ralph-loop.log.jsonl"), "{}").unwrap();
        std::fs::write(dir.join(".bashrc"), "").unwrap();
        assert_eq!(fingerprint(&dir).unwrap(), before);
        std::fs::write(dir.join("a.txt"), "changed, longer\n").unwrap();
        assert_ne!(fingerprint(&dir).unwrap(), before, "the work changed");
        let _ = std::fs::remove_dir_all(&top);
    }

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
