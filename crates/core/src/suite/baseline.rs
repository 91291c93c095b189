//! Taking a measure's baseline. The tree the loop starts from (or the one
//! a story's first feed finds) is committed by ralph with its own index
//! the moment the baseline is asked for, so the agent's first turn cannot
//! change what it measures; a process of ralph's own (`ralph-setup
//! baseline`, started detached: it outlives the hook, measured in
//! docs/client-measurements.md) checks that commit's tree out into a
//! folder in the loop's folder (through an index of its own: nothing of
//! the repository's `.git` is written, no worktree registered), links the
//! project's ignored folders into it (the
//! dependencies a test run needs: `node_modules`, `.venv`), puts the
//! pinned files in, and runs the command there, bounded by
//! `--verify-timeout`. The first turn does not wait for it; a claim does
//! ([`await_or_take`]), and takes it itself when its process is gone.
//! Does I/O (git, the command, the suite's record under the loop lock).

use super::{Baseline, BaselineFailure, BaselineState, Inventory, Suite, Taker};
use crate::git::Git;
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::records::LoopRecord;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One baseline to take: a command, and the story that asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    pub command: String,
    pub story: Option<String>,
}

/// Ignored folders of the project not linked into ralph's copy of the tree: a
/// build's output, which the run makes anew (sharing it would make the
/// agent's builds wait on the baseline's lock), and the loop's own files.
const NOT_LINKED: [&str; 3] = ["target", ".claude", ".git"];

/// The suite with a pending baseline for each of `asks` that has none, on
/// the tree as it is now (ralph's commit of it); `None` when none is new.
/// Under the loop lock: the commit is what the baseline measures.
pub(crate) fn ask(
    paths: &LoopPaths,
    suite: &Suite,
    asks: &[Ask],
    timeout_secs: u64,
) -> Option<Suite> {
    let new: Vec<&Ask> = asks
        .iter()
        .filter(|a| !suite.baselines.contains_key(&a.command))
        .collect();
    if new.is_empty() {
        return None;
    }
    let now = crate::clock::now_rfc3339();
    let commit = crate::score::tree::snapshot(&paths.root, "ralph: the tree a baseline measures");
    let mut next = suite.clone();
    for a in new {
        let state = match &commit {
            Some(_) => BaselineState::Pending {
                since: now.clone(),
                taker: None,
            },
            None => BaselineState::Failed {
                why: BaselineFailure::Worktree(
                    "the project is not in a git repository ralph can commit".into(),
                ),
                time: now.clone(),
            },
        };
        let baseline = Baseline {
            story: a.story.clone(),
            commit: commit.as_ref().map(|(_, c)| c.clone()).unwrap_or_default(),
            timeout_secs,
            state,
        };
        next.baselines.insert(a.command.clone(), baseline);
    }
    Some(next)
}

/// Start the process that takes the baselines `suite` has pending with no
/// taker, detached (its own process group, no terminal, no pipes: it
/// outlives the hook), and name it their taker: the suite to write, under
/// the same lock (the process waits for it). Only the process a baseline
/// names takes it: one the agent starts finds none of its own.
pub(crate) fn start_taker(paths: &LoopPaths, suite: Suite) -> Suite {
    let Some(taker) = spawn(paths) else {
        return suite;
    };
    let mut next = suite;
    for b in next.baselines.values_mut() {
        if let BaselineState::Pending {
            taker: t @ None, ..
        } = &mut b.state
        {
            *t = Some(taker);
        }
    }
    next
}

fn spawn(paths: &LoopPaths) -> Option<Taker> {
    let bin = sibling("ralph-setup")?;
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("baseline")
        .env("CLAUDE_PROJECT_DIR", &paths.root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(data) = paths.dir.parent().and_then(Path::parent) {
        cmd.env("RALPH_DATA_DIR", data);
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd.spawn().ok()?;
    let pid = child.id();
    let start = crate::ancestry::process_id_of(pid).map_or(0, |(_, s)| s);
    Some(Taker { pid, start })
}

/// A program installed beside this one (`ralph-setup` beside the hook or
/// `ralph`), else `$RALPH_BIN_DIR`'s.
fn sibling(name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(&file)));
    let from_env = std::env::var_os("RALPH_BIN_DIR").map(|d| PathBuf::from(d).join(&file));
    beside.into_iter().chain(from_env).find(|p| p.is_file())
}

