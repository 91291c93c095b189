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
//! `LoopPaths` also reads the files of the types below it, typed
//! (`read_state`, `read_verify_log`, ...); a type that sits above (the
//! board, the reviewers' verdicts) has its read beside it, in an
//! `impl LoopPaths` of its own folder's `disk.rs`, so no import runs back
//! up here. Does I/O.

use crate::blocker::Blocker;
use crate::prd::{Prd, PrdError};
use crate::reinject::Injected;
use crate::seal::Seal;
use crate::state::{LoopState, StateError};
use crate::store::{self, StoreError};
use crate::verify::VerifyLog;
use std::path::{Path, PathBuf};
use thiserror::Error;

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

/// How the project's mirror of the state compares with the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    Same,
    Missing,
    /// Edited: not the state's text.
    Differs,
    /// A link, a folder or another file ralph does not write through.
    Unsafe,
}

impl Mirror {
    /// Someone changed the mirror since ralph wrote it.
    pub(crate) fn tampered(self) -> bool {
        self != Mirror::Same
    }
}

/// The state file, as read.
// Held once per hook call and matched at once: boxing the loop would only
// add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum StateFile {
    /// No loop.
    Missing,
    /// There, but not readable as text (not UTF-8, not a regular file, an I/O error).
    Unreadable(StoreError),
    /// Text that is not a valid loop state.
    Corrupt { text: String, error: StateError },
    Loop {
        text: String,
        // Boxed: a state is much larger than the other variants.
        state: Box<LoopState>,
    },
}

/// One read of the state file itself and its seal ([`LoopPaths::read_own_state`]).
#[derive(Debug)]
pub(crate) struct OwnState {
    /// `Ok(None)`: no state file (the project's file may be there to adopt).
    /// The text before its inline seal (see `seal`): what the state is.
    pub text: Result<Option<String>, StoreError>,
    /// Its seal against that text (`Unsealed` when there is no text).
    pub seal: Seal,
    /// How the seal was judged (`None` when there is no text).
    pub judged: Option<crate::seal::Judged>,
}

impl OwnState {
    /// Where its seal is: inside and intact, its next write is one rename
    /// (no marker beside it).
    pub(crate) fn form(&self) -> crate::seal::Form {
        self.judged
            .as_ref()
            .map(crate::seal::Judged::form)
            .unwrap_or_default()
    }
}

/// One read of the loop's sealed records beside the state: the checks'
/// results and the reviewers' verdicts ([`LoopPaths::read_own_records`]).
#[derive(Debug, Clone)]
pub(crate) struct OwnRecords {
    pub verify: crate::seal::SealedText,
    pub review: crate::seal::SealedText,
}

impl OwnRecords {
    /// The checks' results as read (none: an empty log).
    pub(crate) fn verify_log(&self) -> VerifyLog {
        self.verify
            .text
            .as_deref()
            .map(VerifyLog::parse)
            .unwrap_or_default()
    }
}

/// The state file a save replaces, as read under the same lock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Saved<'a> {
    /// Its text (`None`: there was no state file, the loop is adopted).
    pub text: Option<&'a str>,
    /// Where its seal was ([`OwnState::form`]).
    pub form: crate::seal::Form,
}

/// A file the user named (a PRD, a prompt file) could not be read.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("no such file ({})", .0.display())]
    Missing(PathBuf),
    #[error(transparent)]
    Unreadable(#[from] StoreError),
}

/// Why the loop's PRD cannot be used.
#[derive(Debug, Error)]
pub enum PrdReadError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Invalid(#[from] PrdError),
}

impl LoopPaths {
    /// The state, read and parsed: the authoritative copy, or (when there is
    /// none) the project's file, to be adopted.
    ///
    /// A state that fails its seal (changed outside ralph: `seal`) is not
    /// read as the loop's: no hook acts on it or writes the loop from it
    /// (which would seal it again); the Stop tells the user what changed
    /// (`tamper`), and only the user resumes or cancels it.
    pub fn read_state(&self) -> StateFile {
        self.state_of(self.read_own_state())
    }

