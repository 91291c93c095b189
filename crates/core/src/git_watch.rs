//! Git's own files and the client's settings, watched while a loop runs.
//! The guard refuses the agent's writes to `.git/hooks`, `.git/info`, the
//! keys of `.git/config` that make git run a program, and the client's
//! settings; but a link made in one call and written through in a later
//! one, or an interpreter outside the sandbox, can still land there, and
//! then the user's next `git` runs what was planted. So the loop records
//! them at its start (copies in its folder, `watch/`) and each Stop
//! compares a digest of their metadata (a few `stat`s: no read, no tree
//! walk); when it moved, what changed is named (to the agent as refused
//! work, to the user, in the log and at the end) and what makes a program
//! run is put back: a hook added, changed or removed, a config key of
//! `git_program_keys`, the client settings' hooks, status line, helpers and
//! environment. `.git/info` (exclude, attributes) is named only.
//! Does I/O.

use crate::git::Git;
use crate::paths::LoopPaths;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the watched files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Places {
    /// The repository's own folder (the shared one, for a linked worktree).
    pub git_dir: PathBuf,
    /// The work tree's own git folder (a linked worktree's, where its
    /// `config.worktree` is; else the same as `git_dir`).
    tree_git_dir: PathBuf,
    /// The project, for the settings and for naming files.
    pub root: PathBuf,
}

/// The settings keys that make the client run something, put back.
const SETTINGS_PROGRAM_KEYS: [&str; 7] = [
    "hooks",
    "statusLine",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "env",
];

/// The client's settings files of the project, watched.
const SETTINGS: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

impl Places {
    /// The places of the project at `root` (`None` outside git).
    pub(crate) fn of(root: &Path) -> Option<Places> {
        let top = crate::git::git_root(root)?;
        let dot_git = top.join(".git");
        let (git_dir, tree_git_dir) = if dot_git.is_dir() {
            (dot_git.clone(), dot_git)
        } else {
            // A linked worktree: `gitdir: PATH`, whose `commondir` names
            // the repository's own folder.
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let own = top.join(text.strip_prefix("gitdir:")?.trim());
            match std::fs::read_to_string(own.join("commondir")) {
                Ok(common) => (own.join(common.trim()), own),
                Err(_) => (own.clone(), own),
            }
        };
        Some(Places {
            git_dir,
            tree_git_dir,
            root: root.to_path_buf(),
        })
    }

    /// Every watched file now: its name as recorded (`hooks/NAME`,
    /// `info/NAME`, `config`, `config.worktree`, `.claude/settings.json`)
    /// and its path. Hooks: those git runs (not `*.sample`).
    fn files(&self) -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        for dir in ["hooks", "info"] {
            let Ok(entries) = std::fs::read_dir(self.git_dir.join(dir)) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| !n.ends_with(".sample"))
                .collect();
            names.sort();
            out.extend(
                names
                    .into_iter()
                    .map(|n| (format!("{dir}/{n}"), self.git_dir.join(dir).join(&n))),
            );
        }
        out.push(("config".to_string(), self.git_dir.join("config")));
        out.push((
            "config.worktree".to_string(),
            self.tree_git_dir.join("config.worktree"),
        ));
        for s in SETTINGS {
            out.push((s.to_string(), self.root.join(s)));
        }
        out
    }

    /// A digest of the watched files' metadata (name, size, change time,
    /// inode; absent): what a Stop compares, with no file read.
    pub(crate) fn digest(&self) -> String {
        let mut h = crate::pins::fnv1a(b"");
        for (name, path) in self.files() {
            let meta = std::fs::symlink_metadata(&path).ok();
            let line = match meta {
                Some(m) => format!("{name} {}", stamp(&m)),
                None => format!("{name} -"),
            };
            h = crate::pins::fnv1a(format!("{h}{line}").as_bytes());
        }
        h
    }

    /// The name a user reads: `.git/hooks/post-checkout`.
    fn shown(&self, name: &str) -> String {
        if name.starts_with(".claude/") {
            return name.to_string();
        }
        let git = self.git_dir.strip_prefix(&self.root).map_or_else(
            |_| self.git_dir.display().to_string(),
            |p| p.display().to_string(),
        );
        format!("{git}/{name}")
    }
}

#[cfg(unix)]
fn stamp(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!("{} {} {} {}", m.len(), m.ctime(), m.ctime_nsec(), m.ino())
}

#[cfg(not(unix))]
fn stamp(m: &std::fs::Metadata) -> String {
    let t = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} {t}", m.len())
}

/// The watched files' copies at the loop's start (`watch/` in its folder).
fn copies(paths: &LoopPaths) -> PathBuf {
    paths.dir.join("watch")
}