/// This process, as a baseline names its taker.
fn me() -> Taker {
    let pid = std::process::id();
    let start = crate::ancestry::process_id_of(pid).map_or(0, |(_, s)| s);
    Taker { pid, start }
}

/// `ralph-setup baseline`: take the baselines that name this process as
/// their taker, one after another. How many were taken.
pub fn take_mine(paths: &LoopPaths) -> usize {
    let me = me();
    let mut taken = 0;
    while let Some((command, baseline)) = claim(paths, None, |t| t == Some(me)) {
        let state = measure(paths, &command, &baseline);
        finish(paths, &command, state);
        taken += 1;
    }
    taken
}

/// Before a claim on `command` is judged, outside the lock (the Stop
/// hook): its baseline, done; waited for while its taker runs (up to its
/// timeout and the copy's margin), taken here when its taker is gone.
/// Whether it is done now.
pub(crate) fn await_or_take(paths: &LoopPaths, command: &str) -> bool {
    let started = Instant::now();
    loop {
        let suite = super::read(&paths.suite);
        let Some(b) = suite.baselines.get(command) else {
            return false;
        };
        let BaselineState::Pending { taker, .. } = &b.state else {
            return true;
        };
        let limit = Duration::from_secs(b.timeout_secs) + WORKTREE_MARGIN;
        if taker.is_some_and(alive) && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let gone = |t: Option<Taker>| !t.is_some_and(alive);
        let Some((command, baseline)) = claim(paths, Some(command), gone) else {
            return false;
        };
        let state = measure(paths, &command, &baseline);
        finish(paths, &command, state);
    }
}

/// Time allowed beside the command for ralph's copy of the tree (made and removed).
pub(crate) const WORKTREE_MARGIN: Duration = Duration::from_secs(60);

/// Under the loop lock: the next pending baseline (of `only`, when given)
/// whose taker `takes` accepts, marked as this process's.
fn claim(
    paths: &LoopPaths,
    only: Option<&str>,
    takes: impl Fn(Option<Taker>) -> bool,
) -> Option<(String, Baseline)> {
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT).ok()?;
    let (suite, at) = read_for_write(paths)?;
    let (command, baseline) = suite.pending().find(|(c, b)| {
        only.is_none_or(|o| o == c.as_str())
            && matches!(b.state, BaselineState::Pending { taker, .. } if takes(taker))
    })?;
    let (command, mut baseline) = (command.clone(), baseline.clone());
    baseline.state = BaselineState::Pending {
        since: crate::clock::now_rfc3339(),
        taker: Some(me()),
    };
    let mut next = suite.clone();
    next.baselines.insert(command.clone(), baseline.clone());
    super::write(&paths.suite, &next, at).ok()?;
    Some((command, baseline))
}

/// Under the loop lock: the baseline's outcome recorded, when it is still
/// this process's to record (the loop goes on, nobody else took it).
fn finish(paths: &LoopPaths, command: &str, state: BaselineState) {
    let Ok(_lock) = LoopLock::acquire(&paths.lock, LOCK_WAIT) else {
        return;
    };
    let Some((suite, at)) = read_for_write(paths) else {
        return;
    };
    let ours = suite.baselines.get(command).is_some_and(
        |b| matches!(b.state, BaselineState::Pending { taker: Some(t), .. } if t == me()),
    );
    if !ours {
        return;
    }
    let mut next = suite.clone();
    if let Some(b) = next.baselines.get_mut(command) {
        b.state = state;
    }
    let _ = super::write(&paths.suite, &next, at);
}

/// The suite as ralph wrote it, and the generation its next write takes
/// (above the state's and the file's): `None` when there is no loop, or
/// the suite failed its seal (the tamper check's to tell, not this
/// process's to write over).
fn read_for_write(paths: &LoopPaths) -> Option<(Suite, u64)> {
    let crate::state_file::StateFile::Loop { state, .. } = crate::state_file::read(paths) else {
        return None;
    };
    let read = crate::seal::read_sealed(&paths.suite);
    let suite = super::of_sealed(&read).ok()?;
    let found =
        crate::records::RecordGens::default().with(LoopRecord::Suite, read.generation.unwrap_or(0));
    Some((suite, state.records.max(found).next()))
}

