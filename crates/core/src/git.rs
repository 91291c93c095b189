//! Every git command ralph runs goes through here, with the repository's
//! executable configuration turned off: an agent in the loop can write
//! `.git/config` and `.gitattributes` (one Bash call), and whatever they
//! make git run would run inside ralph's hooks, with the hook's rights
//! (issue 23). Does I/O (spawns git, each call bounded by a timeout through
//! [`bounded::run_bounded_capture`]).
//!
//! What is off, and how:
//! - fsmonitor, hooks (`core.hooksPath` at a path that cannot hold one),
//!   the attributes file of the user's config, gpg (signing and signature
//!   display), automatic gc and maintenance, every transport
//!   (`protocol.allow=never`: no ssh command, proxy or credential helper can
//!   start), submodule recursion, editors and pagers: fixed `-c` values
//!   (command-line config wins over every file);
//! - filters, merge drivers, diff drivers: each name the repository's
//!   config defines (one `git config --list` read, once a process and
//!   folder, or none while the loop's cache of it holds: see
//!   [`crate::git_config`]) is given empty commands (`filter.N.required=false`, so an
//!   emptied required filter is no error). The read comes before a
//!   process's first call in a folder; a hook process lasts one event;
//! - a recorded conflict resolution (`rerere.enabled=false`);
//! - external diff and textconv: `--no-ext-diff --no-textconv` on every
//!   command that can produce a diff (also `diff.external`, which `-c`
//!   cannot unset, and `diff.N.command`);
//! - replace refs: `GIT_NO_REPLACE_OBJECTS=1`;
//! - aliases never run: ralph only calls built-in commands, and git never
//!   lets an alias shadow a built-in.
//!
//! The author and committer are passed explicitly: the user's (environment,
//! else the configuration as read once), else ralph's fallback.

use crate::bounded;
use crate::git_config::{self, ConfigRead};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A read (status, diff, log, rev-parse) takes no longer than this on a
/// sane repository.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// No git command ralph runs for a merge takes longer than this on a sane
/// repository; one that does (a lock) is given up.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(120);

/// The identity of ralph's commits when the user has none configured (a
/// commit would fail otherwise); the user's own identity wins.
pub(crate) const FALLBACK_NAME: &str = "ralph";
pub(crate) const FALLBACK_EMAIL: &str = "ralph@localhost";

/// Fixed command-line configuration of every call (see the module's top).
const FIXED: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "core.useReplaceRefs=false",
    "core.pager=cat",
    "core.editor=true",
    "sequence.editor=true",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "merge.renormalize=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "protocol.allow=never",
    "credential.helper=",
    "submodule.recurse=false",
    // A resolution recorded in `.git/rr-cache` (which the agent can write)
    // must never resolve a conflict of the merge queue.
    "rerere.enabled=false",
];

/// The subcommands that can produce a diff: given `--no-ext-diff
/// --no-textconv --no-color` right after their name (`color.diff=always`
/// would put escape codes in what ralph reads).
const DIFFING: &[&str] = &[
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "log",
    "show",
];

/// Environment a call must not inherit: it would point git at another
/// repository, index or program.
const UNSET_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    // Configuration from the environment (settings can give hooks any
    // environment): it would reach git past the read that empties drivers.
    // GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM stay: they name the user's own
    // files, which the read covers (and the cache watches).
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG",
    // Attributes from a tree of the agent's choosing, replace refs under
    // another prefix, another namespace of refs.
    "GIT_ATTR_SOURCE",
    "GIT_REPLACE_REF_BASE",
    "GIT_NAMESPACE",
];

/// Why a git call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitError {
    /// git could not be started.
    Start(String),
    TimedOut {
        command: String,
        secs: u64,
    },
    Failed {
        command: String,
        code: Option<i32>,
        output: String,
    },
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Start(e) => write!(f, "could not start git: {e}"),
            GitError::TimedOut { command, secs } => {
                write!(f, "git {command} timed out after {secs}s")
            }
            GitError::Failed {
                command,
                code,
                output,
            } => write!(
                f,
                "git {command} failed (exit {}): {}",
                code.map_or("none".into(), |c| c.to_string()),
                last_lines(output, 6)
            ),
        }
    }
}

impl From<GitError> for String {
    fn from(e: GitError) -> String {
        e.to_string()
    }
}

/// One git call in a folder: a read (no optional locks) or a write, with
/// ralph's own index when given.
#[derive(Debug, Clone)]
pub struct Git<'a> {
    dir: &'a Path,
    read_only: bool,
    index: Option<&'a Path>,
    timeout: Duration,
}

