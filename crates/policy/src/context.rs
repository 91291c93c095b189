//! What the guard decides about, and what it answers: the tool call
//! ([`ToolCall`]), the loop's facts the binary gathered ([`LoopContext`]),
//! the command policy as found ([`PolicySource`]), and the answer
//! ([`Verdict`], [`GuardDecision`] and its hook output). Every rule of the
//! crate reads these; of the crate, they name only the command policy.
//! Pure.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use crate::command_policy::{Policy, PolicyError};
use crate::winpath;

/// Told to the agent whenever it reaches for a loop file.
pub(crate) const END_LOOP_HINT: &str = "To end the loop, print the completion promise when it is true; \
the user cancels the loop with /cancel-ralph.";

/// Lexically normalise: drop `.`, resolve `..`, keep it absolute.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The tool call as received on stdin.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool_name: String,
    pub tool_input: Value,
}

impl ToolCall {
    /// The file a file tool (Write, Edit, MultiEdit, NotebookEdit) acts on,
    /// as absolute and lexically normalised: a relative path is relative to
    /// `cwd`, the hook's; `~/` is the home folder, as the client reads it.
    /// With `windows`, the path is read in `winpath`'s one spelling (as
    /// `cwd` and `home` then are).
    pub(crate) fn file_target(
        &self,
        cwd: &Path,
        home: Option<&Path>,
        windows: bool,
    ) -> Option<PathBuf> {
        let key = if self.tool_name == "NotebookEdit" {
            "notebook_path"
        } else {
            "file_path"
        };
        let raw = self.tool_input.get(key).and_then(Value::as_str)?;
        let spelled;
        let raw = if windows {
            spelled = winpath::canonical(raw);
            spelled.as_str()
        } else {
            raw
        };
        let path = match (raw.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ if raw == "~" && home.is_some() => home.map(Path::to_path_buf)?,
            _ => cwd.join(raw),
        };
        Some(normalize(&path))
    }
}

/// Everything about the project the decision needs, read by the binary.
// Independent facts, each read on its own (a loop runs, a worktree is gone,
// the paths are Windows', the notice was given).
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopContext {
    /// The project root (lexical, as resolved from the environment).
    pub root: PathBuf,
    /// The root with symlinks resolved, when known.
    pub real_root: Option<PathBuf>,
    /// The hook's `cwd`: relative paths in the tool call are relative to it.
    pub cwd: PathBuf,
    /// The state file exists: built-in protection applies.
    pub loop_active: bool,
    /// The protected files (relative) that ralph cannot put back once they
    /// are gone: a `git stash -u` or `git clean` of the whole tree is denied
    /// while one of them exists. The policy file is one; the loop's files are
    /// not, since the state lives outside the tree and the Stop hook restores
    /// the mirror and the PRD (unless `RALPH_DATA_DIR` puts the state inside
    /// the tree: then all of them are).
    pub kept_from_whole_tree: Vec<PathBuf>,
    /// Loop-owned files, relative to the root.
    pub loop_files: Vec<PathBuf>,
    /// Which of `loop_files` and the PRD do not exist (relative). They stay
    /// guarded against being created, but removing a folder above them or a
    /// glob does not reach them.
    pub missing: Vec<PathBuf>,
    /// The PRD, relative to the root (`prd_file:` in the state, default `prd.json`).
    pub prd_file: Option<PathBuf>,
    /// The PRD's current text, for judging an Edit or a Write to it.
    pub prd_current: Option<String>,
    /// A `--fresh` loop runs and this call is not its worker's (the main
    /// thread's, or another subagent's): it only dispatches, so its writes
    /// are refused. The worker's `subagent_type` (`ralph:ralph-worker`, or
    /// `ralph:ralph-parallel-worker` with `--parallel`), to name in the refusal.
    pub fresh_main_thread: Option<&'static str>,
    /// A `--parallel` loop runs and this call is one of its workers': the
    /// worker's worktree (its `cwd`), the only place it may write (and the
    /// loop's shared `progress.txt`).
    pub worker_tree: Option<PathBuf>,
    /// The worker's worktree no longer exists (the loop was cancelled, or
    /// its story merged): read by the guard, so this crate stays pure.
    pub worker_tree_gone: bool,
    /// For file tools: the target with symlinked folders resolved, when it
    /// differs from the lexical path.
    pub file_real_path: Option<PathBuf>,
    /// For file tools: protected files (absolute) that are the target itself
    /// under another name, a hard link (same device and inode).
    pub file_aliases: Vec<PathBuf>,
    /// The user's home folder (`~`, `$HOME` in Bash paths), when known.
    pub home: Option<PathBuf>,
    /// The paths are Windows paths (the guard runs on Windows, or the
    /// project is named as one): words and paths are compared in
    /// `winpath`'s one spelling ([`LoopContext::in_one_spelling`]), and
    /// `$USERPROFILE`, `%USERPROFILE%` and their kin name the home folder.
    pub windows: bool,
    /// Folders outside the project whose whole content belongs to the loop
    /// (its data folder, where the authoritative state lives), absolute; only
    /// those that exist.
    pub protected_dirs: Vec<PathBuf>,
    /// The client's `projects` folders (absolute) among `protected_dirs`:
    /// its transcripts are kept from the agent, but each project's
    /// auto-memory folder in it (`projects/<project>/memory/`) is the
    /// agent's to write (the client's own feature).
    pub client_projects: Vec<PathBuf>,
    /// The checks recorded at loop start, story id -> verify command
    /// (`story_checks:` in the state's frontmatter). A PRD edit may not
    /// change or drop them.
    pub story_checks: BTreeMap<String, String>,
    /// The `[wrap]` rows of this policy were already reported to the user.
    pub wrap_reported: bool,
    /// Folders (relative) of the loop's configuration, fixed at its start
    /// (`.claude/ralph-review`): no file in them may be written.
    pub config_dirs: Vec<PathBuf>,
    /// Files pinned by the loop (relative), with what pinned them (a check's
    /// command, or `--pin GLOB`): `pins:` in the state's frontmatter.
    pub pins: Vec<(PathBuf, String)>,
    /// The client's settings files (absolute, `settings::settings_files`):
    /// a file tool may not change their switches, Bash may not write them.
    pub settings_files: Vec<PathBuf>,
    /// For file tools aimed at one of `settings_files`: its current text.
    pub settings_current: Option<String>,
    /// The repository's own git folder, shared by every worktree (the
    /// common dir: `.git`, or where a `.git` file's `commondir` leads), as
    /// named and with links resolved: its config, hooks and info make git
    /// run programs (`git_files`).
    pub git_dirs: Vec<PathBuf>,
    /// For file tools aimed at the repository's config: its current text.
    pub git_config_current: Option<String>,
    /// ralph's programs the hooks run (the guard's own folder,
    /// `$RALPH_BIN_DIR`): a command is recognised as one of them by what
    /// its program is, not only by its name.
    pub ralph_programs: Vec<RalphProgram>,
    /// Tells whether a file is one of `ralph_programs` (the same file, or a
    /// copy): supplied by the gathering, which does the I/O, and called
    /// only for a program named by a path outside the system's folders.
    pub identify: Option<Identify>,
}

