//! Where a project's loop files live.
//!
//! The project root is `CLAUDE_PROJECT_DIR` when Claude Code sets it, else the
//! git root above the hook's `cwd`, else that `cwd`. Resolving from the git
//! root (not the shell's current folder) means a `cd` during the loop never
//! loses the state. The git root is found by walking up for `.git` rather than
//! by spawning git: hooks run on every turn and a process spawn costs more than
//! the whole hook.
//!
//! The loop's authoritative state lives **outside the project tree**, in a
//! per-project folder under ralph's data folder (`$RALPH_DATA_DIR`, else
//! `$CLAUDE_CONFIG_DIR/ralph`, else `~/.claude/ralph`; `loops/<name>-<hash of
//! the project path>/`), where `git stash`, `git clean`, an agent tidying the
//! tree or its file tools do not reach by accident. It holds the state, the
//! check results, the counter and the lock. `.claude/ralph-loop.local.md` in
//! the project stays as a **mirror** in the official plugin's format, for
//! people and tools that read it: rewritten from the authoritative copy at
//! every write, and restored when it was edited or deleted (`mirror_check`).
//! A project file with no authoritative copy (the official plugin's setup, a
//! file the user wrote) is adopted as the loop's state at its first write.
//! One fixed place, not `CLAUDE_PLUGIN_DATA`: that variable reaches hooks only,
//! and its folder's name depends on how the plugin was installed, so the
//! user's terminal and `ralph run` could not find the same loop.
//!
//! `LoopPaths` says where each file is, and only that: each file is read
//! and written by the module that owns it (`state_file` the state and its
//! mirror, `verify::read_log` the results, `blocker::read`,
//! `state_file::read_injected`, `fresh::read_worker`, `prd::read`, `parallel::disk`
//! the board, `review::disk` the verdicts). Does I/O (the git root's walk).

use std::path::{Path, PathBuf};

pub(crate) use crate::file_names::{BLOCKER_FILE, SETTINGS_FILE, VERIFY_FILE};
pub use crate::file_names::{
    LAST_INJECTED_FILE, LOCK_FILE, LOG_FILE, POLICY_FILE, POLICY_FILE_ALT, REVIEW_DIR, STATE_FILE,
};

/// A Stop sweeps the state's leftover temp files when the iteration it saves
/// is a multiple of this: at most this many turns' kills are ever left.
pub const SWEEP_EVERY: u64 = 8;

/// The loop's files in the project, by their names under its root: what
/// the guard keeps from the agent's writes while a loop runs. The state's
/// copy and the log; the names the loop's own files have had in the project
/// (the re-injection counter, the lock, the check results: a forged one
/// would pass the loop's checks); and the loop's configuration
/// ([`CONFIG_FILES`]). Their counterparts in the data folder are
/// [`LoopPaths::own_files`].
pub const PROTECTED_FILES: [&str; 8] = [
    STATE_FILE,
    LAST_INJECTED_FILE,
    LOG_FILE,
    LOCK_FILE,
    VERIFY_FILE,
    POLICY_FILE,
    POLICY_FILE_ALT,
    SETTINGS_FILE,
];

