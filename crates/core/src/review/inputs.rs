//! What a review depends on besides the work, fixed at the loop's start and
//! kept in the loop's folder (outside the project, out of the agent's
//! reach): each reviewer's instructions, the `claude` that reviews, and the
//! ignored paths there were. Review time reads only these copies, so
//! nothing the agent writes during the loop (`.claude/ralph-review/`, a
//! `claude` early on `PATH`) changes how the work is judged (issue 23).
//! Each copy is sealed (`seal`) and judged before a review uses it
//! ([`read_kept`]): one rewritten by a program outside the guard (a
//! `reviewer-claude` naming a script that approves) runs no review.
//! Does I/O.

use super::{ReviewConfig, builtin_instructions, change};
use crate::paths::LoopPaths;
use crate::seal::{self, Seal};
use crate::store::StoreError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a reviewer's instructions are kept for the loop.
fn kept(paths: &LoopPaths, name: &str) -> PathBuf {
    paths.reviewers.join(format!("{name}.md"))
}

/// Record, at a loop's start, what its reviews will use, each file sealed
/// (`seal`): an interpreter that rewrites `reviewer-claude` to name a
/// script that approves is a review rewritten. Nothing for a loop without
/// review.
pub(crate) fn record(
    paths: &LoopPaths,
    config: &ReviewConfig,
    claude: Option<&str>,
) -> Result<(), StoreError> {
    if !config.is_on() {
        return Ok(());
    }
    std::fs::create_dir_all(&paths.reviewers).map_err(|e| StoreError::io(&paths.reviewers, e))?;
    if config.command.is_none() {
        for name in &config.reviewers {
            seal::write(
                &kept(paths, name),
                project_instructions(&paths.root, name).as_bytes(),
            )?;
        }
        let mut env = Env::current();
        if let Some(claude) = claude {
            env.ralph_claude = Some(claude.to_string());
        }
        let bin = resolve_claude(&env);
        seal::write(&paths.reviewer_bin, bin.as_os_str().as_encoded_bytes())?;
    }
    let ignored = change::ignored_paths(&paths.root).join("\0");
    seal::write(&paths.ignored_at_start, ignored.as_bytes())
}

/// The project's `.claude/ralph-review/NAME.md`, else the built-in text.
fn project_instructions(root: &Path, name: &str) -> String {
    let own = root.join(".claude/ralph-review").join(format!("{name}.md"));
    std::fs::read_to_string(own).unwrap_or_else(|_| builtin_instructions(name).to_string())
}

/// What the reviews of one Stop use, as kept at the loop's start: each file
/// read once and judged by its seal, so what is judged is what is used.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kept {
    /// The ignored paths at the loop's start, when recorded.
    pub ignored: Option<Vec<String>>,
    /// The `claude` recorded at start (`None`: a loop started before ralph
    /// recorded it, resolved when used).
    bin: Option<PathBuf>,
    /// Each reviewer's instructions kept at start, by name.
    instructions: BTreeMap<String, String>,
}

impl Kept {
    /// A reviewer's instructions for this loop: the copy made at start. A
    /// loop started before ralph kept them gets the built-in text, never the
    /// project's file as it is now.
    pub(crate) fn instructions(&self, name: &str) -> String {
        self.instructions
            .get(name)
            .cloned()
            .unwrap_or_else(|| builtin_instructions(name).to_string())
    }

    /// The `claude` recorded at start; for a loop started before ralph
    /// recorded it, resolved now.
    pub(crate) fn claude_bin(&self) -> PathBuf {
        self.bin
            .clone()
            .unwrap_or_else(|| resolve_claude(&Env::current()))
    }
}