/// One of ralph's installed programs, as the gathering found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RalphProgram {
    /// `ralph`, `ralph-setup`, `ralph-stop-hook`, `ralph-guard`.
    pub name: String,
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
}

/// Which of ralph's programs the file at a path is, if any: a reader the
/// gathering hands in, not a fact of the loop, so any two are equal (the
/// contexts compare by their facts).
#[derive(Clone, Copy)]
pub struct Identify(pub fn(&Path, &[RalphProgram]) -> Option<String>);

impl PartialEq for Identify {
    fn eq(&self, _: &Identify) -> bool {
        true
    }
}

impl std::fmt::Debug for Identify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identify")
    }
}

impl LoopContext {
    /// Which of ralph's programs `path` (absolute) is, by identity.
    pub(crate) fn ralph_program_at(&self, path: &Path) -> Option<String> {
        let identify = self.identify?;
        if self.ralph_programs.is_empty() || SYSTEM_DIRS.iter().any(|d| path.starts_with(d)) {
            return None;
        }
        (identify.0)(path, &self.ralph_programs)
    }
}

/// Folders of the system's own programs: a program there is not a copy of
/// ralph's (and is not looked at, so the common case costs nothing).
const SYSTEM_DIRS: &[&str] = &[
    "/usr/bin",
    "/usr/sbin",
    "/bin",
    "/sbin",
    "/usr/lib",
    "/nix/store",
];

