//! Claude Code's own sandbox (bubblewrap and socat on Linux and WSL2,
//! Seatbelt on macOS): each of the agent's Bash commands runs where the
//! kernel refuses writes outside the project and to the paths denied, and
//! the network goes through the client's proxy. Whether a session runs in
//! it (`in_session`: the settings files and the client's `--settings`, which
//! a hook reads in `/proc`; measured in docs/client-measurements.md), and
//! what `ralph run` asks of it for its clients (`RunSandbox`). Does I/O: the
//! settings files, `/proc/<client>/cmdline`, `PATH`, the project's manifests.

use crate::file_names::{CONFIG_FILES, REVIEW_DIR};
use crate::paths::LoopPaths;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Whether the sandbox can run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Ready,
    /// Linux without these programs (the packages to install).
    Missing(Vec<&'static str>),
    /// A platform the client does not sandbox on.
    Unsupported,
}

impl Availability {
    /// What this machine has: Linux needs `bwrap` and `socat` on `PATH`;
    /// macOS has Seatbelt; native Windows has nothing.
    pub fn here() -> Availability {
        if cfg!(target_os = "macos") {
            return Availability::Ready;
        }
        if !cfg!(target_os = "linux") {
            return Availability::Unsupported;
        }
        let missing: Vec<&'static str> = [("bwrap", "bubblewrap"), ("socat", "socat")]
            .into_iter()
            .filter(|(program, _)| !on_path(program))
            .map(|(_, package)| package)
            .collect();
        if missing.is_empty() {
            Availability::Ready
        } else {
            Availability::Missing(missing)
        }
    }

    /// Why it cannot run, in one line with what to do; `None` when ready.
    pub fn why_not(&self) -> Option<String> {
        match self {
            Availability::Ready => None,
            Availability::Missing(packages) => Some(format!(
                "the sandbox needs {} (install: sudo apt-get install {}, or your distribution's packages)",
                packages.join(" and "),
                packages.join(" ")
            )),
            Availability::Unsupported => Some(
                "Claude Code has no sandbox on this platform (macOS, Linux and WSL2 have one)"
                    .to_string(),
            ),
        }
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// What ralph knows of a session's sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Seen {
    /// The agent's Bash commands run in it: where it was turned on.
    On(String),
    /// They do not: why.
    Off(String),
    /// Not known (a loop started from a terminal, for whichever session
    /// claims it).
    #[default]
    Unknown,
}

impl Seen {
    /// As the state keeps it (`None`: not known).
    pub fn flag(&self) -> Option<bool> {
        match self {
            Seen::On(_) => Some(true),
            Seen::Off(_) => Some(false),
            Seen::Unknown => None,
        }
    }
}

/// The settings that decide a session's sandbox, highest precedence first
/// (the client's order: managed, the command line, the project's local,
/// the project's, the user's), as (where, its JSON).
fn settings_sources(root: &Path, client_pid: Option<u32>) -> Vec<(String, Value)> {
    let read = |p: &Path| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
    };
    let mut out = Vec::new();
    for managed in [
        "/etc/claude-code/managed-settings.json",
        "/Library/Application Support/ClaudeCode/managed-settings.json",
    ] {
        if let Some(v) = read(Path::new(managed)) {
            out.push((managed.to_string(), v));
        }
    }
    if let Some(v) = client_pid.and_then(|pid| command_line_settings(pid, root)) {
        out.push(("the client's --settings".to_string(), v));
    }
    for rel in [".claude/settings.local.json", ".claude/settings.json"] {
        if let Some(v) = read(&root.join(rel)) {
            out.push((rel.to_string(), v));
        }
    }
    let user = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")));
    if let Some(v) = user.and_then(|d| read(&d.join("settings.json"))) {
        out.push(("~/.claude/settings.json".to_string(), v));
    }
    out
}