    /// The state file itself (not the project's copy) and its seal, read
    /// once: a Stop checks the seal, reads the state and later seals the
    /// next one from this one read.
    pub(crate) fn read_own_state(&self) -> OwnState {
        let mut text = store::read_optional(&self.state);
        let judged = match &text {
            Ok(Some(t)) => Some(crate::seal::judge_inline(&self.state, t)),
            _ => None,
        };
        if let (Ok(Some(t)), Some(j)) = (&mut text, &judged) {
            t.truncate(j.body_len);
        }
        let seal = judged.as_ref().map_or(Seal::Unsealed, |j| j.seal);
        OwnState { text, seal, judged }
    }

    /// `verify.json` and `review.json`, each read once with its seal: the
    /// tamper check judges the texts a Stop then uses.
    pub(crate) fn read_own_records(&self) -> OwnRecords {
        OwnRecords {
            verify: crate::seal::read_sealed(&self.verify),
            review: crate::seal::read_sealed(&self.review),
        }
    }

    /// [`LoopPaths::read_state`] from a read of the state file already made
    /// (the project's file is read when there is no state file).
    pub(crate) fn state_of(&self, own: OwnState) -> StateFile {
        let (found, own, seal) = match own.text {
            Ok(None) => (store::read_optional(&self.mirror), false, Seal::Unsealed),
            other => (other, true, own.seal),
        };
        match found {
            Ok(None) => StateFile::Missing,
            Err(e) => StateFile::Unreadable(e),
            Ok(Some(text)) => match LoopState::parse(&text) {
                // One that no longer parses is corrupt, whoever wrote it.
                Ok(_) if own && seal == Seal::Broken => StateFile::Unreadable(StoreError::io(
                    &self.state,
                    std::io::Error::other(
                        "changed outside ralph (its seal does not match): the loop is paused until you resume or cancel it",
                    ),
                )),
                Ok(state) => StateFile::Loop {
                    text,
                    state: Box::new(state),
                },
                Err(error) => StateFile::Corrupt { text, error },
            },
        }
    }

    /// The project's mirror against the state's text `state_text` (one
    /// open, not following a link, and one `fstat`).
    pub(crate) fn mirror_check(&self, state_text: &str) -> Mirror {
        match store::read_plain(&self.mirror) {
            Ok(None) => Mirror::Missing,
            Ok(Some(text)) if text == state_text => Mirror::Same,
            Err(StoreError::Unsafe { .. }) => Mirror::Unsafe,
            _ => Mirror::Differs,
        }
    }

    /// Write the state (sealed inside, see `seal`), then its mirror in the
    /// project. The state is what counts: a mirror that cannot be written
    /// (a link ralph will not write through) is returned as a note, not an
    /// error.
    pub(crate) fn write_state(&self, text: &str) -> Result<Option<StoreError>, StoreError> {
        crate::seal::write_inline(&self.state, text)?;
        Ok(store::atomic_write(&self.mirror, text.as_bytes()).err())
    }

    /// [`LoopPaths::write_state`] over the state as read under the same
    /// lock (`before`: what [`LoopPaths::read_own_state`] found), the
    /// mirror compared then (`mirror`). A steady turn renames one file: the
    /// state with its seal inside; a mirror found as ralph wrote it is
    /// overwritten in place (`store::overwrite_plain`: no rename), any other
    /// (missing, edited, a link) is replaced by rename as before. So the
    /// mirror still holds exactly the state's text after every save.
    pub(crate) fn write_state_over(
        &self,
        text: &str,
        before: Saved<'_>,
        mirror: Mirror,
    ) -> Result<Option<StoreError>, StoreError> {
        crate::seal::write_inline_over(&self.state, text, before.text, before.form)?;
        if mirror == Mirror::Same && store::overwrite_plain(&self.mirror, text.as_bytes()).is_ok() {
            return Ok(None);
        }
        Ok(store::atomic_replace(&self.mirror, text.as_bytes()).err())
    }

    /// The user accepted the state as it is (`/ralph-resume` after a
    /// change outside ralph): sealed again, the mirror written from it.
    pub(crate) fn accept_state(&self) -> Result<(), StoreError> {
        if let Some(body) = crate::seal::accept_inline(&self.state)? {
            let _ = store::atomic_write(&self.mirror, body.as_bytes());
        }
        Ok(())
    }

    /// Remove the temp files that killed writes of the state, its seal or
    /// its mirror left behind (a listing of two folders: the turn's own
    /// writes skip it, and a Stop runs it every [`SWEEP_EVERY`] iterations).
    pub(crate) fn sweep_state_leftovers(&self) {
        for file in [
            &self.state,
            &crate::seal::seal_path(&self.state),
            &self.mirror,
        ] {
            store::sweep_leftovers(file);
        }
    }

