//! The working tree, seen from the loop: its fingerprint, and check commands
//! run in it. Does I/O (spawns git, through `git`, and `sh -c`).

use crate::bounded::run_bounded;
use crate::clock;
use crate::git::Git;
use crate::score::launch::{Launch, ReportFormat};
use crate::score::{Runner, Score, report};
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
/// prints, the tail is kept, and its score read. `reports`: ralph's folder
/// for the runners' reports (`LoopPaths::reports`), where a runner ralph
/// knows is asked for its structured report (`score::launch`); `None`:
/// the command as written, read by its words.
pub(crate) fn run_check(
    root: &Path,
    command: &str,
    timeout: Duration,
    fingerprint: Option<String>,
    reports: Option<&Path>,
) -> CheckResult {
    let started = Instant::now();
    let time = clock::now_rfc3339();
    let launch = reports.and_then(|dir| prepare(dir, command));
    let mut ran = run_once(
        root,
        launch.as_ref().map_or(command, |l| &l.command),
        launch.as_ref(),
        timeout,
    );
    let mut score = ran
        .as_ref()
        .ok()
        .and_then(|r| r.report_score(root, launch.as_ref()));
    // A runner too old for the flag ralph added fails without a report:
    // the user's command, as written, decides.
    if score.is_none()
        && let Some(l) = &launch
        && l.command != command
        && ran
            .as_ref()
            .is_ok_and(|r| !r.bounded.timed_out && r.bounded.exit != Some(0))
    {
        ran = run_once(root, command, None, timeout);
    }
    if let Some(l) = &launch {
        clean_up(l);
    }
    let (exit, timed_out, output_tail, read) = match ran {
        Ok(r) => {
            let passed = r.bounded.exit == Some(0) && !r.bounded.timed_out;
            let score = score
                .take()
                .unwrap_or_else(|| r.text_score(root, command, passed));
            (
                r.bounded.exit,
                r.bounded.timed_out,
                r.tail,
                Some(Box::new(score)),
            )
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
        score: read,
        not_run: false,
    }
}

/// One run of a check: how it ended, its output, when it started.
struct Ran {
    bounded: crate::bounded::Bounded,
    whole: String,
    tail: String,
    since: std::time::SystemTime,
}

/// `command` run once (with the launch's variables, when it has them).
fn run_once(
    root: &Path,
    command: &str,
    launch: Option<&Launch>,
    timeout: Duration,
) -> std::io::Result<Ran> {
    let since = std::time::SystemTime::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(root);
    for (k, v) in launch.map(|l| l.env.as_slice()).unwrap_or_default() {
        cmd.env(k, v);
    }
    let (bounded, whole) = run_bounded(&mut cmd, timeout)?;
    let events = launch.is_some_and(|l| matches!(l.report, Some((ReportFormat::GoEvents, _))));
    // `go test -json` printed its events: the model reads its words.
    let tail = if events {
        crate::bounded::tail(&crate::score::report::go_words(&whole))
    } else {
        bounded.output.clone()
    };
    Ok(Ran {
        bounded,
        whole,
        tail,
        since,
    })
}

impl Ran {
    /// The score of the runner's report, when this run wrote one whole (a
    /// run cut by its timeout wrote none that counts).
    fn report_score(&self, root: &Path, launch: Option<&Launch>) -> Option<Score> {
        let launch = launch?;
        let (format, path) = launch.report.as_ref()?;
        if self.bounded.timed_out {
            return None;
        }
        let runner = launch.runner.unwrap_or(Runner::Pytest);
        let root_text = root.display().to_string();
        if *format == ReportFormat::GoEvents {
            return report::read(*format, runner, &self.whole, &root_text);
        }
        let text = fresh_report(path, self.since)?;
        let score = report::read(*format, runner, &text, &root_text)?;
        if launch.indirect {
            // pytest somewhere inside the command: its report counts where
            // the one closing line printed agrees (a script may run pytest
            // twice, each run writing the same file over).
            let said = crate::score::runners::read(&self.whole, false, false);
            let agree = said.reader == Runner::Pytest
                && (said.passed, said.failed, said.skipped)
                    == (score.passed, score.failed, score.skipped);
            return agree.then_some(score);
        }
        Some(score)
    }

    /// The score of the printed words (or of the JUnit report the user's
    /// command names); a run cut by its timeout counts nothing.
    fn text_score(&self, root: &Path, command: &str, passed: bool) -> Score {
        if self.bounded.timed_out {
            return Score::of_exit(false);
        }
        junit_report(root, command, self.since)
            .unwrap_or_else(|| crate::score::runners::read(&self.whole, passed, true))
    }
}

/// The launch of `command` with its report in `dir`, each run its own file
/// (two checks of one Stop never read each other's); files it needs written.
fn prepare(dir: &Path, command: &str) -> Option<Launch> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    std::fs::create_dir_all(dir).ok()?;
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let stem = dir.join(format!("check-{}-{seq}-{nanos}", std::process::id()));
    let addopts = std::env::var("PYTEST_ADDOPTS").ok();
    let launch = crate::score::launch::launch(command, &stem, addopts.as_deref());
    if let Some((_, path)) = &launch.report {
        let _ = std::fs::remove_file(path);
    }
    for (path, text) in &launch.files {
        std::fs::write(path, text).ok()?;
    }
    Some(launch)
}

