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
//! - 8: case 6 with the turn's last line written 40 ms after the hook
//!   starts, as the client writes it (docs/client-measurements.md): the
//!   Stop waits for it (`transcript::written`); its time less those 40 ms is
//!   what the wait costs beyond the line's own lateness.
//!
//! Each run's turn is in the transcript before the Stop reads it (in case
//! 8, all but its last line): a feed and the words the Stop is handed.

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
/// With `before` (`--versus`), each is followed by its twin run by the
/// binary of the same name there, in a project and loop folder of its own:
/// the two builds may write the state differently (the seal inside it or
/// beside it), and one would take the other's state for tampering.
pub(crate) fn cases(
    root: &Path,
    hook: &Path,
    transcript: &Path,
    repos: &Repos,
    before: Option<&Path>,
) -> io::Result<Vec<Case>> {
    let mut cases = Vec::new();
    let builds = builds(hook, before);
    for (prefix, hook) in &builds {
        let talk = project(root, &format!("steady-talk{}", suffix(prefix)))?;
        let state = plain_state_with("max_stalls: 0\n");
        cases.push(steady(
            &format!("{prefix}6. steady state: the loop keeps its folder, a new turn each run, talk only, no breaker"),
            hook,
            talk,
            transcript,
            &state,
            None,
        )?);
    }
    let mut late = steady(
        &format!(
            "8. case 6, the turn's last line written {} ms after the Stop starts (the Stop waits for it)",
            LATE.as_millis()
        ),
        hook,
        project(root, "steady-late")?,
        transcript,
        &plain_state_with("max_stalls: 0\n"),
        None,
    )?;
    // The feed before the run, the words while it runs.
    let (feed, said) = turn_lines();
    let own = own_transcript(&late.project);
    late.append.retain(|(path, _)| path != &own);
    late.append.push((own.clone(), feed));
    late.late = Some((own, said, LATE));
    // Its figure is the difference with case 6 (the report's last table).
    late.target = Target::None;
    cases.push(late);
    for &n in &repos.files {
        for (prefix, hook) in &builds {
            let repo = repository(&repos.dir, n, suffix(prefix))?;
            let line = format!("{SESSION}\tWrite\n").into_bytes();
            cases.push(steady(
                &format!("{prefix}7. edited turn (the guard recorded a Write), breaker on, {n} tracked files"),
                hook,
                repo,
                transcript,
                &plain_state_with(""),
                Some(line),
            )?);
        }
    }
    Ok(cases)
}

/// How late case 8's last line comes.
pub(crate) const LATE: std::time::Duration = std::time::Duration::from_millis(40);

/// A run's turn as the client writes it: the Stop's feed, then the words
/// the Stop is handed (`{RUN}`: the run's number).
fn turn_lines() -> (Vec<u8>, Vec<u8>) {
    let feed = serde_json::json!({"type": "user", "message": {"role": "user",
        "content": "Stop hook feedback:\nMake every test in tests/ pass. (iteration {RUN})"}});
    let said = serde_json::json!({"type": "assistant", "uuid": "bench-{RUN}",
        "message": {"id": "msg_bench_{RUN}", "role": "assistant",
            "content": [{"type": "text", "text": format!("{PROMISELESS} (turn {{RUN}})")}],
            "usage": {"input_tokens": 900, "output_tokens": 60}}});
    (
        format!("{feed}\n").into_bytes(),
        format!("{said}\n").into_bytes(),
    )
}

/// A steady case's own transcript (its runs append their turns to it).
fn own_transcript(project: &Path) -> PathBuf {
    let mut name = project.as_os_str().to_owned();
    name.push(".transcript.jsonl");
    PathBuf::from(name)
}

/// This build, then (with `--versus`) the one before: label prefix, hook.
fn builds(hook: &Path, before: Option<&Path>) -> Vec<(&'static str, PathBuf)> {
    let mut builds = vec![("", hook.to_path_buf())];
    let old = before.zip(hook.file_name()).map(|(d, n)| d.join(n));
    builds.extend(old.filter(|p| p.is_file()).map(|p| (BEFORE, p)));
    builds
}

/// The folder-name suffix of the build before's projects.
fn suffix(prefix: &str) -> &'static str {
    if prefix.is_empty() { "" } else { "-before" }
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
    // Its own copy of the transcript, to which each run adds its turn.
    let own = own_transcript(&project);
    fs::copy(transcript, &own)?;
    let (feed, said) = turn_lines();
    let mut case = Case {
        label: label.into(),
        program: hook.to_path_buf(),
        copies: Vec::new(),
        args: Vec::new(),
        stdin: stop_input(&project, &own, Some(&words), true),
        reset: Vec::new(),
        append: Vec::new(),
        late: None,
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
    case.append.push((own, [feed, said].concat()));
    Ok(case)
}

/// A git repository of `n` small committed files under `dir`, made once
/// (`tag`: another one of the same size, for the build before).
fn repository(dir: &Path, n: usize, tag: &str) -> io::Result<PathBuf> {
    let repo = dir.join(format!("files-{n}{tag}"));
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
pub(crate) const BEFORE: &str = "before: ";

/// Each case again with the binary of the same name in `before`, right
/// after it: run by run, both builds meet the same load.
pub(crate) fn pair_with(cases: &mut Vec<Case>, before: &Path) {
    let mut paired = Vec::with_capacity(cases.len() * 2);
    let twinned: Vec<String> = cases
        .iter()
        .filter_map(|c| c.label.strip_prefix(BEFORE).map(str::to_string))
        .collect();
    for case in cases.drain(..) {
        // The steady cases have their twins already, in folders of their own;
        // case 8 measures a wait the build before does not make.
        if case.label.starts_with(BEFORE) || twinned.contains(&case.label) || case.late.is_some() {
            paired.push(case);
            continue;
        }
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