/// Read what the reviews `names` use (`program`: a `--review-cmd` loop,
/// which keeps only the ignored paths). `Err`: the files that failed their
/// seal, said for the verdicts of reviews not run. A file with no seal is
/// from a loop started before these were sealed, unless another of them
/// has one (then its seal was removed).
pub(crate) fn read_kept(paths: &LoopPaths, names: &[&str], program: bool) -> Result<Kept, String> {
    let mut files = vec![(
        paths.ignored_at_start.clone(),
        "ignored-at-start (the paths git ignored at the start)".to_string(),
    )];
    if !program {
        files.push((
            paths.reviewer_bin.clone(),
            "reviewer-claude (the `claude` that reviews)".into(),
        ));
        for name in names {
            files.push((
                kept(paths, name),
                format!("reviewers/{name}.md (the {name} reviewer's instructions)"),
            ));
        }
    }
    let sealed_any = files.iter().any(|(f, _)| seal::seal_path(f).exists());
    let mut texts = Vec::new();
    let mut broken = Vec::new();
    for (file, what) in &files {
        let read = seal::read_sealed(file);
        let gone = read.text.is_none() && seal::seal_path(file).exists();
        let unsealed = read.seal == Seal::Unsealed && sealed_any;
        if read.seal == Seal::Broken || gone || unsealed {
            broken.push(what.clone());
        }
        texts.push(read.text);
    }
    if !broken.is_empty() {
        return Err(format!(
            "ralph did not run the review: its record of {} in the loop's folder was changed outside ralph (a verdict from it would prove nothing; /cancel-ralph and start again to record them anew)",
            broken.join(", ")
        ));
    }
    let mut texts = texts.into_iter();
    let ignored = texts.next().flatten().map(|t| {
        t.split('\0')
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .collect()
    });
    let bin = if program {
        None
    } else {
        texts.next().flatten()
    };
    let instructions = names
        .iter()
        .zip(texts)
        .filter_map(|(n, t)| Some((n.to_string(), t?)))
        .collect();
    Ok(Kept {
        ignored,
        bin: bin.filter(|b| !b.is_empty()).map(PathBuf::from),
        instructions,
    })
}

/// What [`resolve_claude`] looks at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Env {
    /// `RALPH_CLAUDE`.
    pub ralph_claude: Option<String>,
    /// The executable of the client process the hooks are told of
    /// (`CLAUDE_PID`: measured on 2.1.328, the hook's `sh -c` is its child).
    pub client: Option<PathBuf>,
    /// The executables of this process's ancestors, nearest first.
    pub ancestors: Vec<PathBuf>,
    /// `PATH`, now.
    pub path: Option<std::ffi::OsString>,
}

impl Env {
    pub(crate) fn current() -> Env {
        Env {
            ralph_claude: std::env::var("RALPH_CLAUDE").ok().filter(|v| !v.is_empty()),
            client: std::env::var("CLAUDE_PID")
                .ok()
                .and_then(|pid| std::fs::read_link(format!("/proc/{}/exe", pid.trim())).ok()),
            ancestors: ancestor_exes(),
            path: std::env::var_os("PATH"),
        }
    }
}

/// The `claude` that reviews: `RALPH_CLAUDE` if set; else the client that
/// runs this session: the executable of `CLAUDE_PID` (a native client,
/// whatever its file is called; not a `node` that runs a script, nor a file
/// replaced since, `... (deleted)`), else an ancestor named `claude` or
/// `claude.exe`; else `claude` on `PATH`, now, as an absolute path; else
/// plain `claude` (which will fail, and say so).
pub(crate) fn resolve_claude(env: &Env) -> PathBuf {
    if let Some(bin) = &env.ralph_claude {
        return absolute(Path::new(bin), env);
    }
    let interpreter = |p: &&PathBuf| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| ["node", "bun", "deno"].iter().any(|i| n.starts_with(i)))
    };
    if let Some(client) = env
        .client
        .as_ref()
        .filter(|c| !interpreter(c) && c.is_file())
    {
        return client.clone();
    }
    let is_client = |p: &&PathBuf| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n == "claude" || n == "claude.exe")
    };
    if let Some(client) = env.ancestors.iter().find(is_client) {
        return client.clone();
    }
    absolute(Path::new("claude"), env)
}

/// `bin` as an absolute path: a bare name looked up on `env.path`.
fn absolute(bin: &Path, env: &Env) -> PathBuf {
    if bin.components().count() > 1 {
        return std::path::absolute(bin).unwrap_or_else(|_| bin.to_path_buf());
    }
    env.path
        .as_ref()
        .and_then(|p| {
            std::env::split_paths(p)
                .map(|d| d.join(bin))
                .find(|c| is_executable(c))
        })
        .unwrap_or_else(|| bin.to_path_buf())
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The executables of this process's ancestors (Linux `/proc`), nearest
/// first, at most 16.
fn ancestor_exes() -> Vec<PathBuf> {
    let mut out = Vec::new();
    // No `/proc` elsewhere than Linux: no ancestor found (pid 0 ends the walk).
    #[cfg(unix)]
    let mut pid = std::os::unix::process::parent_id();
    #[cfg(not(unix))]
    let mut pid = 0;
    for _ in 0..16 {
        if pid <= 1 {
            break;
        }
        if let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) {
            out.push(exe);
        }
        let Some(parent) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parent_of(&s))
        else {
            break;
        };
        pid = parent;
    }
    out
}

