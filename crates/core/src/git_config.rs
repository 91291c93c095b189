//! The read of a repository's configuration that [`crate::git`] needs (the
//! driver names to empty, the user's identity), and a cache of it across
//! processes. Hooks run on every turn, and the read is one more git process
//! (about 3 ms, docs/benchmarks.md "Hermetic git"); the cache makes a hook
//! whose configuration files did not change pay a few stats instead.
//!
//! The cache lives in the loop's folder (`LoopPaths::git_config`), one entry
//! per repository (keyed by its canonical git dir, never trusted for
//! another). An entry names every file that feeds git's configuration: the
//! origins the read reported, the standard places even when missing (a
//! `~/.gitconfig` created later must be seen), and every `include.path` /
//! `includeIf.*.path` target (an include that holds nothing yet is watched
//! too). Each file is kept with its size, mtime, ctime and inode: ctime
//! because an mtime can be set back (`touch -r`) and a ctime cannot. A file
//! whose time is within [`RACY_NS`] of the read's start may have changed
//! during the read (timestamps are coarse): such an entry is read again, as
//! git treats a racily clean index entry. Does I/O (stats, git, the file).

use serde::{Deserialize, Serialize};
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Timestamps on Linux are taken from a coarse clock (one tick, up to 10 ms);
/// a change this close to the read's start is not trusted to be in it.
const RACY_NS: i128 = 100_000_000;
/// Entries kept in one cache file (a loop's main tree and its worktrees).
const MAX_ENTRIES: usize = 16;
/// Environment that changes which files git reads: part of an entry's key.
const KEY_ENV: &[&str] = &[
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// What the configuration says, before the environment's identity is
/// applied (that stays live: it is not the cache's to keep).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigRead {
    pub filters: Vec<String>,
    pub merge_drivers: Vec<String>,
    pub diff_drivers: Vec<String>,
    pub name: Option<String>,
    pub email: Option<String>,
}

impl ConfigRead {
    /// Take one `key`/`value` of git's configuration.
    pub fn add(&mut self, key: &str, value: &str) {
        match key {
            "user.name" => self.name = Some(value.to_string()),
            "user.email" => self.email = Some(value.to_string()),
            _ => {}
        }
        let Some((section, rest)) = key.split_once('.') else {
            return;
        };
        let Some((driver, _var)) = rest.rsplit_once('.') else {
            return;
        };
        // A name git would read back intact from `-c` (no `=`).
        if driver.is_empty() || driver.contains('=') {
            return;
        }
        let list = match section {
            "filter" => &mut self.filters,
            "merge" => &mut self.merge_drivers,
            "diff" => &mut self.diff_drivers,
            _ => return,
        };
        if !list.iter().any(|d| d == driver) {
            list.push(driver.to_string());
        }
    }
}

/// One `key\nvalue` record of `git config -z` (a key with no value has no
/// newline).
fn split_record(record: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(record);
    let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
    (key.to_string(), value.to_string())
}

/// What one `git config -z --list --show-origin` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Listing {
    pub read: ConfigRead,
    /// The files values came from (as git names them: relative to where it ran).
    pub origins: Vec<PathBuf>,
    /// Each include: the including file and the path it names.
    pub includes: Vec<(PathBuf, String)>,
    /// An `includeIf.onbranch:…`: what is read follows HEAD.
    pub on_branch: bool,
    /// Every value came from a file (else there is nothing to watch).
    pub cacheable: bool,
}