/// The loop files of one project, as absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopPaths {
    pub root: PathBuf,
    /// The loop's own folder, outside the project.
    pub dir: PathBuf,
    /// The authoritative state (in `dir`).
    pub state: PathBuf,
    /// `.claude/ralph-loop.local.md` in the project: a copy of `state`.
    pub mirror: PathBuf,
    pub log: PathBuf,
    pub last_injected: PathBuf,
    pub lock: PathBuf,
    pub blocker: PathBuf,
    pub verify: PathBuf,
    /// The loop's scores, one per scored iteration (`score::history`, sealed).
    pub scores: PathBuf,
    /// Where the test runners ralph knows write their structured reports,
    /// one file per check, removed once read (`score::launch`): out of the
    /// agent's sandbox, like the rest of this folder.
    pub reports: PathBuf,
    /// The suite's memory: each measure's baseline, the tests seen passing,
    /// the removals the user accepted (`suite`, sealed).
    pub suite: PathBuf,
    /// Where ralph's own worktrees of a tree it measures live while a
    /// baseline is taken (`suite::baseline`).
    pub baseline_trees: PathBuf,
    /// The reviewers' verdicts (`--review`), as the Stop hook recorded them.
    pub review: PathBuf,
    /// The tools each turn called, recorded by the guard (see `turn_tools`).
    pub turn_tools: PathBuf,
    /// `--fresh`: the last worker's run (`fresh::WorkerRecord`, JSON).
    pub worker: PathBuf,
    /// `SESSION UNIX_TIME PID`: the owner's session ended with `/clear` (see `continuity`).
    pub handover: PathBuf,
    /// `--parallel`: every worker's worktree and what came of each story
    /// (`parallel::Board`, JSON). Outlives a crash: the next start removes
    /// the worktrees it names.
    pub board: PathBuf,
    /// `--parallel`: the merge queue, one story's merge and check at a time
    /// (held without the loop lock, which a check must never hold).
    pub merge_lock: PathBuf,
    /// `--parallel`: `STORY COMMIT` while a merge into the main tree is under
    /// way (the commit it started from); found by the next holder of the
    /// merge lock, it means that merge was cut short (see `parallel::hooks`).
    pub merging: PathBuf,
    /// `--review`: each reviewer's instructions (`NAME.md`), copied at
    /// start (`review::inputs`); review time reads only these.
    pub reviewers: PathBuf,
    /// `--review`: the absolute path of the `claude` that reviews,
    /// resolved at start.
    pub reviewer_bin: PathBuf,
    /// `--review`: the paths the repository ignored at start (NUL-separated),
    /// to name the ignored ones that appear during the loop.
    pub ignored_at_start: PathBuf,
    /// Pinned checks: the manifest, each pinned file's bytes at start, the
    /// versions put back (see `pins::disk`).
    pub pins: PathBuf,
    /// The repository's configuration as `git::repo_config` read it, with
    /// the stat of every file it came from (`git_config::CacheFile`, JSON).
    pub git_config: PathBuf,
    /// The loop's configuration as the last loop's start and end saw it
    /// (`config_seen`, sealed): outlives the loop, like its folder.
    pub config_seen: PathBuf,
}

impl LoopPaths {
    pub fn new(root: impl Into<PathBuf>) -> LoopPaths {
        let root = root.into();
        LoopPaths::in_data_dir(&data_root(), root)
    }

    /// The loop files of `root` with ralph's data folder at `data`.
    pub fn in_data_dir(data: &Path, root: impl Into<PathBuf>) -> LoopPaths {
        let root = root.into();
        let dir = loop_dir(data, &root);
        LoopPaths {
            state: dir.join("state.md"),
            last_injected: dir.join("last-injected"),
            lock: dir.join("lock"),
            verify: dir.join("verify.json"),
            scores: dir.join("scores.json"),
            reports: dir.join("reports"),
            suite: dir.join("suite.json"),
            baseline_trees: dir.join("baseline"),
            review: dir.join("review.json"),
            turn_tools: dir.join("turn-tools"),
            worker: dir.join("worker"),
            handover: dir.join("handover"),
            board: dir.join("parallel.json"),
            merge_lock: dir.join("merge.lock"),
            merging: dir.join("merging"),
            reviewers: dir.join("reviewers"),
            reviewer_bin: dir.join("reviewer-claude"),
            ignored_at_start: dir.join("ignored-at-start"),
            pins: dir.join("pins"),
            git_config: dir.join("git-config.json"),
            config_seen: dir.join("config-seen"),
            dir,
            mirror: root.join(STATE_FILE),
            log: root.join(LOG_FILE),
            blocker: root.join(BLOCKER_FILE),
            root,
        }
    }

    /// Is there a loop to look at (its state, or a project file to adopt)?
    /// Two stats: the path every turn of every session takes.
    pub fn has_loop(&self) -> bool {
        self.state.exists() || self.mirror.exists()
    }
}

/// ralph's data folder: `$RALPH_DATA_DIR`, else `$CLAUDE_CONFIG_DIR/ralph`,
/// else `$HOME/.claude/ralph`, else a folder in the system's temp folder.
pub fn data_root() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("RALPH_DATA_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("CLAUDE_CONFIG_DIR") {
        return PathBuf::from(dir).join("ralph");
    }
    match var("HOME").or_else(|| var("USERPROFILE")) {
        Some(home) => PathBuf::from(home).join(".claude").join("ralph"),
        None => std::env::temp_dir().join("ralph"),
    }
}