/// The client's `--settings` (JSON, or a file's path), from its command
/// line: a hook's `CLAUDE_PID` is the client (measured, 2.1.328).
fn command_line_settings(pid: u32, root: &Path) -> Option<Value> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let value = args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--settings=")
            .map(str::to_string)
            .or_else(|| {
                (a == "--settings")
                    .then(|| args.get(i + 1).cloned())
                    .flatten()
            })
    })?;
    serde_json::from_str(&value).ok().or_else(|| {
        let file = root.join(&value);
        serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
    })
}

/// Whether the session whose client is `client_pid` runs the agent's Bash
/// in the sandbox: `sandbox.enabled` in the first settings that say, and
/// the sandbox able to run here (when it cannot, the client runs the
/// commands without it).
pub fn in_session(root: &Path, client_pid: Option<u32>) -> Seen {
    let sources = settings_sources(root, client_pid);
    let decided = sources.iter().find_map(|(where_, v)| {
        v.pointer("/sandbox/enabled")
            .and_then(Value::as_bool)
            .map(|on| (where_.clone(), on))
    });
    match decided {
        Some((where_, true)) => match Availability::here().why_not() {
            None => Seen::On(where_),
            Some(why) => Seen::Off(format!("it is on in {where_}, but {why}")),
        },
        Some((where_, false)) => Seen::Off(format!("it is off in {where_}; {TURN_ON}")),
        None => Seen::Off(format!("no settings turn it on; {TURN_ON}")),
    }
}

/// How a user turns it on for a session.
const TURN_ON: &str = "turn it on with /sandbox, or \"sandbox\": {\"enabled\": true} in .claude/settings.json, then start again";

/// What a build or test run of a kind of project needs: the domains its
/// package manager fetches from and the caches it writes under the home
/// folder, by manifest (measured: `cargo fetch` fails with `Read-only file
/// system` until `~/.cargo` may be written, `npm install` until `~/.npm`
/// may; docs/client-measurements.md).
struct Registry {
    manifest: &'static str,
    domains: &'static [&'static str],
    caches: &'static [&'static str],
}

const fn registry(
    manifest: &'static str,
    domains: &'static [&'static str],
    caches: &'static [&'static str],
) -> Registry {
    Registry {
        manifest,
        domains,
        caches,
    }
}

const PYPI: &[&str] = &["pypi.org", "files.pythonhosted.org"];
const PIP_CACHE: &[&str] = &[".cache/pip"];
const MAVEN: &[&str] = &["repo.maven.apache.org", "repo1.maven.org"];
const GRADLE: &[&str] = &[
    "repo.maven.apache.org",
    "plugins.gradle.org",
    "services.gradle.org",
];

const REGISTRIES: &[Registry] = &[
    registry(
        "Cargo.toml",
        &[
            "crates.io",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
        ],
        &[".cargo/registry", ".cargo/git"],
    ),
    registry(
        "package.json",
        &["registry.npmjs.org", "registry.yarnpkg.com"],
        &[".npm", ".cache/yarn"],
    ),
    registry("pyproject.toml", PYPI, PIP_CACHE),
    registry("requirements.txt", PYPI, PIP_CACHE),
    registry("setup.py", PYPI, PIP_CACHE),
    registry(
        "go.mod",
        &["proxy.golang.org", "sum.golang.org"],
        &["go/pkg/mod", ".cache/go-build"],
    ),
    registry(
        "Gemfile",
        &["rubygems.org", "index.rubygems.org"],
        &[".gem", ".bundle"],
    ),
    registry("pom.xml", MAVEN, &[".m2"]),
    registry("build.gradle", GRADLE, &[".gradle", ".m2"]),
    registry("build.gradle.kts", GRADLE, &[".gradle", ".m2"]),
    registry(
        "composer.json",
        &["repo.packagist.org"],
        &[".cache/composer"],
    ),
];