/// Run `command` on the baseline's tree, in ralph's copy of it: its outcome.
fn measure(paths: &LoopPaths, command: &str, baseline: &Baseline) -> BaselineState {
    let time = crate::clock::now_rfc3339();
    let failed = |why| BaselineState::Failed {
        why,
        time: crate::clock::now_rfc3339(),
    };
    let dir = paths.baseline_trees.join(tree_name(command));
    let cwd = match make_tree(paths, &baseline.commit, &dir) {
        Ok(cwd) => cwd,
        Err(e) => return failed(BaselineFailure::Worktree(e)),
    };
    crate::pins::disk::pin_into(paths, &cwd);
    let timeout = Duration::from_secs(baseline.timeout_secs);
    let result = crate::worktree::run_check(&cwd, command, timeout, None, Some(&paths.reports));
    remove_tree(paths, &dir);
    if result.timed_out {
        return failed(BaselineFailure::TimedOut(baseline.timeout_secs));
    }
    match result.score.as_deref() {
        Some(score) if score.reader.counts_tests() => {
            BaselineState::Done(Inventory::of(score, time, result.duration_ms))
        }
        _ => failed(BaselineFailure::NothingCounted),
    }
}

/// The folder of `command`'s copy: its digest, with no `:` in it (a
/// runner puts its folders in `:`-separated lists: cargo's
/// `LD_LIBRARY_PATH` fails to join one that holds it; Windows refuses it).
fn tree_name(command: &str) -> String {
    crate::pins::fnv1a(command.as_bytes()).replace(':', "-")
}

/// ralph's copy of `commit`'s tree at `dir` (read into an index of
/// ralph's own and checked out from it: nothing under the repository's
/// `.git` is written, no worktree is registered there), the project's
/// ignored folders linked in: the folder the command runs in (the
/// project's place in it, when the project is below the repository's top).
fn make_tree(paths: &LoopPaths, commit: &str, dir: &Path) -> Result<PathBuf, String> {
    remove_tree(paths, dir);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let index = dir.with_extension("index");
    let git = Git::write(&paths.root).with_index(&index);
    let checked_out = git
        .run(&["read-tree", commit])
        .and_then(|_| {
            let prefix = format!("{}/", dir.display());
            git.run(&["checkout-index", "-a", "-f", &format!("--prefix={prefix}")])
        })
        .map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&index);
    checked_out?;
    let prefix = Git::read(&paths.root)
        .text(&["rev-parse", "--show-prefix"])
        .unwrap_or_default();
    let cwd = dir.join(prefix.trim_end_matches('/'));
    link_ignored(&paths.root, &cwd);
    Ok(cwd)
}

/// Link the project's ignored top-level folders (a test run's
/// dependencies) into `cwd`, but [`NOT_LINKED`].
fn link_ignored(root: &Path, cwd: &Path) {
    let listed = Git::read(root)
        .text(&[
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            "--no-empty-directory",
        ])
        .unwrap_or_default();
    for entry in listed.lines() {
        let Some(name) = entry.strip_suffix('/') else {
            continue;
        };
        if name.contains('/') || NOT_LINKED.contains(&name) || cwd.join(name).exists() {
            continue;
        }
        link(&root.join(name), &cwd.join(name));
    }
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) {
    let _ = std::os::unix::fs::symlink(target, at);
}

/// Elsewhere a link needs rights a user may not have: the run goes without.
#[cfg(not(unix))]
fn link(_target: &Path, _at: &Path) {}

/// Remove ralph's copy of a tree at `dir` (its links are removed as
/// links: what they point at stays).
fn remove_tree(_paths: &LoopPaths, dir: &Path) {
    if dir.symlink_metadata().is_ok() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Whether the taker still runs (Linux: the same pid and start time in
/// `/proc`; elsewhere it is taken to run until its time is up).
fn alive(taker: Taker) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    crate::ancestry::process_id_of(taker.pid)
        .is_some_and(|(_, start)| taker.start == 0 || start == taker.start)
}