/// The loop folder of the project at `root`: `loops/<folder name>-<hash>`,
/// the hash of the canonical path (FNV-1a, stable across builds and hosts),
/// so two projects with the same folder name never share a loop.
pub(crate) fn loop_dir(data: &Path, root: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let text = canonical.to_string_lossy();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    data.join("loops").join(format!("{name}-{hash:016x}"))
}

impl LoopPaths {
    /// The loop's own records, wherever they live: the state, the log, the
    /// re-injection counter, the lock, the check results. The guard refuses
    /// a file tool's edit of another name (a hard link) of one of these, as
    /// of the [`PROTECTED_FILES`] in the project; the data folder holding
    /// them is protected as a whole.
    pub fn own_files(&self) -> [&Path; 5] {
        [
            &self.state,
            &self.log,
            &self.last_injected,
            &self.lock,
            &self.verify,
        ]
    }
    /// The files that live only as long as the loop (not the log, nor the
    /// check results, which `status` still shows after it).
    pub(crate) fn sidecars(&self) -> [&Path; 4] {
        [
            &self.last_injected,
            &self.turn_tools,
            &self.handover,
            &self.worker,
        ]
    }
}

/// Resolve the project root from `CLAUDE_PROJECT_DIR` (when non-empty) or `cwd`.
pub fn project_root(env_project_dir: Option<&str>, cwd: &Path) -> PathBuf {
    if let Some(dir) = env_project_dir.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    crate::git::git_root(cwd).unwrap_or_else(|| cwd.to_path_buf())
}

/// Resolve the project root from the process environment and a hook's `cwd`
/// (falling back to the process's own current folder).
pub fn project_root_from_env(hook_cwd: Option<&str>) -> PathBuf {
    let env = std::env::var("CLAUDE_PROJECT_DIR").ok();
    let cwd = match hook_cwd.filter(|c| !c.is_empty()) {
        Some(c) => PathBuf::from(c),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    project_root(env.as_deref(), &cwd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file_names::CONFIG_FILES;

    #[test]
    fn env_dir_wins_over_cwd() {
        let root = project_root(Some("/p"), Path::new("/elsewhere"));
        assert_eq!(root, PathBuf::from("/p"));
    }

    #[test]
    fn empty_env_dir_is_ignored() {
        let tmp = std::env::temp_dir().join(format!("ralph-paths-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(tmp.join(".git")).unwrap();
        let root = project_root(Some(""), &tmp.join("sub/deeper"));
        assert_eq!(root, tmp);
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn the_state_lives_outside_the_project_and_the_mirror_inside() {
        let p = LoopPaths::in_data_dir(Path::new("/data"), "/nowhere/proj");
        assert_eq!(
            p.mirror,
            PathBuf::from("/nowhere/proj/.claude/ralph-loop.local.md")
        );
        assert_eq!(
            p.log,
            PathBuf::from("/nowhere/proj/.claude/ralph-loop.log.jsonl")
        );
        // Compared by component: Windows shows these with `\`.
        let name = p.dir.file_name().unwrap().to_string_lossy();
        assert!(
            p.dir.parent() == Some(Path::new("/data/loops")) && name.starts_with("proj-"),
            "{}",
            p.state.display()
        );
        assert!(p.lock.starts_with(&p.dir) && p.verify.starts_with(&p.dir));
        // Another project of the same name gets another folder.
        let q = LoopPaths::in_data_dir(Path::new("/data"), "/elsewhere/proj");
        assert_ne!(p.dir, q.dir);
        assert_eq!(
            p.dir,
            LoopPaths::in_data_dir(Path::new("/data"), "/nowhere/proj").dir
        );
    }

    #[test]
    fn the_protected_files_name_the_loop_and_its_configuration() {
        for f in CONFIG_FILES.iter().chain(&[STATE_FILE, LOG_FILE]) {
            assert!(PROTECTED_FILES.contains(f), "{f} is not protected");
        }
        let p = LoopPaths::in_data_dir(Path::new("/data"), "/p");
        assert!(p.own_files().contains(&p.state.as_path()));
        assert!(p.own_files().contains(&p.log.as_path()));
    }
}