/// What `ralph run` asks of its clients' sandbox: computed once at the
/// run's start from the loop as it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSandbox {
    /// Absolute paths the agent's commands may not write.
    pub deny_write: Vec<PathBuf>,
    /// The domains the network may reach besides the user's own
    /// (`sandbox.network.allowedDomains` in their settings, which the
    /// client adds), with the manifest that asks for each.
    pub domains: Vec<(String, &'static str)>,
    /// The package managers' caches the agent's commands may write (the
    /// sandbox allows only the project and temporary files otherwise).
    pub caches: Vec<PathBuf>,
    /// A git excludes file naming the placeholders (see
    /// [`crate::placeholders::ALWAYS_PROTECTED`]), with the user's own excludes first.
    pub excludes: Option<PathBuf>,
    /// Paths the agent's commands may not even read: the loop's locks (a
    /// process that opens one can hold it: `lock_holders`). The client
    /// binds `/dev/null` over them in the sandbox (measured on 2.1.328:
    /// `Permission denied`, even as root).
    pub deny_read: Vec<PathBuf>,
}

/// Where the run's placeholders' excludes file is kept (ralph's folder:
/// denied to the agent like the rest of it).
const EXCLUDES_FILE: &str = "sandbox-git-excludes";

impl RunSandbox {
    /// The run's sandbox for the loop at `paths`: its folder, its pinned
    /// files (`pins`, relative to the root), the loop's configuration, the
    /// project's client settings, ralph's own programs and plugin
    /// (`ralph_dirs`), and git's configuration, hooks and info denied; the
    /// registries of the manifests found at the root allowed. Writes the
    /// excludes file.
    pub fn plan(paths: &LoopPaths, pins: &[String], ralph_dirs: &[PathBuf]) -> RunSandbox {
        let root = &paths.root;
        let mut deny = vec![paths.dir.clone()];
        deny.extend(pins.iter().map(|p| root.join(p)));
        deny.extend(CONFIG_FILES.iter().map(|f| root.join(f)));
        deny.push(root.join(REVIEW_DIR));
        deny.push(root.join(".claude/settings.json"));
        deny.push(root.join(".claude/settings.local.json"));
        deny.extend(ralph_dirs.iter().cloned());
        let git_dir = common_git_dir(root);
        for git in ["config", "hooks", "info"] {
            deny.push(git_dir.join(git));
        }
        deny.sort();
        deny.dedup();
        let (domains, caches) = needs(root, home_dir().as_deref());
        // A denied path that does not exist gets a placeholder as well
        // (measured: `.claude/ralph.toml`).
        let denied_here = deny.iter().filter_map(|p| p.strip_prefix(root).ok());
        let mut absent: Vec<String> = crate::placeholders::ALWAYS_PROTECTED
            .iter()
            .map(PathBuf::from)
            .chain(denied_here.map(Path::to_path_buf))
            .filter(|rel| !rel.starts_with(".git"))
            .filter(|rel| std::fs::symlink_metadata(root.join(rel)).is_err())
            .map(|rel| rel.display().to_string())
            .collect();
        absent.sort();
        absent.dedup();
        let excludes = write_excludes(paths, &absent);
        // The locks exist before the client starts (a denied path that does
        // not is given a placeholder, in ralph's folder).
        let deny_read = vec![paths.lock.clone(), paths.merge_lock.clone()];
        for lock in &deny_read {
            let _ = crate::loop_lock::LoopLock::make_file(lock);
        }
        RunSandbox {
            deny_read,
            deny_write: deny,
            domains,
            caches,
            excludes,
        }
    }