/// Parse `git config -z --list --show-origin` (`origin\0key\nvalue\0`...).
pub(crate) fn parse_listing(out: &[u8]) -> Listing {
    let mut l = Listing {
        cacheable: true,
        ..Listing::default()
    };
    let mut records = out.split(|b| *b == 0);
    while let Some(origin) = records.next() {
        if origin.is_empty() {
            continue;
        }
        let origin = String::from_utf8_lossy(origin);
        let Some(record) = records.next() else {
            break;
        };
        let (key, value) = split_record(record);
        l.read.add(&key, &value);
        let Some(file) = origin.strip_prefix("file:").map(PathBuf::from) else {
            l.cacheable = false;
            continue;
        };
        if is_include(&key) {
            l.on_branch |= key.starts_with("includeif.onbranch:");
            l.includes.push((file.clone(), value));
        }
        if !l.origins.contains(&file) {
            l.origins.push(file);
        }
    }
    l
}

/// `include.path`, `includeIf.<condition>.path` (git lowercases both names).
fn is_include(key: &str) -> bool {
    let section = key.split('.').next().unwrap_or("");
    (section == "include" || section == "includeif") && key.ends_with(".path")
}

/// Where an include's path points, resolved as git does: `~/` from HOME,
/// a relative path from the including file's folder.
pub(crate) fn include_target(
    including: &Path,
    value: &str,
    home: Option<&Path>,
) -> Option<PathBuf> {
    if let Some(rest) = value.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let p = Path::new(value);
    if p.is_absolute() {
        return Some(p.to_path_buf());
    }
    including.parent().map(|d| d.join(p))
}

/// A repository's git dir and common dir, found by walking up for `.git`
/// (a folder, or a file `gitdir: …` of a worktree), canonical; no git spawned.
pub(crate) fn find_git_dirs(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let start = std::fs::canonicalize(dir).ok()?;
    let dot = start
        .ancestors()
        .map(|a| a.join(".git"))
        .find(|g| g.exists())?;
    let git_dir = if dot.is_dir() {
        dot
    } else {
        let text = std::fs::read_to_string(&dot).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        dot.parent()?.join(target)
    };
    let git_dir = std::fs::canonicalize(git_dir).ok()?;
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => std::fs::canonicalize(git_dir.join(c.trim())).ok()?,
        Err(_) => git_dir.clone(),
    };
    Some((git_dir, common))
}

/// The standard places of git's configuration for this repository and
/// environment, present or not.
pub(crate) fn standard_files(
    git_dir: &Path,
    common: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let mut out = vec![
        common.join("config"),
        common.join("config.worktree"),
        git_dir.join("config.worktree"),
    ];
    let home = env("HOME").map(PathBuf::from);
    match env("GIT_CONFIG_GLOBAL") {
        Some(g) => out.push(PathBuf::from(g)),
        None => {
            match env("XDG_CONFIG_HOME") {
                Some(x) => out.push(Path::new(&x).join("git/config")),
                None => out.extend(home.as_ref().map(|h| h.join(".config/git/config"))),
            }
            out.extend(home.as_ref().map(|h| h.join(".gitconfig")));
        }
    }
    match env("GIT_CONFIG_SYSTEM") {
        Some(s) => out.push(PathBuf::from(s)),
        None => {
            out.push(PathBuf::from("/etc/gitconfig"));
            // A git built with another prefix (`/usr/local/bin/git` reads
            // `/usr/local/etc/gitconfig`): the prefix of the git on PATH.
            let prefix = git_on_path(env).and_then(|g| Some(g.parent()?.parent()?.to_path_buf()));
            out.extend(prefix.map(|p| p.join("etc/gitconfig")));
        }
    }
    out
}

/// The `git` the hooks run: the first on PATH.
fn git_on_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let path = env("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .and_then(|g| std::fs::canonicalize(g).ok())
}

/// A watched file as it was at the read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    pub path: PathBuf,
    pub exists: bool,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub inode: u64,
}

impl FileStat {
    /// Follows links, as git does when it reads the file.
    pub fn of(path: &Path) -> FileStat {
        let mut s = FileStat {
            path: path.to_path_buf(),
            exists: false,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            inode: 0,
        };
        if let Ok(m) = std::fs::metadata(path) {
            s.exists = true;
            #[cfg(unix)]
            {
                s.size = m.size();
                s.mtime_ns = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
                s.ctime_ns = i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec());
                s.inode = m.ino();
            }
            // Elsewhere: size and modification time only (no inode, no
            // change time), which still tells a rewritten file.
            #[cfg(not(unix))]
            {
                s.size = m.len();
                s.mtime_ns = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128);
            }
        }
        s
    }
}

