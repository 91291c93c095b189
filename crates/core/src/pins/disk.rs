//! The pins on disk: which files a new loop pins (`collect`), their copies
//! in the loop's folder (`record`, `add`), and putting back before a check
//! runs (`put_back`). Does I/O.
//!
//! The loop's folder holds `pins/manifest.json` (path, size, hash, mode,
//! why), `pins/files/<path>` (each file's bytes at start),
//! `pins/displaced/<path>` (the agent's versions that were put back, never
//! lost) and `pins/restored.jsonl` (one line per file put back, for status
//! and the end message).

use super::{
    FROM_FLAG, MAX_BYTES, MAX_FILES, Manifest, Pin, PinError, candidate_words, fnv1a, scripts,
};
use crate::activity::{self, Action, Entry};
use crate::hook_output::HookOutput;
use crate::paths::LoopPaths;
use crate::store;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// Folders a glob never looks into (git's own, ralph's loop files).
const SKIPPED_DIRS: &[&str] = &[".git"];
/// A walk for globs stops after this many entries (a huge `node_modules`).
const MAX_WALK: usize = 200_000;

fn manifest_path(paths: &LoopPaths) -> PathBuf {
    paths.pins.join("manifest.json")
}

fn copy_path(paths: &LoopPaths, rel: &str) -> PathBuf {
    paths.pins.join("files").join(rel)
}

fn history_path(paths: &LoopPaths) -> PathBuf {
    paths.pins.join("restored.jsonl")
}

/// The project-relative path of an existing regular file that `word` (a
/// word of a check run in `root`) names; `None` for anything else (a folder,
/// the root, a path outside the project, a missing file). A symbolic link is
/// followed: its target inside the project is what is pinned.
pub(crate) fn project_file(root: &Path, word: &str) -> Option<String> {
    let canon_root = fs::canonicalize(root).ok()?;
    let real = fs::canonicalize(root.join(word)).ok()?;
    if !fs::metadata(&real).ok()?.is_file() {
        return None;
    }
    let rel = real.strip_prefix(&canon_root).ok()?;
    let rel = rel.to_str()?.replace('\\', "/");
    let in_git = rel.split('/').next() == Some(".git");
    (!rel.is_empty() && !in_git).then_some(rel)
}

/// The files `command` names that exist in the project.
pub(crate) fn named_files(root: &Path, command: &str) -> Vec<String> {
    candidate_words(command)
        .iter()
        .filter_map(|w| project_file(root, w))
        .collect()
}

/// The first file a check of `checks` runs that is a shell script with
/// Windows line endings, with that check (`super::sh_cannot_run`): a start
/// refuses it, naming the file and the fix, rather than run a loop whose
/// check can never pass.
pub(crate) fn crlf_script(root: &Path, checks: &[String]) -> Option<(String, String)> {
    use std::io::Read;
    checks.iter().find_map(|check| {
        named_files(root, check).into_iter().find_map(|file| {
            let mut head = Vec::new();
            fs::File::open(root.join(&file))
                .ok()?
                .take(64 << 10)
                .read_to_end(&mut head)
                .ok()?;
            super::sh_cannot_run(&file, &head).then(|| (file, check.clone()))
        })
    })
}

/// The files matching `glob` (relative to `root`), sorted.
pub(crate) fn glob_files(root: &Path, glob: &str) -> Vec<String> {
    let prefix = super::literal_prefix(glob);
    let start = if prefix.is_empty() {
        root.to_path_buf()
    } else {
        root.join(&prefix)
    };
    let mut found = Vec::new();
    let mut stack = vec![start];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK {
                break;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let Some(rel) = path
                .strip_prefix(root)
                .ok()
                .and_then(|r| r.to_str())
                .map(|r| r.replace('\\', "/"))
            else {
                continue;
            };
            if kind.is_dir() && !SKIPPED_DIRS.contains(&entry.file_name().to_str().unwrap_or("")) {
                stack.push(path);
            } else if kind.is_file() && super::glob_matches(glob, &rel) {
                found.push(rel);
            }
        }
    }
    found.sort();
    found
}