/// At the loop's start: a copy of each watched file; the digest a Stop
/// compares (`None` outside git).
pub(crate) fn record(paths: &LoopPaths) -> Option<String> {
    let places = Places::of(&paths.root)?;
    let dir = copies(paths);
    let _ = std::fs::remove_dir_all(&dir);
    let mut manifest = BTreeMap::new();
    for (name, path) in places.files() {
        if let Ok(bytes) = std::fs::read(&path) {
            let copy = dir.join("files").join(&name);
            if crate::store::atomic_write(&copy, &bytes).is_ok() {
                manifest.insert(name, crate::pins::fnv1a(&bytes));
            }
        }
    }
    let text = serde_json::to_string(&manifest).ok()?;
    crate::seal::write(&dir.join("manifest.json"), text.as_bytes()).ok()?;
    Some(places.digest())
}

/// How a watched file differs from the loop's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    Added,
    Changed,
    Removed,
}

/// One watched file changed during the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchedChange {
    /// As the user reads it: `.git/hooks/post-checkout`.
    pub file: String,
    /// As recorded: `hooks/post-checkout`.
    name: String,
    pub how: How,
    /// What in it makes a program run (`core.fsmonitor`, `hooks`): put
    /// back; empty: named only.
    pub runs: Vec<String>,
}

/// The watched files that differ from their copies at the loop's start.
/// `Err` (in words): ralph's record of them (the manifest, or a copy it
/// names) is not as ralph left it: what would be put back, and what it is
/// compared with, could be the agent's.
pub(crate) fn changes(paths: &LoopPaths, places: &Places) -> Result<Vec<WatchedChange>, String> {
    let dir = copies(paths);
    let read = crate::seal::read_sealed(&dir.join("manifest.json"));
    let not_ralphs = |what: &str| {
        format!(
            "{what}, ralph's record of git's own files and the client's settings at the loop's start, was changed or removed by something other than ralph"
        )
    };
    if read.seal != crate::seal::Seal::Intact || read.text.is_none() {
        return Err(not_ralphs("watch/manifest.json"));
    }
    let manifest: BTreeMap<String, String> = read
        .text
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    // A copy is what the manifest says it was, or it is not used.
    let copy_of = |name: &str| -> Result<Vec<u8>, String> {
        let Some(digest) = manifest.get(name) else {
            return Ok(Vec::new());
        };
        match std::fs::read(dir.join("files").join(name)) {
            Ok(b) if crate::pins::fnv1a(&b) == *digest => Ok(b),
            _ => Err(not_ralphs(&format!("watch/files/{name}"))),
        }
    };
    let now = places.files();
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (name, path) in &now {
        seen.push(name);
        let bytes = std::fs::read(path).ok();
        let was = manifest.get(name);
        let how = match (&bytes, was) {
            (None, None) => continue,
            (Some(_), None) => How::Added,
            (None, Some(_)) => How::Removed,
            (Some(b), Some(d)) if crate::pins::fnv1a(b) == *d => continue,
            (Some(_), Some(_)) => How::Changed,
        };
        let before = copy_of(name)?;
        let runs = runs(name, &before, bytes.as_deref().unwrap_or_default());
        // `git config user.name`, a remote added: git's own business; a
        // settings file's model or permissions: the agent's (the guard's
        // rules). And the empty files the client's sandbox puts in the
        // project while a sandboxed command runs (mount points:
        // `.claude/settings.local.json`, `.git/config.worktree`; measured
        // on 2.1.328) run nothing.
        if (name.starts_with("config") || name.starts_with(".claude/")) && runs.is_empty() {
            continue;
        }
        out.push(WatchedChange {
            file: places.shown(name),
            name: name.clone(),
            how,
            runs,
        });
    }
    for name in manifest.keys().filter(|n| !seen.contains(&n.as_str())) {
        // A file gone that was there: a hook the agent deleted, say.
        copy_of(name)?;
        let runs = runs(name, b"x", b"");
        out.push(WatchedChange {
            file: places.shown(name),
            name: name.clone(),
            how: How::Removed,
            runs,
        });
    }
    Ok(out)
}