/// The parent pid in a `/proc/PID/stat` line (after the `)` that ends the
/// command name, which may hold spaces and parentheses).
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_resolved_once_from_the_env_the_session_or_path() {
        let dir = std::env::temp_dir().join(format!("ralph-resolve-{}", std::process::id()));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let on_path = bin.join("claude");
        std::fs::write(&on_path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&on_path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let env = Env {
            ralph_claude: None,
            client: Some("/usr/bin/node".into()),
            ancestors: vec!["/bin/sh".into(), "/opt/cc/claude.exe".into()],
            path: Some(bin.clone().into_os_string()),
        };
        assert_eq!(resolve_claude(&env), PathBuf::from("/opt/cc/claude.exe"));
        let env = Env {
            ancestors: vec!["/usr/bin/node".into()],
            ..env
        };
        assert_eq!(resolve_claude(&env), on_path);
        // An absolute path on this host (`/x` is not one on Windows).
        let wrapper = dir.join("claude-wrapper");
        let env = Env {
            ralph_claude: Some(wrapper.display().to_string()),
            ..env
        };
        assert_eq!(resolve_claude(&env), wrapper);
        let env = Env {
            ralph_claude: None,
            path: None,
            ..env
        };
        assert_eq!(resolve_claude(&env), PathBuf::from("claude"));
        // The session's client, whatever its file is called.
        let env = Env {
            client: Some(on_path.clone()),
            ..env
        };
        assert_eq!(resolve_claude(&env), on_path);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parent_pid_after_a_name_with_parentheses() {
        assert_eq!(parent_of("12 (a) b)) S 7 12 12 0"), Some(7));
        assert_eq!(parent_of("garbage"), None);
    }
}

#[cfg(test)]
mod kept_tests {
    use super::*;

    #[test]
    fn a_kept_input_rewritten_outside_ralph_runs_no_review() {
        let dir = std::env::temp_dir().join(format!("ralph-kept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let paths = LoopPaths::in_data_dir(&dir.join("data"), &root);
        std::fs::create_dir_all(&paths.dir).unwrap();
        let config = ReviewConfig {
            reviewers: vec!["acceptance".into()],
            ..ReviewConfig::default()
        };
        // An absolute path on this host (`/opt` is not one on Windows).
        let claude = dir.join("opt").join("claude");
        let claude_text = claude.display().to_string();
        record(&paths, &config, Some(&claude_text)).unwrap();
        let got = read_kept(&paths, &["acceptance"], false).unwrap();
        assert_eq!(got.claude_bin(), claude);
        assert_eq!(
            got.instructions("acceptance"),
            builtin_instructions("acceptance")
        );
        // An interpreter points the review at a script that approves.
        std::fs::write(&paths.reviewer_bin, "/tmp/approve.sh").unwrap();
        let why = read_kept(&paths, &["acceptance"], false).unwrap_err();
        assert!(why.contains("reviewer-claude"), "{why}");
        // Its seal removed too: the other inputs still have theirs.
        let _ = std::fs::remove_file(seal::seal_path(&paths.reviewer_bin));
        assert!(read_kept(&paths, &["acceptance"], false).is_err());
        // The instructions removed: the built-in text would run instead.
        record(&paths, &config, Some(&claude_text)).unwrap();
        std::fs::remove_file(kept(&paths, "acceptance")).unwrap();
        let why = read_kept(&paths, &["acceptance"], false).unwrap_err();
        assert!(why.contains("reviewers/acceptance.md"), "{why}");
        // A --review-cmd loop keeps only the ignored paths.
        assert!(read_kept(&paths, &["acceptance"], true).is_ok());
        std::fs::write(&paths.ignored_at_start, "target").unwrap();
        let why = read_kept(&paths, &[], true).unwrap_err();
        assert!(why.contains("ignored-at-start"), "{why}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