    /// The loop is over: its state and mirror go.
    pub fn remove_state(&self) -> Result<(), StoreError> {
        // What a killed write of the last turns may have left.
        self.sweep_state_leftovers();
        store::remove_if_present(&self.state)?;
        // The text before the last, kept only to be written over next turn.
        store::remove_if_present(&store::spare_path(&self.state))?;
        crate::seal::remove(&self.state)?;
        // Removing a link removes the link, never its target.
        store::remove_if_present(&self.mirror)?;
        Ok(())
    }

    /// A state that does not parse: kept in the project, beside the mirror,
    /// as `.claude/ralph-loop.local.md.corrupt-<time>` for the user to read;
    /// the mirror goes. Returns where it was kept.
    pub(crate) fn move_state_aside(&self, unix_secs: u64) -> Result<PathBuf, StoreError> {
        if !self.state.exists() {
            return store::move_aside(&self.mirror, unix_secs);
        }
        let _ = store::remove_if_present(&self.mirror);
        let _ = crate::seal::remove(&self.state);
        let keep = store::aside_name(&self.mirror, unix_secs);
        if let Some(dir) = keep.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        // A rename across file systems fails: copy, then remove.
        if std::fs::rename(&self.state, &keep).is_err() {
            std::fs::copy(&self.state, &keep).map_err(|e| StoreError::io(&keep, e))?;
            store::remove_if_present(&self.state)?;
        }
        Ok(keep)
    }

    /// Seconds since the state file was last written (0 when unknown).
    pub(crate) fn state_age_secs(&self) -> u64 {
        std::fs::metadata(&self.state)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .map_or(0, |d| d.as_secs())
    }

    /// Check results so far; `None` when there are none (or they cannot be read).
    pub fn read_verify_log(&self) -> Option<VerifyLog> {
        read_hint(&self.verify).map(|t| VerifyLog::parse(&t))
    }

    /// The agent's blocker, if it wrote one.
    pub(crate) fn read_blocker(&self) -> Option<Blocker> {
        read_hint(&self.blocker).map(|t| Blocker::parse(&t))
    }

    /// The re-injection counter, if it is there and readable.
    pub(crate) fn read_last_injected(&self) -> Option<Injected> {
        read_hint(&self.last_injected).and_then(|t| Injected::parse(&t))
    }

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

    /// `--fresh`: the last worker's run, if one was recorded (a small file;
    /// an unreadable one reads as none).
    pub(crate) fn read_worker(&self) -> Option<crate::fresh::WorkerRecord> {
        let text = std::fs::read_to_string(&self.worker).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Record the last worker's run (atomically: status may read it).
    pub(crate) fn write_worker(
        &self,
        record: &crate::fresh::WorkerRecord,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(record).unwrap_or_default();
        store::atomic_write(&self.worker, text.as_bytes())
    }

    /// A file the user named, relative to the project root (or absolute).
    pub(crate) fn read_project_file(&self, file: &str) -> Result<String, FileError> {
        let path = self.root.join(file);
        store::read_optional(&path)?.ok_or(FileError::Missing(path))
    }

    /// The loop's PRD as it reads now (structure only, not validated).
    pub fn read_prd(&self, file: &str) -> Result<Prd, PrdReadError> {
        Ok(Prd::parse(&self.read_project_file(file)?)?)
    }
}

/// A sidecar file whose absence or unreadability only means "no hint".
pub(crate) fn read_hint(path: &Path) -> Option<String> {
    store::read_optional(path).ok().flatten()
}

/// Resolve the project root from `CLAUDE_PROJECT_DIR` (when non-empty) or `cwd`.
pub fn project_root(env_project_dir: Option<&str>, cwd: &Path) -> PathBuf {
    if let Some(dir) = env_project_dir.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    git_root(cwd).unwrap_or_else(|| cwd.to_path_buf())
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

/// The nearest folder at or above `start` holding `.git` (a folder, or a file
/// for worktrees and submodules).
pub(crate) fn git_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
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
        let state = p.state.to_string_lossy();
        assert!(state.starts_with("/data/loops/proj-"), "{state}");
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