    /// The client's `--settings`: the sandbox on, no command out of it,
    /// Bash allowed inside it (the kernel holds the line, and ralph's guard
    /// reads every call), the paths denied, the domains allowed, and git
    /// told to pass over the placeholders (`GIT_CONFIG_*`, unless the
    /// runner's own environment uses them). Pure.
    pub fn settings(&self, git_config_taken: bool) -> Value {
        let deny: Vec<String> = self
            .deny_write
            .iter()
            .map(|p| format!("/{}", p.display()))
            .collect();
        let deny_read: Vec<String> = self
            .deny_read
            .iter()
            .map(|p| format!("/{}", p.display()))
            .collect();
        let domains: Vec<&str> = self.domains.iter().map(|(d, _)| d.as_str()).collect();
        let caches: Vec<String> = self
            .caches
            .iter()
            .map(|p| format!("/{}", p.display()))
            .collect();
        let mut settings = json!({
            "sandbox": {
                "enabled": true,
                "failIfUnavailable": true,
                "autoAllowBashIfSandboxed": true,
                "allowUnsandboxedCommands": false,
                "filesystem": {"denyWrite": deny, "denyRead": deny_read, "allowWrite": caches},
                "network": {"allowedDomains": domains},
            },
            "permissions": {"allow": ["Bash"]},
        });
        if let (Some(file), false) = (&self.excludes, git_config_taken) {
            settings["env"] = json!({
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "core.excludesFile",
                "GIT_CONFIG_VALUE_0": file.display().to_string(),
            });
        }
        settings
    }

