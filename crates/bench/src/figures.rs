//! The report: the machine and the setup, then one table row per case
//! (median, p90, max, peak RSS, each beside its target) and the transcript
//! size comparisons.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::MIB;
use crate::args::Args;
use crate::case::{Case, RSS_RUNS, Target};
use crate::cases::Setup;
use crate::fixtures::{PROJECT_CHANGED, PROJECT_FILES};

const TRANSCRIPT_DIFF_TARGET_MS: f64 = 0.5;
/// 6 MiB, in the KiB that `ru_maxrss` (and GNU time's `%M`) count in.
const RSS_TARGET_KIB: u64 = 6 * 1024;

pub(crate) struct Stats {
    median: Duration,
    p90: Duration,
    max: Duration,
}

impl Stats {
    pub(crate) fn of(samples: &mut [Duration]) -> Stats {
        samples.sort_unstable();
        let at = |q: usize| samples[(samples.len() * q).div_ceil(100).max(1) - 1];
        Stats {
            median: at(50),
            p90: at(90),
            max: samples[samples.len() - 1],
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

pub(crate) fn header(
    out: &mut String,
    args: &Args,
    hook: &Path,
    tmp: &Path,
    load: &str,
    setup: &Setup,
) {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let _ = writeln!(out, "# ralph-stop-hook, whole-process figures\n");
    let _ = writeln!(out, "- date: {}", utc_now());
    let _ = writeln!(
        out,
        "- machine: {cpus} CPUs, {cpu}, Linux {}; load average at start: {}",
        kernel.trim(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(out, "- hook: {}", hook.display());
    if args.copies > 1 {
        let _ = writeln!(
            out,
            "- each case's binary run from {} fresh copies in turn (`--copies`)",
            args.copies
        );
    }
    let _ = writeln!(out, "- temp projects: {} ({})", tmp.display(), fs_type(tmp));
    let _ = writeln!(
        out,
        "- each project: {}, {PROJECT_FILES} source files, {PROJECT_CHANGED} changed and {PROJECT_CHANGED} untracked",
        if tmp.join("projects/no-loop/.git").is_dir() {
            "a git repository"
        } else {
            "a plain folder (git missing: no `git status` cost is measured)"
        }
    );
    let _ = writeln!(
        out,
        "- {} measured runs per case after {} warm-up runs, cases interleaved; times are spawn + write stdin + read stdout + wait",
        args.runs, args.warmup
    );
    let _ = writeln!(
        out,
        "- transcripts: small {} B; big {:.1} MiB (history of past turns, then the small transcript's lines); long last turn {:.1} MiB. PRD: {} KiB",
        setup.small_transcript_bytes,
        setup.big_transcript_bytes as f64 / MIB as f64,
        setup.long_turn_bytes as f64 / MIB as f64,
        setup.prd_bytes / 1024
    );
    let _ = writeln!(
        out,
        "- verdicts compare the median with the target; peak RSS is the largest of {RSS_RUNS} runs under GNU time (`%M`, KiB; target {RSS_TARGET_KIB} KiB)\n"
    );
}

pub(crate) fn table(out: &mut String, cases: &[Case], stats: &[Stats], rss: &[Option<u64>]) {
    let _ = writeln!(
        out,
        "| case | median ms | p90 ms | max ms | target | verdict | peak RSS KiB | RSS verdict |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|---|---:|---|");
    for ((case, s), rss) in cases.iter().zip(stats).zip(rss) {
        let (target, v) = match case.target {
            Target::None => ("-".to_string(), "-"),
            Target::Ms(t) => (format!("≤ {t} ms"), verdict(ms(s.median) <= t)),
        };
        let (rss_text, rss_v) = match rss {
            None => ("n/a (no GNU time)".to_string(), "-"),
            Some(k) if case.rss_target => (k.to_string(), verdict(*k <= RSS_TARGET_KIB)),
            Some(k) => (k.to_string(), "-"),
        };
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.3} | {target} | {v} | {rss_text} | {rss_v} |",
            case.label,
            ms(s.median),
            ms(s.p90),
            ms(s.max)
        );
    }
}

/// Transcript size must not matter: compare the cases that differ only by it.
pub(crate) fn differences(out: &mut String, cases: &[Case], stats: &[Stats]) {
    let find = |prefix: &str| cases.iter().position(|c| c.label.starts_with(prefix));
    let pairs = [
        (
            "5b",
            "5a",
            "100 MB vs 1 KB transcript, no breaker, no last_assistant_message (5b - 5a)",
        ),
        (
            "3b",
            "3a",
            "100 MB vs 1 KB transcript, no last_assistant_message (3b - 3a)",
        ),
        (
            "2b",
            "2a",
            "100 MB vs 1 KB transcript, last_assistant_message without the promise (2b - 2a)",
        ),
    ];
    let _ = writeln!(
        out,
        "\n| comparison | median difference | p90 difference | target | verdict |"
    );
    let _ = writeln!(out, "|---|---:|---:|---|---|");
    for (big, small, label) in pairs {
        let (Some(b), Some(s)) = (find(big), find(small)) else {
            continue;
        };
        let diff = ms(stats[b].median) - ms(stats[s].median);
        let diff90 = ms(stats[b].p90) - ms(stats[s].p90);
        let _ = writeln!(
            out,
            "| {label} | {diff:+.3} ms | {diff90:+.3} ms | ≤ {TRANSCRIPT_DIFF_TARGET_MS} ms | {} |",
            verdict(diff <= TRANSCRIPT_DIFF_TARGET_MS)
        );
    }
}

/// Case 8 against case 6: what waiting for a late transcript costs beyond
/// the line's own lateness (the wake-up and the second read).
pub(crate) fn late_transcript(out: &mut String, cases: &[Case], stats: &[Stats]) {
    let find = |prefix: &str| cases.iter().position(|c| c.label.starts_with(prefix));
    let (Some(late), Some(steady)) = (find("8."), find("6.")) else {
        return;
    };
    let lateness = ms(crate::steady::LATE);
    let beyond = ms(stats[late].median) - lateness - ms(stats[steady].median);
    let beyond90 = ms(stats[late].p90) - lateness - ms(stats[steady].p90);
    let _ = writeln!(
        out,
        "\n| the transcript's wait | median | p90 |\n|---|---:|---:|\n| case 8 − {lateness:.0} ms − case 6: the wait beyond the line's lateness | {beyond:+.3} ms | {beyond90:+.3} ms |"
    );
}

/// The file system the temp projects live on: creating, renaming and
/// appending to files (every block does all three) cost more on a disk
/// than on tmpfs.
fn fs_type(path: &Path) -> String {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, mount, kind) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), kind.to_string()))
        })
        .max()
        .map(|(_, kind)| kind)
        .unwrap_or_else(|| "unknown file system".into())
}

/// "YYYY-MM-DD HH:MM UTC" without a date crate (civil-from-days, H. Hinnant).
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem / 60) % 60
    )
}

/// Cases whose output said they took another path than their label names.
pub(crate) fn warnings(out: &mut String, cases: &[Case], wrong: &[(usize, Option<String>)]) {
    for (case, (n, sample)) in cases.iter().zip(wrong) {
        if let Some(sample) = sample {
            let _ = writeln!(
                out,
                "\nWARNING: {} gave unexpected output in {n} runs (the figures may not measure the path named). First one:\n{}",
                case.label,
                sample.trim()
            );
        }
    }
}