impl<'a> Git<'a> {
    /// A call that may write (commit, merge, reset, worktree).
    pub fn write(dir: &'a Path) -> Git<'a> {
        Git {
            dir,
            read_only: false,
            index: None,
            timeout: WRITE_TIMEOUT,
        }
    }

    /// A call that only looks: git takes no optional lock (no index
    /// refresh written behind the user's back).
    pub fn read(dir: &'a Path) -> Git<'a> {
        Git {
            dir,
            read_only: true,
            index: None,
            timeout: READ_TIMEOUT,
        }
    }

    /// Use `index` (a file of ralph's) instead of the repository's index.
    pub(crate) fn with_index(mut self, index: &'a Path) -> Git<'a> {
        self.index = Some(index);
        self
    }

    /// Run `git ARGS`: its stdout, or why not.
    pub fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let mut cmd = self.command(args);
        let ran = bounded::run_bounded_capture(&mut cmd, self.timeout)
            .map_err(|e| GitError::Start(e.to_string()))?;
        match (ran.exit, ran.timed_out) {
            (Some(0), _) => Ok(ran.stdout),
            (_, true) => Err(GitError::TimedOut {
                command: args.join(" "),
                secs: self.timeout.as_secs(),
            }),
            (code, _) => {
                let mut output = String::from_utf8_lossy(&ran.stdout).into_owned();
                output.push_str(&ran.stderr_tail);
                Err(GitError::Failed {
                    command: args.join(" "),
                    code,
                    output: output.trim_end().to_string(),
                })
            }
        }
    }

    /// [`Git::run`], its stdout as text (trailing whitespace trimmed).
    pub fn text(&self, args: &[&str]) -> Result<String, GitError> {
        self.run(args)
            .map(|o| String::from_utf8_lossy(&o).trim_end().to_string())
    }

    /// Whether `git ARGS` exits 0 (a question: `diff --quiet`, `cat-file -e`).
    pub fn succeeds(&self, args: &[&str]) -> bool {
        self.run(args).is_ok()
    }

    /// The command itself (for a test, or a caller that must spawn it).
    pub fn command(&self, args: &[&str]) -> Command {
        let config = repo_config(self.dir);
        let mut cmd = Command::new("git");
        for kv in FIXED {
            cmd.arg("-c").arg(kv);
        }
        for kv in config.neutralising() {
            cmd.arg("-c").arg(kv);
        }
        if let Some((sub, rest)) = args.split_first() {
            cmd.arg(sub);
            if DIFFING.contains(sub) {
                cmd.args(["--no-ext-diff", "--no-textconv", "--no-color"]);
            }
            cmd.args(rest);
        }
        cmd.current_dir(self.dir);
        for var in UNSET_ENV {
            cmd.env_remove(var);
        }
        cmd.env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .env("GIT_PAGER", "cat")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .env("GIT_AUTHOR_NAME", &config.name)
            .env("GIT_AUTHOR_EMAIL", &config.email)
            .env("GIT_COMMITTER_NAME", &config.name)
            .env("GIT_COMMITTER_EMAIL", &config.email);
        if self.read_only {
            cmd.env("GIT_OPTIONAL_LOCKS", "0");
        }
        if let Some(index) = self.index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        cmd
    }
}

/// What ralph needs of a repository's configuration, read once a process
/// for each folder (or taken from the loop's cache of the read, see
/// [`crate::git_config`]): the names of the drivers to neutralise, and the
/// identity of commits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RepoConfig {
    pub filters: Vec<String>,
    pub merge_drivers: Vec<String>,
    pub diff_drivers: Vec<String>,
    pub name: String,
    pub email: String,
}

impl RepoConfig {
    /// The `-c` values that leave each named driver without a command.
    pub(crate) fn neutralising(&self) -> Vec<String> {
        let mut out = Vec::new();
        for n in &self.filters {
            for key in ["clean", "smudge", "process"] {
                out.push(format!("filter.{n}.{key}="));
            }
            out.push(format!("filter.{n}.required=false"));
        }
        for n in &self.merge_drivers {
            // An empty driver cannot start: git reports a conflict (measured
            // on git 2.47), which sends the story back; it never runs code.
            out.push(format!("merge.{n}.driver="));
        }
        for n in &self.diff_drivers {
            out.push(format!("diff.{n}.textconv="));
            out.push(format!("diff.{n}.command="));
        }
        out
    }

    /// Read from `git config -z` output (`key\nvalue\0`...), with the
    /// user's identity from `env` first (the tests' way to a `ConfigRead`).
    #[cfg(test)]
    fn parse(out: &[u8], env: impl Fn(&str) -> Option<String>) -> RepoConfig {
        let mut read = ConfigRead::default();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let text = String::from_utf8_lossy(record);
            let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
            read.add(key, value);
        }
        RepoConfig::from_read(read, env)
    }

    /// The configuration as read, with the user's identity from `env` first.
    pub(crate) fn from_read(read: ConfigRead, env: impl Fn(&str) -> Option<String>) -> RepoConfig {
        let pick = |var: &str, configured: Option<String>, fallback: &str| {
            env(var)
                .or(configured)
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| fallback.to_string())
        };
        RepoConfig {
            name: pick("GIT_AUTHOR_NAME", read.name, FALLBACK_NAME),
            email: pick("GIT_AUTHOR_EMAIL", read.email, FALLBACK_EMAIL),
            filters: read.filters,
            merge_drivers: read.merge_drivers,
            diff_drivers: read.diff_drivers,
        }
    }
}