/// The launch's report and files removed (the folder holds none between checks).
fn clean_up(launch: &Launch) {
    if let Some((_, path)) = &launch.report
        && path.is_absolute()
    {
        let _ = std::fs::remove_file(path);
    }
    for (path, _) in &launch.files {
        let _ = std::fs::remove_file(path);
    }
}

/// A report's text when this run wrote it: changed since the run started,
/// a plain file, no larger than a score reads.
fn fresh_report(path: &Path, since: std::time::SystemTime) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let fresh = meta.is_file()
        && meta.len() <= crate::bounded::SCORE_READ_LIMIT
        && meta.modified().ok()? >= since;
    fresh.then(|| std::fs::read_to_string(path).ok()).flatten()
}

/// The JUnit XML report a check's command names (`--junitxml=out.xml`,
/// `--junit-xml out.xml`, `mochaFile=out.xml`, `report.xml`), when it was
/// written by this run, read as a score.
fn junit_report(root: &Path, command: &str, since: std::time::SystemTime) -> Option<Score> {
    command
        .split(|c: char| c.is_whitespace() || c == '=' || c == '\'' || c == '"')
        .filter(|word| word.ends_with(".xml"))
        .find_map(|word| {
            let text = fresh_report(&root.join(word), since)?;
            report::read(
                ReportFormat::Junit,
                Runner::Junit,
                &text,
                &root.display().to_string(),
            )
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
    #[cfg_attr(
        windows,
        ignore = "needs git on PATH (Git for Windows), which Wine here has not"
    )]
    fn a_fingerprint_passes_over_the_sandboxs_placeholders_not_the_work() {
        let dir = std::env::temp_dir().join(format!("ralph-fp-ph-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::test_git::repo_with_commit(&dir, "a.txt");
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
    #[cfg_attr(
        windows,
        ignore = "needs git on PATH (Git for Windows), which Wine here has not"
    )]
    fn in_a_project_below_the_top_ralphs_files_are_passed_over_too() {
        let top = std::env::temp_dir().join(format!("ralph-fp-sub-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let dir = top.join("app");
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        crate::test_git::repo_with_commit(&top, "app/a.txt");
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
    #[cfg_attr(
        windows,
        ignore = "a check runs in sh: sh on PATH (Git for Windows), which Wine here has not"
    )]
    fn check_passes_fails_and_times_out() {
        let dir = std::env::temp_dir();
        let ok = run_check(&dir, "echo hello", Duration::from_secs(10), None, None);
        assert!(ok.passed());
        assert_eq!(ok.output_tail, "hello");
        let bad = run_check(
            &dir,
            "echo nope >&2; exit 3",
            Duration::from_secs(10),
            None,
            None,
        );
        assert_eq!(bad.exit, Some(3));
        assert_eq!(bad.output_tail, "nope");
        let slow = run_check(
            &dir,
            "sleep 5 & sleep 5; echo never",
            Duration::from_millis(200),
            None,
            None,
        );
        assert!(slow.timed_out && !slow.passed());
        assert!(slow.duration_ms < 3000, "{}", slow.duration_ms);
    }
}