    /// The run's first lines about it. Pure.
    pub fn describe(&self) -> String {
        let network = if self.domains.is_empty() {
            "no registry (no manifest found)".to_string()
        } else {
            let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
            for (d, m) in &self.domains {
                match by.iter_mut().find(|(mm, _)| mm == m) {
                    Some((_, ds)) => ds.push(d),
                    None => by.push((m, vec![d])),
                }
            }
            by.iter()
                .map(|(m, ds)| format!("{} ({m})", ds.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let caches = if self.caches.is_empty() {
            String::new()
        } else {
            let shown: Vec<String> = self
                .caches
                .iter()
                .map(|c| c.display().to_string())
                .collect();
            format!(" and the package caches {}", shown.join(", "))
        };
        format!(
            "🔒 sandbox on: the agent's commands run in Claude Code's sandbox, which may write the project{caches} but not ralph's folder, the pinned files, the loop's configuration, the client's settings or .git/config, .git/hooks, .git/info ({} paths denied); network: {network}, and your settings' sandbox.network.allowedDomains",
            self.deny_write.len()
        )
    }
}

/// The domains (with the manifest that asks for each) and the caches the
/// manifests at `root` need. A cache folder that is not there yet is made:
/// the sandbox can only open a folder that exists. `CARGO_HOME` moves
/// cargo's.
fn needs(root: &Path, home: Option<&Path>) -> (Vec<(String, &'static str)>, Vec<PathBuf>) {
    let mut domains: Vec<(String, &'static str)> = Vec::new();
    let mut caches: Vec<PathBuf> = Vec::new();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    for r in REGISTRIES
        .iter()
        .filter(|r| root.join(r.manifest).is_file())
    {
        for host in r.domains {
            if !domains.iter().any(|(d, _)| d == host) {
                domains.push(((*host).to_string(), r.manifest));
            }
        }
        for rel in r.caches {
            let dir = match (rel.strip_prefix(".cargo/"), &cargo_home, home) {
                (Some(sub), Some(ch), _) => ch.join(sub),
                (_, _, Some(h)) => h.join(rel),
                _ => continue,
            };
            if !caches.contains(&dir) && std::fs::create_dir_all(&dir).is_ok() {
                caches.push(dir);
            }
        }
    }
    (domains, caches)
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The repository's own git folder, shared by every worktree: in a linked
/// worktree it is not `.git` (a file there), and the client's sandbox lets
/// the agent's commands write it (its objects and refs: measured, 2.1.328).
fn common_git_dir(root: &Path) -> PathBuf {
    crate::git::Git::read(root)
        .text(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .ok()
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .unwrap_or_else(|| root.join(".git"))
}

/// The excludes file in the loop's folder: the user's own global excludes
/// (git's `core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`), then
/// the placeholders, anchored at the top of the work tree.
fn write_excludes(paths: &LoopPaths, absent: &[String]) -> Option<PathBuf> {
    if absent.is_empty() {
        return None;
    }
    let mut text = user_excludes(&paths.root).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# ralph run: the names Claude Code's sandbox binds /dev/null over (absent, always protected or denied)\n");
    for name in absent {
        // A pattern's own characters are escaped: the name is literal.
        let literal: String = name
            .chars()
            .flat_map(|c| match c {
                '*' | '?' | '[' | '\\' | '!' | '#' => vec!['\\', c],
                _ => vec![c],
            })
            .collect();
        text.push_str(&format!("/{literal}\n"));
    }
    let file = paths.dir.join(EXCLUDES_FILE);
    crate::store::atomic_write(&file, text.as_bytes()).ok()?;
    Some(file)
}

/// The excludes file git reads in `root` (`core.excludesFile` of any of
/// its configuration files, the repository's first), which the run's file
/// stands in for.
fn user_excludes(root: &Path) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let configured = crate::git::Git::read(root)
        .text(&["config", "--path", "--get", "core.excludesFile"])
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let default = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("git/ignore"))
        .or_else(|| home.map(|h| h.join(".config/git/ignore")));
    std::fs::read_to_string(configured.or(default)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_in(tag: &str, files: &[&str]) -> (LoopPaths, RunSandbox) {
        let dir = std::env::temp_dir().join(format!("ralph-sandbox-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("proj");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for f in files {
            std::fs::write(root.join(f), "").unwrap();
        }
        let paths = LoopPaths::in_data_dir(&dir.join("data"), &root);
        std::fs::create_dir_all(&paths.dir).unwrap();
        let plan = RunSandbox::plan(&paths, &["tests/check.sh".to_string()], &[]);
        (paths, plan)
    }

    // The client sandboxes on Linux and macOS only (`Availability::here`),
    // and these are its settings' Unix paths (`//abs`).
    #[cfg(unix)]
    #[test]
    fn the_run_denies_ralphs_files_and_allows_its_manifests_registries() {
        let (paths, plan) = plan_in("deny", &["Cargo.toml", ".vscode"]);
        let root = &paths.root;
        for p in [
            paths.dir.clone(),
            root.join("tests/check.sh"),
            root.join(".ralph/command-policy"),
            root.join(".claude/ralph-review"),
            root.join(".claude/settings.json"),
            root.join(".git/config"),
            root.join(".git/hooks"),
            root.join(".git/info"),
        ] {
            assert!(plan.deny_write.contains(&p), "{} not denied", p.display());
        }
        let domains: Vec<&str> = plan.domains.iter().map(|(d, _)| d.as_str()).collect();
        assert!(domains.contains(&"index.crates.io"), "{domains:?}");
        assert!(!domains.contains(&"registry.npmjs.org"), "{domains:?}");
        let settings = plan.settings(false);
        assert_eq!(settings["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(settings["sandbox"]["enabled"], true);
        let deny = settings["sandbox"]["filesystem"]["denyWrite"].to_string();
        assert!(
            deny.contains(&format!(
                "\"//{}",
                paths.dir.display().to_string().trim_start_matches('/')
            )),
            "{deny}"
        );
        // The loop's locks may not even be read (a process that opens one
        // can hold it), and are there before the client starts.
        let unread = settings["sandbox"]["filesystem"]["denyRead"].to_string();
        assert!(
            unread.contains(&format!("/{}\"", paths.lock.display()))
                && unread.contains(&format!("/{}\"", paths.merge_lock.display())),
            "{unread}"
        );
        assert!(paths.lock.exists() && paths.merge_lock.exists());
        // The placeholders that are not there are excluded; .vscode is.
        let excludes = std::fs::read_to_string(plan.excludes.as_ref().unwrap()).unwrap();
        assert!(
            excludes.contains("\n/.bashrc\n") && !excludes.contains("/.vscode"),
            "{excludes}"
        );
        assert_eq!(settings["env"]["GIT_CONFIG_KEY_0"], "core.excludesFile");
        assert!(plan.settings(true).get("env").is_none());
        assert!(
            plan.describe().contains("index.crates.io") && plan.describe().contains("(Cargo.toml)")
        );
        let _ = std::fs::remove_dir_all(root.parent().unwrap());
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "needs git on PATH (Git for Windows), which Wine here has not"
    )]
    fn in_a_linked_worktree_the_repositorys_own_git_folder_is_denied_and_its_excludes_kept() {
        let dir = std::env::temp_dir().join(format!("ralph-sandbox-linked-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let main = dir.join("main");
        crate::test_git::repo_with_commit(&main, "a.txt");
        let git = |args: &[&str]| {
            crate::test_git::git(&main, args);
        };
        let linked = dir.join("linked");
        git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            linked.to_str().unwrap(),
        ]);
        // The repository's own excludes file (not the global one).
        let mine = dir.join("my-ignore");
        std::fs::write(&mine, "secrets/\n").unwrap();
        git(&["config", "core.excludesFile", mine.to_str().unwrap()]);
        let paths = LoopPaths::in_data_dir(&dir.join("data"), &linked);
        std::fs::create_dir_all(&paths.dir).unwrap();
        let plan = RunSandbox::plan(&paths, &[], &[]);
        let common = std::fs::canonicalize(main.join(".git")).unwrap();
        for p in ["config", "hooks", "info"] {
            assert!(
                plan.deny_write.iter().any(|d| *d == common.join(p)),
                "{p}: {:?}",
                plan.deny_write
            );
        }
        let excludes = std::fs::read_to_string(plan.excludes.as_ref().unwrap()).unwrap();
        assert!(excludes.starts_with("secrets/\n"), "{excludes}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_manifest_opens_its_registry_and_its_caches() {
        let (paths, _) = plan_in("needs", &["package.json", "requirements.txt"]);
        let home = paths.root.parent().unwrap().join("home");
        let (domains, caches) = needs(&paths.root, Some(&home));
        let domains: Vec<&str> = domains.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(
            domains,
            [
                "registry.npmjs.org",
                "registry.yarnpkg.com",
                "pypi.org",
                "files.pythonhosted.org"
            ]
        );
        assert_eq!(
            caches,
            [
                home.join(".npm"),
                home.join(".cache/yarn"),
                home.join(".cache/pip")
            ]
        );
        assert!(
            caches.iter().all(|c| c.is_dir()),
            "made, so the sandbox can open them"
        );
        let (none, no_caches) = needs(&home, Some(&home));
        assert!(none.is_empty() && no_caches.is_empty());
        let _ = std::fs::remove_dir_all(paths.root.parent().unwrap());
    }

    #[test]
    fn a_session_is_sandboxed_by_its_settings() {
        let (paths, _) = plan_in("session", &[]);
        std::fs::create_dir_all(paths.root.join(".claude")).unwrap();
        let local = paths.root.join(".claude/settings.local.json");
        std::fs::write(&local, r#"{"sandbox":{"enabled":false}}"#).unwrap();
        std::fs::write(
            paths.root.join(".claude/settings.json"),
            r#"{"sandbox":{"enabled":true}}"#,
        )
        .unwrap();
        // The local file comes first.
        assert!(
            matches!(in_session(&paths.root, None), Seen::Off(w) if w.contains("settings.local.json"))
        );
        std::fs::remove_file(&local).unwrap();
        match in_session(&paths.root, None) {
            Seen::On(w) => assert!(w.contains(".claude/settings.json")),
            Seen::Off(w) => assert!(w.contains("needs") || w.contains("platform"), "{w}"),
            Seen::Unknown => panic!("known"),
        }
        let _ = std::fs::remove_dir_all(paths.root.parent().unwrap());
    }
}