/// What in the change of `name` from `before` to `now` makes a program run.
fn runs(name: &str, before: &[u8], now: &[u8]) -> Vec<String> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if name.starts_with("hooks/") {
        return vec![name.trim_start_matches("hooks/").to_string()];
    }
    if name == "config" || name == "config.worktree" {
        let (was, is) = (
            crate::git_program_keys::program_keys(&text(before)),
            crate::git_program_keys::program_keys(&text(now)),
        );
        let mut keys: Vec<String> = is
            .iter()
            .filter(|k| !was.contains(k))
            .chain(was.iter().filter(|k| !is.contains(k)))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        keys.dedup();
        return keys;
    }
    if name.starts_with(".claude/") {
        let json = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap_or_default();
        let (was, is) = (json(before), json(now));
        return SETTINGS_PROGRAM_KEYS
            .iter()
            .filter(|k| was.get(**k) != is.get(**k))
            .map(|k| (*k).to_string())
            .collect();
    }
    Vec::new()
}

/// Put back what makes a program run: a hook as it was (one added moved
/// into the loop's folder), the config's program keys as they were, the
/// settings file as it was. What was put back, in words.
pub(crate) fn put_back(
    paths: &LoopPaths,
    places: &Places,
    changes: &[WatchedChange],
) -> Vec<String> {
    let copy = |name: &str| copies(paths).join("files").join(name);
    let mut done = Vec::new();
    for c in changes.iter().filter(|c| !c.runs.is_empty()) {
        let target = match c.name.as_str() {
            "config.worktree" => places.tree_git_dir.join(&c.name),
            _ => places.git_dir.join(&c.name),
        };
        let ok = if c.name.starts_with("hooks/") {
            put_back_hook(paths, &target, &copy(&c.name), c.how)
        } else if c.name.starts_with(".claude/") {
            let target = places.root.join(&c.name);
            match c.how {
                // Not there at the start: it goes.
                How::Added => std::fs::remove_file(&target).is_ok(),
                How::Changed | How::Removed => std::fs::read(copy(&c.name))
                    .is_ok_and(|b| crate::store::atomic_write(&target, &b).is_ok()),
            }
        } else {
            put_back_keys(&places.root, &target, &copy(&c.name), &c.runs)
        };
        if ok {
            done.push(format!("{} ({})", c.file, c.runs.join(", ")));
        }
    }
    done
}

/// A hook as it was at the loop's start: one added moved away into the
/// loop's folder (kept for the user), one changed or removed copied back.
fn put_back_hook(paths: &LoopPaths, target: &Path, copy: &Path, how: How) -> bool {
    match how {
        How::Added => {
            let name = target.file_name().unwrap_or_default();
            let kept = copies(paths).join("displaced").join(name);
            let _ = std::fs::create_dir_all(kept.parent().unwrap_or(Path::new(".")));
            std::fs::rename(target, &kept).is_ok() || std::fs::remove_file(target).is_ok()
        }
        How::Changed | How::Removed => std::fs::read(copy).is_ok_and(|b| {
            crate::store::atomic_write(target, &b).is_ok() && make_executable(target)
        }),
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).is_ok()
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> bool {
    true
}

/// The config `file`'s program keys `keys` set back to their values in
/// `copy` (git's own `config --file`: other keys untouched).
fn put_back_keys(root: &Path, file: &Path, copy: &Path, keys: &[String]) -> bool {
    let before = std::fs::read_to_string(copy).unwrap_or_default();
    let was = crate::git_program_keys::program_keys(&before);
    let git = Git::write(root);
    let f = file.to_string_lossy();
    keys.iter().all(|key| {
        let _ = git.run(&["config", "--file", &f, "--unset-all", key]);
        was.iter()
            .filter(|(k, _)| k == key)
            .all(|(k, v)| git.run(&["config", "--file", &f, "--add", k, v]).is_ok())
    })
}

/// The change in words: `added .git/hooks/post-checkout`.
pub(crate) fn described(c: &WatchedChange) -> String {
    let how = match c.how {
        How::Added => "added",
        How::Changed => "changed",
        How::Removed => "removed",
    };
    if c.runs.is_empty() || c.name.starts_with("hooks/") {
        format!("{how} {}", c.file)
    } else {
        format!("{how} {} ({})", c.file, c.runs.join(", "))
    }
}

/// The loop's changes to git's own files and the client's settings, as
/// its log has them, for its end message ("" when there were none).
pub(crate) fn over_the_loop(paths: &LoopPaths) -> String {
    let log = crate::store::read_optional(&paths.log)
        .ok()
        .flatten()
        .unwrap_or_default();
    let Some(report) = crate::loop_report::Report::of_log(&log, None) else {
        return String::new();
    };
    let said: Vec<&str> = report
        .entries
        .iter()
        .filter(|e| e.reason == crate::activity::Code::GitFilesChanged.as_str())
        .filter_map(|e| e.message.as_deref())
        .collect();
    if said.is_empty() {
        return String::new();
    }
    format!(
        "\n⚠️ Outside the work, during the loop: {}.",
        said.join("; ")
    )
}