impl LoopContext {
    /// The context with every path in `winpath`'s one spelling
    /// (`/c/users/me/proj`, lower case), so that the rules compare any
    /// spelling of a Windows path with any other: what `decide` judges when
    /// [`LoopContext::windows`] is set.
    pub(crate) fn in_one_spelling(&self) -> LoopContext {
        let one = |p: &PathBuf| normalize(Path::new(&winpath::canonical(&p.to_string_lossy())));
        let rel = |p: &PathBuf| PathBuf::from(winpath::canonical(&p.to_string_lossy()));
        let all = |v: &[PathBuf]| {
            let mut out: Vec<PathBuf> = Vec::with_capacity(v.len());
            for p in v.iter().map(one) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            out
        };
        let root = one(&self.root);
        LoopContext {
            real_root: self.real_root.as_ref().map(one).filter(|r| *r != root),
            root,
            cwd: one(&self.cwd),
            home: self.home.as_ref().map(one),
            kept_from_whole_tree: self.kept_from_whole_tree.iter().map(rel).collect(),
            loop_files: self.loop_files.iter().map(rel).collect(),
            missing: self.missing.iter().map(rel).collect(),
            prd_file: self.prd_file.as_ref().map(rel),
            worker_tree: self.worker_tree.as_ref().map(one),
            file_real_path: self.file_real_path.as_ref().map(one),
            file_aliases: all(&self.file_aliases),
            protected_dirs: all(&self.protected_dirs),
            client_projects: all(&self.client_projects),
            config_dirs: self.config_dirs.iter().map(rel).collect(),
            pins: self
                .pins
                .iter()
                .map(|(p, why)| (rel(p), why.clone()))
                .collect(),
            settings_files: all(&self.settings_files),
            git_dirs: all(&self.git_dirs),
            ralph_programs: self
                .ralph_programs
                .iter()
                .map(|p| RalphProgram {
                    path: one(&p.path),
                    ..p.clone()
                })
                .collect(),
            windows: true,
            ..self.clone()
        }
    }

    /// Whether the paths gathered read as Windows paths.
    pub(crate) fn named_the_windows_way(&self) -> bool {
        [Some(&self.root), Some(&self.cwd), self.home.as_ref()]
            .into_iter()
            .flatten()
            .any(|p| winpath::is_windows(&p.to_string_lossy()))
    }
}

impl LoopContext {
    /// The project root, then its real path when that differs.
    pub(crate) fn roots(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.root.as_path()).chain(self.real_root.as_deref())
    }

    /// A path (absolute, normalised) under the project root, or under its
    /// real path.
    pub(crate) fn in_project(&self, path: &Path) -> bool {
        self.roots().any(|r| path.starts_with(r))
    }

    /// Where Claude Code makes a `--parallel` worker's worktree: the
    /// project's `.claude/worktrees`, and when the project is a linked
    /// worktree, the main worktree's (the parent of the common git folder:
    /// measured on 2.1.328, the client puts them there).
    pub(crate) fn worktree_homes(&self) -> Vec<PathBuf> {
        let mut homes = vec![self.root.join(".claude").join("worktrees")];
        for dir in &self.git_dirs {
            if dir.file_name().is_some_and(|n| n == ".git")
                && let Some(main) = dir.parent()
                && !self.roots().any(|r| r == main)
            {
                homes.push(main.join(".claude").join("worktrees"));
            }
        }
        homes
    }

    /// A path in the client's auto-memory folder of a project
    /// (`<projects>/<project>/memory/...`): not a transcript.
    pub(crate) fn in_client_memory(&self, path: &Path) -> bool {
        self.client_projects.iter().any(|d| {
            path.strip_prefix(d).is_ok_and(|rest| {
                let mut parts = rest.components();
                parts.next().is_some() && parts.next().is_some_and(|c| c.as_os_str() == "memory")
            })
        })
    }
}

/// The policy as found on disk.
#[derive(Debug)]
pub enum PolicySource {
    Absent,
    /// It exists but does not parse: nothing is denied by it, and the user is
    /// told on every call.
    Broken {
        path: String,
        error: PolicyError,
    },
    Loaded {
        path: String,
        policy: Policy,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allow,
    Deny(String),
    /// Run the call with this whole tool input instead.
    Rewrite {
        updated_input: Value,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct GuardDecision {
    pub verdict: Verdict,
    /// Shown to the user (not the model).
    pub system_message: Option<String>,
    /// The `[wrap]` notice is part of `system_message`: remember it was given.
    pub wrap_notice_given: bool,
}

impl GuardDecision {
    /// The hook's stdout, or None when it should print nothing.
    pub fn to_hook_output(&self) -> Option<Value> {
        let mut out = serde_json::Map::new();
        match &self.verdict {
            Verdict::Allow => {}
            Verdict::Deny(reason) => {
                out.insert(
                    "hookSpecificOutput".into(),
                    json!({
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": reason,
                    }),
                );
            }
            Verdict::Rewrite {
                updated_input,
                reason,
            } => {
                out.insert(
                    "hookSpecificOutput".into(),
                    json!({
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": reason,
                        "updatedInput": updated_input,
                    }),
                );
            }
        }
        if let Some(m) = &self.system_message {
            out.insert("systemMessage".into(), Value::String(m.clone()));
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}