/// The loop's cache of configuration reads (`LoopPaths::git_config`), once
/// the process knows its loop; without one, each process reads once.
static CACHE_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Keep this process's configuration reads in `file` (across processes),
/// and use it. The first call wins; a hook knows one loop.
pub fn cache_config_in(file: &Path) {
    let _ = CACHE_FILE.set(file.to_path_buf());
}

/// The configuration of `dir`, read at the first call for it in this process.
pub(crate) fn repo_config(dir: &Path) -> Arc<RepoConfig> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<RepoConfig>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(c) = cache.lock().ok().and_then(|m| m.get(dir).cloned()) {
        return c;
    }
    let read = Arc::new(read_config(dir));
    if let Ok(mut m) = cache.lock() {
        m.insert(dir.to_path_buf(), read.clone());
    }
    read
}

/// The configuration of `dir`: from the loop's cache when none of the
/// files it came from changed, else read (and the cache rewritten).
fn read_config(dir: &Path) -> RepoConfig {
    let env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
    let cache = CACHE_FILE
        .get()
        .filter(|f| f.parent().is_some_and(Path::is_dir));
    let dirs = cache.and_then(|_| git_config::find_git_dirs(dir));
    let (Some(file), Some(dirs)) = (cache, dirs) else {
        let listing = list_config(dir).unwrap_or_default();
        return RepoConfig::from_read(listing.read, env);
    };
    let key = git_config::key_env(&env);
    if let Some(read) = git_config::cached(file, &dirs.0, &key) {
        return RepoConfig::from_read(read, env);
    }
    let read_at_ns = git_config::now_ns();
    let Some(listing) = list_config(dir) else {
        return RepoConfig::from_read(ConfigRead::default(), env);
    };
    if !listing.cacheable {
        return RepoConfig::from_read(listing.read, env);
    }
    let files = git_config::watched(dir, &dirs, &listing, &env)
        .iter()
        .map(|f| git_config::FileStat::of(f))
        .collect();
    git_config::remember(
        file,
        git_config::CachedRead {
            git_dir: dirs.0,
            env: key,
            read_at_ns,
            files,
            read: listing.read.clone(),
        },
    );
    RepoConfig::from_read(listing.read, env)
}

/// One `git config --list --show-origin` (includes followed, every scope):
/// it runs nothing of the repository's. `None` when git gave no answer.
fn list_config(dir: &Path) -> Option<git_config::Listing> {
    let mut cmd = Command::new("git");
    cmd.args(["config", "-z", "--list", "--show-origin"])
        .current_dir(dir);
    for var in UNSET_ENV {
        cmd.env_remove(var);
    }
    let ran = bounded::run_bounded_capture(&mut cmd, READ_TIMEOUT).ok()?;
    if ran.exit != Some(0) {
        return None;
    }
    Some(git_config::parse_listing(&ran.stdout))
}

/// The nearest folder at or above `start` holding `.git` (a folder, or a file
/// for worktrees and submodules): the top of its work tree. Stats only.
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

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_names_every_driver_and_the_identity() {
        let out = b"filter.lfs.clean\ngit-lfs clean\0filter.evil.dots.smudge\nx\0merge.ours.driver\ntrue\0diff.tc.textconv\ncat\0merge.tool\nvimdiff\0user.name\nAda\0user.email\nada@x\0";
        let c = RepoConfig::parse(out, |_| None);
        assert_eq!(c.filters, ["lfs", "evil.dots"]);
        assert_eq!(c.merge_drivers, ["ours"]);
        assert_eq!(c.diff_drivers, ["tc"]);
        assert_eq!((c.name.as_str(), c.email.as_str()), ("Ada", "ada@x"));
        let n = c.neutralising();
        assert!(n.contains(&"filter.evil.dots.smudge=".to_string()));
        assert!(n.contains(&"filter.lfs.required=false".to_string()));
        assert!(n.contains(&"merge.ours.driver=".to_string()));
        assert!(n.contains(&"diff.tc.textconv=".to_string()));
    }

    #[test]
    fn identity_from_the_environment_first_then_the_fallback() {
        let c = RepoConfig::parse(b"user.name\nAda\0", |v| {
            (v == "GIT_AUTHOR_NAME").then(|| "Env".to_string())
        });
        assert_eq!((c.name.as_str(), c.email.as_str()), ("Env", FALLBACK_EMAIL));
    }

    #[test]
    fn a_diffing_command_gets_no_external_diff_nor_textconv() {
        let dir = std::env::temp_dir();
        let cmd = Git::read(&dir).command(&["diff", "HEAD"]);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = args.iter().position(|a| a == "diff").unwrap();
        assert_eq!(
            args[at + 1..],
            ["--no-ext-diff", "--no-textconv", "--no-color", "HEAD"]
        );
        assert!(args.contains(&"core.fsmonitor=false".to_string()));
    }
}