/// One repository's read, with what it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedRead {
    pub git_dir: PathBuf,
    /// [`KEY_ENV`] as they were (name, value).
    pub env: Vec<(String, Option<String>)>,
    /// Wall-clock time (ns) just before the read started.
    pub read_at_ns: i128,
    pub files: Vec<FileStat>,
    pub read: ConfigRead,
}

impl CachedRead {
    /// Still what git would read: same key, every file as it was and none
    /// changed close to the read (see [`RACY_NS`]).
    pub fn holds(&self, git_dir: &Path, env: &[(String, Option<String>)]) -> bool {
        self.git_dir == git_dir
            && self.env == env
            && self.files.iter().all(|f| {
                let now = FileStat::of(&f.path);
                now == *f && (!f.exists || f.mtime_ns.max(f.ctime_ns) < self.read_at_ns - RACY_NS)
            })
    }
}

/// The cache file's contents.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CacheFile {
    pub entries: Vec<CachedRead>,
}

/// The key environment of this process.
pub(crate) fn key_env(env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, Option<String>)> {
    KEY_ENV.iter().map(|v| (v.to_string(), env(v))).collect()
}

/// The cached read of `git_dir` from `file`, when it still holds.
///
/// Only a cache ralph wrote counts (its seal): one rewritten by an
/// interpreter the agent ran could hide a filter driver planted since.
pub(crate) fn cached(
    file: &Path,
    git_dir: &Path,
    env: &[(String, Option<String>)],
) -> Option<ConfigRead> {
    let text = std::fs::read_to_string(file).ok()?;
    if crate::seal::check(file, &text) != crate::seal::Seal::Intact {
        return None;
    }
    let cache: CacheFile = serde_json::from_str(&text).ok()?;
    cache
        .entries
        .into_iter()
        .find(|e| e.git_dir == git_dir)
        .filter(|e| e.holds(git_dir, env))
        .map(|e| e.read)
}

/// Put `entry` in `file` (replacing its repository's), atomically. Best
/// effort: a cache that cannot be written only costs the next process a read.
pub(crate) fn remember(file: &Path, entry: CachedRead) {
    let mut cache: CacheFile = std::fs::read(file)
        .ok()
        .and_then(|t| serde_json::from_slice(&t).ok())
        .unwrap_or_default();
    cache.entries.retain(|e| e.git_dir != entry.git_dir);
    cache.entries.insert(0, entry);
    cache.entries.truncate(MAX_ENTRIES);
    if let Ok(text) = serde_json::to_vec(&cache) {
        let _ = crate::seal::write(file, &text);
    }
}

/// Every file the listing read or could read, present or not: the origins
/// (relative to `dir`, where git ran), the standard places, the includes'
/// targets, and HEAD when an include depends on the branch.
pub(crate) fn watched(
    dir: &Path,
    dirs: &(PathBuf, PathBuf),
    listing: &Listing,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let home = env("HOME").map(PathBuf::from);
    let mut files: Vec<PathBuf> = listing.origins.iter().map(|o| dir.join(o)).collect();
    files.extend(standard_files(&dirs.0, &dirs.1, env));
    for (including, value) in &listing.includes {
        files.extend(include_target(&dir.join(including), value, home.as_deref()));
    }
    if listing.on_branch {
        // `includeIf.onbranch:…` follows HEAD; a branch switch rewrites it.
        files.push(dirs.0.join("HEAD"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for f in files {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// Nanoseconds since the epoch, now.
pub(crate) fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(test)]
#[path = "git_config_tests.rs"]
mod tests;
