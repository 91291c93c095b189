//! Cases of a loop that keeps its state from run to run (issue 25, item 5):
//! the Stop as a long loop pays it turn after turn, not the first Stop of
//! a loop adopted from the project's file (the other loop cases).
//!
//! - 6: the steady state. The loop's folder is kept; each run is a new turn
//!   (its words carry the run's number), that only talked (the guard's
//!   record is there and empty), with the no-progress breaker off.
//! - 7: an edited turn (the guard recorded a `Write`), breaker on, in a
//!   repository of N tracked files (`--repo-files`): what a Stop pays in a
//!   large repository. The repositories are made once under `--repo-dir`
//!   and reused by later runs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::case::{Case, Expect, LOOP_TARGET_MS, Target};
use crate::fixtures::{PROMISELESS, SESSION, STATE_FILE, plain_state_with, project, stop_input};

/// Where the repositories of cases 7 are, and their sizes.
pub(crate) struct Repos {
    pub dir: PathBuf,
    pub files: Vec<usize>,
}

/// Cases 6 and 7, each run once already (the loop adopted, its folder made).
pub(crate) fn cases(
    root: &Path,
    hook: &Path,
    transcript: &Path,
    repos: &Repos,
) -> io::Result<Vec<Case>> {
    let mut cases = Vec::new();
    let talk = project(root, "steady-talk")?;
    let state = plain_state_with("max_stalls: 0\n");
    cases.push(steady(
        "6. steady state: the loop keeps its folder, a new turn each run, talk only, no breaker",
        hook,
        talk,
        transcript,
        &state,
        None,
    )?);
    for &n in &repos.files {
        let repo = repository(&repos.dir, n)?;
        let line = format!("{SESSION}\tWrite\n").into_bytes();
        cases.push(steady(
            &format!("7. edited turn (the guard recorded a Write), breaker on, {n} tracked files"),
            hook,
            repo,
            transcript,
            &plain_state_with(""),
            Some(line),
        )?);
    }
    Ok(cases)
}

/// A loop case whose folder is kept: set up once from `state`, then each
/// run a new turn, with `tools` appended to the guard's record first.
fn steady(
    label: &str,
    hook: &Path,
    project: PathBuf,
    transcript: &Path,
    state: &str,
    tools: Option<Vec<u8>>,
) -> io::Result<Case> {
    let words = format!("{PROMISELESS} (turn {{RUN}})");
    let mut case = Case {
        label: label.into(),
        program: hook.to_path_buf(),
        args: Vec::new(),
        stdin: stop_input(&project, transcript, Some(&words), true),
        reset: Vec::new(),
        append: Vec::new(),
        project,
        expect: Expect::Block,
        target: Target::Ms(LOOP_TARGET_MS),
        rss_target: true,
    };
    // A loop from an earlier bench run goes: this one starts at iteration 1.
    match fs::remove_dir_all(case.data_dir()) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    fs::write(case.project.join(STATE_FILE), state)?;
    // The first Stop adopts the project's file and makes the loop's folder.
    case.run_once(usize::MAX)?;
    let folder = fs::read_dir(case.data_dir().join("loops"))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .ok_or_else(|| io::Error::other(format!("{label}: no loop folder after the first Stop")))?;
    // The guard's record, as a loop started by ralph has it: empty (the
    // Stop empties it after each turn).
    let record = folder.join("turn-tools");
    fs::write(&record, "")?;
    if let Some(line) = tools {
        case.append.push((record, line));
    }
    Ok(case)
}

/// A git repository of `n` small committed files under `dir`, made once.
fn repository(dir: &Path, n: usize) -> io::Result<PathBuf> {
    let repo = dir.join(format!("files-{n}"));
    let done = repo.join(".git").join("ralph-bench-done");
    if done.is_file() {
        fs::create_dir_all(repo.join(".claude"))?;
        return Ok(repo);
    }
    eprintln!(
        "ralph-bench: making a repository of {n} files in {} (once) ...",
        repo.display()
    );
    let _ = fs::remove_dir_all(&repo);
    for i in 0..n {
        let file = repo.join(format!("src/d{:03}/f{i:06}.txt", i / 1000));
        if i % 1000 == 0
            && let Some(parent) = file.parent()
        {
            fs::create_dir_all(parent)?;
        }
        fs::write(
            &file,
            format!("file {i}\nsome text so that it is not empty\n"),
        )?;
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args([
                "-c",
                "user.name=ralph-bench",
                "-c",
                "user.email=b@example.invalid",
            ])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&repo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
    };
    if !(git(&["init", "-q"])? && git(&["add", "-A"])? && git(&["commit", "-q", "-m", "files"])?) {
        return Err(io::Error::other(format!(
            "git failed in {}",
            repo.display()
        )));
    }
    fs::create_dir_all(repo.join(".claude"))?;
    fs::write(done, "")?;
    Ok(repo)
}

/// The label of a case run with the build before (`--versus`).
const BEFORE: &str = "before: ";

/// Each case again with the binary of the same name in `before`, right
/// after it: run by run, both builds meet the same load.
pub(crate) fn pair_with(cases: &mut Vec<Case>, before: &Path) {
    let mut paired = Vec::with_capacity(cases.len() * 2);
    for case in cases.drain(..) {
        let name = case.program.file_name().map(|n| n.to_os_string());
        let old = name
            .map(|n| before.join(n))
            .filter(|p| p.is_file() && !case.label.starts_with("reference"));
        let twin = old.map(|program| Case {
            label: format!("{BEFORE}{}", case.label),
            program,
            ..case.clone()
        });
        paired.push(case);
        paired.extend(twin);
    }
    *cases = paired;
}

/// This build against the one before, case by case: medians, the median of
/// the run-by-run ratios (the two ran one after the other, so a burst of
/// load from elsewhere hits both), and each above the `/bin/true` floor.
pub(crate) fn paired(cases: &[Case], samples: &[Vec<std::time::Duration>]) -> String {
    use std::fmt::Write;
    let ms = |d: &std::time::Duration| d.as_secs_f64() * 1000.0;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let floor = cases
        .iter()
        .position(|c| c.label.starts_with("reference"))
        .map_or(f64::NAN, |i| median(samples[i].iter().map(ms).collect()));
    let mut out = String::new();
    if !cases.iter().any(|c| c.label.starts_with(BEFORE)) {
        return out;
    }
    let _ = writeln!(out, "\n## This build against the build before (paired)\n");
    let _ = writeln!(out, "floor (/bin/true, median): {floor:.3} ms\n");
    let _ = writeln!(
        out,
        "| case | before ms | after ms | before − floor | after − floor | median of run ratios after/before |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for (i, case) in cases.iter().enumerate() {
        let Some(j) = cases
            .iter()
            .position(|c| c.label == format!("{BEFORE}{}", case.label))
        else {
            continue;
        };
        let (after, before) = (&samples[i], &samples[j]);
        let ratios = after
            .iter()
            .zip(before)
            .map(|(a, b)| ms(a) / ms(b))
            .collect();
        let (a, b) = (
            median(after.iter().map(ms).collect()),
            median(before.iter().map(ms).collect()),
        );
        let _ = writeln!(
            out,
            "| {} | {b:.3} | {a:.3} | {:+.3} | {:+.3} | {:.3} |",
            case.label,
            b - floor,
            a - floor,
            median(ratios)
        );
    }
    out
}