/// What a new loop pins: `(path, why)`, the check's files first, then the
/// user's globs (`(origin, glob)`). A glob matching nothing and a set over
/// the caps are start errors. Reads only.
pub(crate) fn collect(
    root: &Path,
    checks: &[String],
    globs: &[(&'static str, String)],
) -> Result<Vec<(String, String)>, PinError> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |path: String, why: &str| {
        if !out.iter().any(|(p, _)| *p == path) {
            out.push((path, why.to_string()));
        }
    };
    for check in checks {
        for file in named_files(root, check) {
            push(file, check);
        }
    }
    for (origin, glob) in globs {
        let files = glob_files(root, glob);
        if files.is_empty() {
            return Err(PinError::NoMatch {
                origin,
                glob: glob.clone(),
            });
        }
        let why = if *origin == FROM_FLAG {
            format!("{FROM_FLAG} {glob}")
        } else {
            format!("prd pin {glob}")
        };
        for file in files {
            push(file, &why);
        }
    }
    let bytes: u64 = out
        .iter()
        .filter_map(|(p, _)| fs::metadata(root.join(p)).ok())
        .map(|m| m.len())
        .sum();
    if out.len() > MAX_FILES || bytes > MAX_BYTES {
        return Err(PinError::TooMany {
            files: out.len(),
            bytes,
        });
    }
    Ok(out)
}

/// The files the `--review-cmd` program `command` runs, added to `wanted`
/// as a check's are (`sh scripts/review.sh` pins `scripts/review.sh`): a
/// review is a verdict too, so what it runs is fixed at start and put back
/// before each review (reviews run in the same round as the checks, after
/// [`before_checks`]).
pub(crate) fn add_review_program(root: &Path, wanted: &mut Vec<(String, String)>, command: &str) {
    for file in named_files(root, command) {
        if !wanted.iter().any(|(p, _)| *p == file) {
            wanted.push((file, format!("--review-cmd {command}")));
        }
    }
}

/// Keep a copy of each file of `wanted` in the loop's folder and write the
/// manifest, replacing the pins of any earlier loop. Under the loop lock.
pub(crate) fn record(
    paths: &LoopPaths,
    wanted: &[(String, String)],
    checks: &[String],
) -> Result<Manifest, PinError> {
    forget(paths);
    let _ = fs::remove_file(history_path(paths));
    let mut manifest = Manifest {
        scripts: scripts::pins_for(package_json(&paths.root).as_deref(), checks),
        ..Manifest::default()
    };
    keep(paths, wanted, &mut manifest)?;
    Ok(manifest)
}

/// The loop is over (or a new one starts): its pins no longer hold, so no
/// later check (of a loop started without ralph's start) puts them back.
/// The versions put back, and their record, stay (never lost).
pub(crate) fn forget(paths: &LoopPaths) {
    let _ = fs::remove_file(manifest_path(paths));
    let _ = crate::seal::remove(&manifest_path(paths));
    let _ = fs::remove_dir_all(paths.pins.join("files"));
}

/// A story that first appears mid-loop: the files its check names are
/// pinned as they are now. Returns the new manifest when it grew.
pub(crate) fn add(paths: &LoopPaths, command: &str) -> Result<Option<Manifest>, PinError> {
    let mut manifest = read_manifest(paths);
    let new: Vec<(String, String)> = named_files(&paths.root, command)
        .into_iter()
        .filter(|f| !manifest.files.iter().any(|p| p.path == *f))
        .map(|f| (f, command.to_string()))
        .collect();
    let new_scripts: Vec<scripts::ScriptPin> =
        scripts::pins_for(package_json(&paths.root).as_deref(), &[command.to_string()])
            .into_iter()
            .filter(|s| !manifest.scripts.iter().any(|p| p.name == s.name))
            .collect();
    if (new.is_empty() && new_scripts.is_empty()) || manifest.files.len() + new.len() > MAX_FILES {
        return Ok(None);
    }
    manifest.scripts.extend(new_scripts);
    keep(paths, &new, &mut manifest)?;
    Ok(Some(manifest))
}

/// Copy each file into `pins/files/` and write the manifest with them added.
fn keep(
    paths: &LoopPaths,
    wanted: &[(String, String)],
    manifest: &mut Manifest,
) -> Result<(), PinError> {
    let io = |path: &str, e: &dyn std::fmt::Display| PinError::Io {
        path: path.to_string(),
        why: e.to_string(),
    };
    for (rel, why) in wanted {
        let src = paths.root.join(rel);
        let bytes = fs::read(&src).map_err(|e| io(rel, &e))?;
        let mode = file_mode(&src);
        store::atomic_write(&copy_path(paths, rel), &bytes).map_err(|e| io(rel, &e))?;
        manifest.files.push(Pin {
            path: rel.clone(),
            size: bytes.len() as u64,
            hash: fnv1a(&bytes),
            mode,
            why: why.clone(),
        });
    }
    if manifest.bytes() > MAX_BYTES {
        return Err(PinError::TooMany {
            files: manifest.files.len(),
            bytes: manifest.bytes(),
        });
    }
    // Sealed: the copies' hashes are what a check's pins are judged by.
    crate::seal::write(&manifest_path(paths), manifest.render().as_bytes())
        .map_err(|e| io("manifest.json", &e))
}

/// The project's `package.json`, read once (`None`: there is none).
fn package_json(root: &Path) -> Option<String> {
    fs::read_to_string(root.join(scripts::PACKAGE_JSON)).ok()
}

/// The manifest of the running loop (empty when it has no pins).
pub(crate) fn read_manifest(paths: &LoopPaths) -> Manifest {
    match fs::read_to_string(manifest_path(paths)) {
        Ok(text) => Manifest::parse(&text),
        Err(_) => Manifest::default(),
    }
}

/// The manifest as ralph wrote it (its seal), or `Err` when something else
/// wrote it (or took its seal away): then no pin can be trusted.
fn read_sealed_manifest(paths: &LoopPaths) -> Result<Manifest, ()> {
    let path = manifest_path(paths);
    match fs::read_to_string(&path) {
        Ok(text) if crate::seal::check(&path, &text) == crate::seal::Seal::Intact => {
            Ok(Manifest::parse(&text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
        _ => Err(()),
    }
}

/// A pinned file that differed from its pin and was put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutBack {
    pub path: String,
    /// `changed` or `missing`.
    pub was: String,
    /// Where the agent's version is kept (in the loop's folder), if it existed.
    #[serde(default)]
    pub kept: Option<String>,
    #[serde(default)]
    pub time: String,
}

/// Before a check runs: every pinned file that differs from its pin (size
/// first, then bytes) or is missing is put back as it was at start; the
/// version found is kept under `pins/displaced/`. When nothing differs
/// (the common case) this costs the manifest's read and, per pin, one
/// `stat` and two reads. Each file put back is recorded in
/// `pins/restored.jsonl`. Under the loop lock (or the merge lock).
pub(crate) fn put_back(paths: &LoopPaths, manifest: &Manifest) -> (Vec<PutBack>, Vec<String>) {
    let mut done = Vec::new();
    let mut untrusted = Vec::new();
    for pin in &manifest.files {
        let target = paths.root.join(&pin.path);
        // The copy is what the check will run: it must be the bytes ralph
        // pinned (the sealed manifest's hash), not a weakened version an
        // interpreter wrote into the loop's folder.
        let pinned = match fs::read(copy_path(paths, &pin.path)) {
            Ok(bytes) if fnv1a(&bytes) == pin.hash => bytes,
            _ => {
                untrusted.push(pin.path.clone());
                continue;
            }
        };
        let meta = fs::symlink_metadata(&target).ok();
        let same = meta.as_ref().is_some_and(|m| {
            m.is_file() && m.len() == pin.size && fs::read(&target).ok().as_ref() == Some(&pinned)
        });
        if same {
            continue;
        }
        let kept = meta
            .as_ref()
            .and_then(|_| displace(paths, &pin.path, &target));
        if store::atomic_write(&target, &pinned).is_err() {
            continue;
        }
        set_mode(&target, pin.mode);
        let back = PutBack {
            path: pin.path.clone(),
            was: if meta.is_some() { "changed" } else { "missing" }.to_string(),
            kept,
            time: crate::clock::now_rfc3339(),
        };
        if let Ok(line) = serde_json::to_string(&back) {
            let _ = store::append_line(&history_path(paths), &line);
        }
        done.push(back);
    }
    (done, untrusted)
}

/// The pinned files as they were at start, written into `dir` (ralph's
/// worktree of a tree a baseline measures: the check runs what the user
/// started with there too). A copy that fails its hash is left out.
pub(crate) fn pin_into(paths: &LoopPaths, dir: &Path) {
    for pin in &read_manifest(paths).files {
        if let Ok(bytes) = fs::read(copy_path(paths, &pin.path))
            && fnv1a(&bytes) == pin.hash
        {
            let target = dir.join(&pin.path);
            if store::atomic_write(&target, &bytes).is_ok() {
                set_mode(&target, pin.mode);
            }
        }
    }
}

/// Keep what is at `target` under `pins/displaced/<rel>` (`.1`, `.2`, ...
/// when that name is taken); the kept path, relative to the loop's folder.
fn displace(paths: &LoopPaths, rel: &str, target: &Path) -> Option<String> {
    let base = paths.pins.join("displaced").join(rel);
    let mut dest = base.clone();
    let mut n = 1;
    while dest.symlink_metadata().is_ok() {
        dest = PathBuf::from(format!("{}.{n}", base.display()));
        n += 1;
    }
    fs::create_dir_all(dest.parent()?).ok()?;
    // A copy, not a rename: the loop's folder may be on another disk.
    let kept = match fs::symlink_metadata(target).ok()? {
        m if m.is_file() => fs::copy(target, &dest).is_ok(),
        _ => fs::rename(target, &dest).is_ok(),
    };
    kept.then(|| {
        dest.strip_prefix(&paths.dir)
            .unwrap_or(&dest)
            .display()
            .to_string()
    })
}

/// How a round of checks stands with the pins: whether the loop has any,
/// and what was put back before it.
#[derive(Debug, Clone, Default)]
pub struct Guarded {
    pub pinned: bool,
    pub put_back: Vec<PutBack>,
    /// Pins ralph's own record of was changed outside ralph (the manifest,
    /// or a file's copy): no check runs against them (see [`Guarded::run_check`]).
    pub untrusted: Vec<String>,
    /// The package manager's scripts the checks run that differ from their
    /// pins: a check that runs one is not run (see [`Guarded::run_check`]).
    pub(crate) scripts_changed: Vec<scripts::ScriptChange>,
}

impl Guarded {
    /// Run `command` as a check against these pins, or, when ralph's record
    /// of them was changed outside ralph, fail it without running it: a
    /// check whose pinned script may be the agent's proves nothing. The
    /// loop goes on; the user is told what changed.
    pub fn run_check(
        &self,
        root: &Path,
        command: &str,
        timeout: std::time::Duration,
        fingerprint: Option<String>,
        reports: Option<&Path>,
    ) -> crate::verify::CheckResult {
        let scripts: Vec<&scripts::ScriptChange> = self
            .scripts_changed
            .iter()
            .filter(|c| c.why == command)
            .collect();
        if self.untrusted.is_empty() && scripts.is_empty() {
            return crate::worktree::run_check(root, command, timeout, fingerprint, reports)
                .with_pins(
                    self.pinned,
                    self.put_back.iter().map(|b| b.path.clone()).collect(),
                );
        }
        crate::verify::CheckResult {
            command: command.to_string(),
            exit: None,
            timed_out: false,
            output_tail: if self.untrusted.is_empty() {
                scripts::not_run(command, &scripts)
            } else {
                format!(
                    "ralph did not run this check: its pinned copy of {} in the loop's folder was changed outside ralph, so the check could be the agent's. Cancel the loop (/cancel-ralph) and start it again to pin the files anew.",
                    self.untrusted.join(", ")
                )
            },
            fingerprint,
            time: crate::clock::now_rfc3339(),
            duration_ms: 0,
            pinned: true,
            put_back: Vec::new(),
            score: None,
            not_run: true,
        }
    }
}

/// Before checks run: put back what differs ([`put_back`]) and log it.
/// A loop without pins costs one failed `open`.
pub fn before_checks(paths: &LoopPaths) -> Guarded {
    let Ok(manifest) = read_sealed_manifest(paths) else {
        log_untrusted(paths, &["pins/manifest.json".to_string()]);
        return Guarded {
            pinned: true,
            untrusted: vec!["pins/manifest.json".to_string()],
            ..Guarded::default()
        };
    };
    if manifest.files.is_empty() && manifest.scripts.is_empty() {
        return Guarded::default();
    }
    let (put_back, untrusted) = put_back(paths, &manifest);
    log_put_back(paths, &put_back);
    log_untrusted(paths, &untrusted);
    let scripts_changed = if manifest.scripts.is_empty() {
        Vec::new()
    } else {
        scripts::changed(&manifest.scripts, package_json(&paths.root).as_deref())
    };
    Guarded {
        pinned: true,
        put_back,
        untrusted,
        scripts_changed,
    }
}

/// Every file put back during this loop, oldest first.
pub(crate) fn history(paths: &LoopPaths) -> Vec<PutBack> {
    fs::read_to_string(history_path(paths))
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// For the loop's end message: the pinned files that were changed during
/// the loop and put back, and where the agent's versions are; `None` when
/// none was.
pub(crate) fn end_note(paths: &LoopPaths) -> Option<String> {
    let history = history(paths);
    if history.is_empty() {
        return None;
    }
    let mut files: Vec<&str> = history.iter().map(|b| b.path.as_str()).collect();
    files.dedup();
    Some(format!(
        "📌 Pinned files were changed during the loop and put back before its checks ran: {} (the changed versions are kept in {}).",
        files.join(", "),
        paths.pins.join("displaced").display()
    ))
}

/// The log's entry for files put back (decision `pin`, reason
/// `pin_restored`), with the loop's session and iteration.
pub(crate) fn log_put_back(paths: &LoopPaths, back: &[PutBack]) {
    if !back.is_empty() {
        log_pin(paths, "pin_restored", &put_back_text(back));
    }
}

/// Log the pins whose record in the loop's folder was changed outside ralph.
fn log_untrusted(paths: &LoopPaths, untrusted: &[String]) {
    if !untrusted.is_empty() {
        let message = format!(
            "changed outside ralph: {}; checks fail until the loop is started again",
            untrusted.join(", ")
        );
        log_pin(paths, "pin_untrusted", &message);
    }
}

/// One `pin` entry of the activity log, with the loop's session and iteration.
fn log_pin(paths: &LoopPaths, reason: &str, message: &str) {
    let (session, iteration) = match crate::state_file::read(paths) {
        crate::state_file::StateFile::Loop { state, .. } => (state.session_id, state.iteration),
        _ => (String::new(), 0),
    };
    let entry = Entry::now(&session, iteration, Action::Pin, reason).with_message(Some(message));
    let _ = activity::append(&paths.log, &entry);
}

/// The Stop's answer with the model told what was put back before this
/// Stop's checks, when a feed does not say it already (a check that failed
/// says it in its report; one that passed does not).
pub fn told(out: HookOutput, back: &[PutBack]) -> HookOutput {
    let says = |fed: &str| fed.contains("ralph put back");
    if back.is_empty() || out.fed_text().is_none_or(says) {
        return out;
    }
    out.map_fed(|fed| format!("{}\n\n{fed}", put_back_text(back)))
}

/// "tests/check.sh (changed)" for each file, for the log and the model.
pub(crate) fn put_back_text(back: &[PutBack]) -> String {
    let names: Vec<String> = back
        .iter()
        .map(|b| format!("{} ({})", b.path, b.was))
        .collect();
    format!(
        "ralph put back the pinned file(s) {} as they were at the loop's start before running the check: a check's files are fixed when the loop starts (your version is kept in the loop's folder). Change the code under test, not the check.",
        names.join(", ")
    )
}

#[cfg(unix)]
fn file_mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn file_mode(_path: &Path) -> u32 {
    0o644
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    if mode != 0 {
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(mode));
    }
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) {}
