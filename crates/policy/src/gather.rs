//! What the guard reads before it decides (the "gather" stage of the
//! PreToolUse hook): the loop's facts for one tool call, into a
//! [`LoopContext`] the pure [`crate::decide`] judges. Does I/O: it reads
//! the loop's state, stats the loop's files, resolves links, reads the
//! environment. Everything is derived here, once per call, and then only
//! used (ripgrep's `HiArgs` in spirit): the guard binary stays a thin shell.

use crate::command_policy::{Policy, Tier};
use crate::context::{Identify, LoopContext, PolicySource, RalphProgram, ToolCall};
use ralph_core::frontmatter;
use ralph_core::paths::{LoopPaths, POLICY_FILE, POLICY_FILE_ALT, PROTECTED_FILES, REVIEW_DIR};
use ralph_core::store::{self, StoreError};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Remembers that this policy's `[wrap]` rows were reported, so the user is
/// told once rather than before every tool call.
pub const WRAP_MARKER: &str = ".claude/ralph-guard.wrap-noted";

/// Size caps for what the guard reads: it answers before every tool call and
/// must not stall on an absurd file. The state's `prd_file:` line is near its
/// top; a policy is a page of rules.
pub const POLICY_LIMIT: u64 = 1 << 20;
const STATE_LIMIT: u64 = 1 << 20;
const PRD_LIMIT: u64 = 64 << 20;
pub const MARKER_LIMIT: u64 = 1 << 16;

/// One guarded call: where it runs and who makes it.
pub struct Call<'a> {
    pub call: &'a ToolCall,
    pub root: &'a Path,
    pub paths: &'a LoopPaths,
    pub cwd: &'a Path,
    pub loop_active: bool,
    pub policy: &'a PolicySource,
    /// The hook input's `agent_type` (a subagent's call).
    pub agent_type: Option<&'a str>,
}

/// The facts of the loop's state the guard needs, read from its
/// frontmatter line by line (no YAML parse before every tool call).
struct StateFacts {
    fresh: bool,
    parallel: bool,
    prd: String,
    story_checks: BTreeMap<String, String>,
    pins: BTreeMap<String, String>,
}

impl StateFacts {
    fn read(state: Option<&str>) -> StateFacts {
        let text = state.unwrap_or_default();
        let field = |key: &str| frontmatter::scan(text, key);
        StateFacts {
            fresh: field("fresh") == Some("true"),
            parallel: field("parallel")
                .and_then(|v| v.parse::<u32>().ok())
                .is_some_and(|n| n > 0),
            prd: field("prd_file")
                .filter(|v| !v.is_empty() && *v != "null" && *v != "~")
                .unwrap_or("prd.json")
                .to_string(),
            story_checks: frontmatter::scan_map(text, "story_checks"),
            pins: frontmatter::scan_map(text, "pins"),
        }
    }
}

/// Everything the decision needs about this call and the loop.
pub fn context(c: &Call) -> LoopContext {
    let real_root = fs::canonicalize(c.root).ok();
    let mut ctx = LoopContext {
        root: c.root.to_path_buf(),
        real_root: real_root.clone().filter(|r| r != c.root),
        cwd: c.cwd.to_path_buf(),
        loop_active: c.loop_active,
        wrap_reported: wrap_already_reported(c.root, c.policy),
        windows: cfg!(windows),
        ..LoopContext::default()
    };
    if !c.loop_active {
        return ctx;
    }
    // Windows: Git Bash hands its programs HOME in Windows form; without it,
    // the profile folder (as `paths::data_root` reads them).
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    ctx.home = var("HOME")
        .or_else(|| var("USERPROFILE").filter(|_| cfg!(windows)))
        .map(PathBuf::from);
    ctx.loop_files = PROTECTED_FILES.iter().map(PathBuf::from).collect();
    let state = read_capped(&c.paths.state, STATE_LIMIT)
        .ok()
        .flatten()
        .or_else(|| read_capped(&c.paths.mirror, STATE_LIMIT).ok().flatten());
    let facts = StateFacts::read(state.as_deref());
    workers(c, &facts, &mut ctx);
    // What a whole-tree `git stash -u` or `git clean` may not take: the
    // policy (nothing puts it back), and everything while the state itself
    // lives in the tree (RALPH_DATA_DIR pointed there).
    ctx.kept_from_whole_tree = if c.paths.state.starts_with(c.root) {
        ctx.loop_files
            .iter()
            .cloned()
            .chain([PathBuf::from(&facts.prd)])
            .collect()
    } else {
        [POLICY_FILE, POLICY_FILE_ALT]
            .iter()
            .map(PathBuf::from)
            .collect()
    };
    (ctx.protected_dirs, ctx.client_projects) = protected_dirs(
        c.root,
        real_root.as_deref().unwrap_or(c.root),
        ctx.home.as_deref(),
    );
    let config_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    ctx.settings_files =
        crate::settings::settings_files(c.root, ctx.home.as_deref(), config_dir.as_deref());
    ctx.git_dirs = git_dirs(c.root);
    ctx.ralph_programs = ralph_programs();
    ctx.identify = Some(Identify(identify));
    if c.call.tool_name != "Bash" {
        file_tool(c, &facts, &mut ctx);
    }
    ctx.config_dirs = vec![PathBuf::from(REVIEW_DIR)];
    // Pinned checks: their files may not be written (see ralph_core::pins).
    ctx.pins = facts
        .pins
        .into_iter()
        .map(|(path, why)| (PathBuf::from(path), why))
        .collect();
    let prd = PathBuf::from(facts.prd);
    ctx.missing = ctx
        .loop_files
        .iter()
        .chain(&ctx.config_dirs)
        .chain(std::iter::once(&prd))
        .filter(|rel| !c.root.join(rel).exists())
        .cloned()
        .collect();
    ctx.prd_file = Some(prd);
    ctx
}

/// --fresh: the main thread only dispatches; only a ralph:ralph-worker
/// (whose stop SubagentStop checks) writes. Another subagent the main
/// thread might start instead would write past that gate.
/// --parallel: only its worktree workers write, each in its own worktree
/// (its hook `cwd`); a plain ralph:ralph-worker would write in the main tree.
fn workers(c: &Call, facts: &StateFacts, ctx: &mut LoopContext) {
    let worker = if facts.parallel {
        ralph_core::parallel::WORKER_TYPE
    } else {
        ralph_core::fresh::WORKER_TYPE
    };
    ctx.fresh_main_thread = (c.agent_type != Some(worker) && facts.fresh).then_some(worker);
    if facts.parallel && c.agent_type == Some(worker) {
        ctx.worker_tree = Some(c.cwd.to_path_buf());
        ctx.worker_tree_gone = !c.cwd.exists();
    }
}

/// A file tool's target: its real path, the settings' current text when it
/// is a settings file, its hard-link aliases among the protected files, and
/// for edits the PRD's current text and the checks fixed at start.
fn file_tool(c: &Call, facts: &StateFacts, ctx: &mut LoopContext) {
    if let Some(lexical) = c.call.file_target(c.cwd, ctx.home.as_deref(), false) {
        ctx.file_real_path = real_path(&lexical).filter(|r| *r != lexical);
        let real = ctx.file_real_path.as_ref().unwrap_or(&lexical);
        if ctx
            .settings_files
            .iter()
            .any(|f| *f == lexical || f == real)
        {
            ctx.settings_current = read_capped(real, POLICY_LIMIT).ok().flatten();
        }
        ctx.file_aliases = hard_link_aliases(&lexical, c.root, c.paths, &facts.prd);
        if let Some(config) = ctx
            .git_dirs
            .iter()
            .map(|d| d.join("config"))
            .find(|f| *f == lexical || f == real)
        {
            ctx.git_config_current = read_capped(&config, POLICY_LIMIT).ok().flatten();
        }
    }
    if matches!(c.call.tool_name.as_str(), "Write" | "Edit" | "MultiEdit") {
        ctx.prd_current = read_capped(&c.root.join(&facts.prd), PRD_LIMIT)
            .ok()
            .flatten();
        ctx.story_checks = facts.story_checks.clone();
    }
}

/// ralph's programs as installed where the hooks run them: this guard's own
/// folder and `$RALPH_BIN_DIR`. A `stat` each (eight at most).
#[cfg(unix)]
fn ralph_programs() -> Vec<RalphProgram> {
    use std::os::unix::fs::MetadataExt;
    let dirs = [
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf)),
        std::env::var_os("RALPH_BIN_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from),
    ];
    let mut out: Vec<RalphProgram> = Vec::new();
    for dir in dirs.into_iter().flatten() {
        for name in ["ralph", "ralph-setup", "ralph-stop-hook", "ralph-guard"] {
            let path = dir.join(name);
            let Ok(m) = fs::metadata(&path) else { continue };
            if m.is_file() && !out.iter().any(|p| p.dev == m.dev() && p.ino == m.ino()) {
                out.push(RalphProgram {
                    name: name.to_string(),
                    path,
                    dev: m.dev(),
                    ino: m.ino(),
                    size: m.size(),
                });
            }
        }
    }
    out
}

#[cfg(not(unix))]
fn ralph_programs() -> Vec<RalphProgram> {
    Vec::new()
}

/// How much of a same-sized file is compared with ralph's program: its
/// first and last bytes (a copy is the same bytes; two builds differ in
/// both their headers and their ends).
#[cfg(unix)]
const COMPARED: u64 = 64 << 10;

/// Which of ralph's `programs` the file at `path` is: the same file (a
/// link, or the program itself: same device and inode), or a copy (the
/// same size, and the same first and last 64 KiB). One `stat`, and reads
/// only for a file of exactly a program's size.
#[cfg(unix)]
fn identify(path: &Path, programs: &[RalphProgram]) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).ok().filter(fs::Metadata::is_file)?;
    if let Some(p) = programs
        .iter()
        .find(|p| p.dev == m.dev() && p.ino == m.ino())
    {
        return Some(p.name.clone());
    }
    let ends = |file: &Path| -> Option<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = fs::File::open(file).ok()?;
        let mut buf = Vec::new();
        (&mut f).take(COMPARED).read_to_end(&mut buf).ok()?;
        f.seek(SeekFrom::End(-(COMPARED.min(m.size()) as i64)))
            .ok()?;
        f.take(COMPARED).read_to_end(&mut buf).ok()?;
        Some(buf)
    };
    let mut mine = None;
    programs
        .iter()
        .filter(|p| p.size == m.size())
        .find_map(|p| {
            let mine = mine.get_or_insert_with(|| ends(path)).as_ref()?;
            (ends(&p.path).as_ref() == Some(mine)).then(|| p.name.clone())
        })
}

#[cfg(not(unix))]
fn identify(_path: &Path, _programs: &[RalphProgram]) -> Option<String> {
    None
}

/// The repository's own git folder, which every worktree shares: the
/// project's `.git` folder, or, when `.git` is a file (the project is
/// itself a worktree), the folder it names and that folder's `commondir`.
/// As found and with links resolved. One `lstat` when `.git` is a folder.
fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot = root.join(".git");
    let Ok(meta) = fs::symlink_metadata(&dot) else {
        return Vec::new();
    };
    let dir = if meta.is_file() {
        let Some(text) = read_capped(&dot, MARKER_LIMIT).ok().flatten() else {
            return Vec::new();
        };
        let Some(named) = text.trim().strip_prefix("gitdir:") else {
            return Vec::new();
        };
        let named = crate::context::normalize(&root.join(named.trim()));
        match read_capped(&named.join("commondir"), MARKER_LIMIT) {
            Ok(Some(common)) => crate::context::normalize(&named.join(common.trim())),
            _ => named,
        }
    } else {
        dot
    };
    let real = fs::canonicalize(&dir).ok().filter(|r| *r != dir);
    std::iter::once(dir).chain(real).collect()
}

/// A file's text, or None when it does not exist: `store::read_optional`
/// (which refuses a FIFO, whose open would block, and a device that never
/// ends), with a tighter cap per file, since the guard answers before every
/// tool call. Any error is worded for the user.
pub fn read_capped(path: &Path, limit: u64) -> Result<Option<String>, String> {
    // One open and one fstat: the size is judged on the file read.
    store::read_limited(path, limit).map_err(|e| match e {
        StoreError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    })
}

/// Folders outside the project whose whole content is ralph's or the
/// client's, kept from the agent's writes while a loop runs: ralph's data
/// folder (the loop's state, its passes), the binaries the hooks run (this
/// guard's own folder, `$RALPH_BIN_DIR`, the plugin's data folder with its
/// downloaded release, the plugin itself: `cp /bin/true …/ralph-stop-hook`
/// would end every check), and the client's transcripts (a worker's task is
/// its transcript's first line). A folder that holds the project, or lies
/// inside it (ralph developing itself), is left out: it would refuse every
/// edit. Only folders that exist. Also returns the client's `projects`
/// folder (its transcripts, and each project's auto-memory folder) as
/// written and with links resolved, when it is protected.
fn protected_dirs(
    root: &Path,
    real_root: &Path,
    home: Option<&Path>,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let client_config = var("CLAUDE_CONFIG_DIR").or_else(|| home.map(|h| h.join(".claude")));
    let projects = client_config.map(|c| c.join("projects"));
    let candidates = [
        Some(ralph_core::paths::data_root()),
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf)),
        var("RALPH_BIN_DIR"),
        var("CLAUDE_PLUGIN_DATA"),
        var("CLAUDE_PLUGIN_ROOT"),
        projects.clone(),
    ];
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut client_projects = Vec::new();
    for dir in candidates.into_iter().flatten() {
        let Ok(real) = fs::canonicalize(&dir) else {
            continue;
        };
        let overlaps = |r: &Path| r.starts_with(&real) || real.starts_with(r);
        if !real.is_dir() || overlaps(root) || overlaps(real_root) || dirs.contains(&real) {
            continue;
        }
        if projects.as_ref() == Some(&dir) {
            client_projects.push(dir.clone());
            if real != dir {
                client_projects.push(real.clone());
            }
        }
        if real != dir {
            dirs.push(dir);
        }
        dirs.push(real);
    }
    (dirs, client_projects)
}

/// Elsewhere than Unix: no device and inode to compare, no aliases found.
#[cfg(not(unix))]
fn hard_link_aliases(_target: &Path, _root: &Path, _paths: &LoopPaths, _prd: &str) -> Vec<PathBuf> {
    Vec::new()
}

/// The protected files that are `target` under another name: hard links
/// (same device and inode). Costs one `stat`, and more only when the target
/// has several links.
#[cfg(unix)]
fn hard_link_aliases(target: &Path, root: &Path, paths: &LoopPaths, prd: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::metadata(target) else {
        return Vec::new();
    };
    if meta.nlink() < 2 || !meta.is_file() {
        return Vec::new();
    }
    let mut candidates: Vec<PathBuf> = PROTECTED_FILES.iter().map(|r| root.join(r)).collect();
    candidates.push(root.join(prd));
    for p in paths.own_files() {
        if !candidates.iter().any(|c| c == p) {
            candidates.push(p.to_path_buf());
        }
    }
    candidates
        .into_iter()
        .filter(|c| c != target)
        .filter(|c| fs::metadata(c).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino()))
        .collect()
}

/// The path with symlinks resolved: the file itself when it exists, else its
/// folder (a Write may create the file).
fn real_path(p: &Path) -> Option<PathBuf> {
    if let Ok(r) = fs::canonicalize(p) {
        return Some(r);
    }
    let parent = fs::canonicalize(p.parent()?).ok()?;
    Some(parent.join(p.file_name()?))
}

pub fn wrap_signature(policy: &PolicySource) -> Option<String> {
    match policy {
        PolicySource::Loaded { path, policy } if !policy.wraps.is_empty() => {
            let mut s = format!("{path}\n");
            for w in &policy.wraps {
                s.push_str(&format!(
                    "{} {} {}\n",
                    w.line,
                    w.prefix,
                    w.label.as_deref().unwrap_or("")
                ));
            }
            Some(s)
        }
        _ => None,
    }
}

fn wrap_already_reported(root: &Path, policy: &PolicySource) -> bool {
    match wrap_signature(policy) {
        Some(sig) => read_capped(&root.join(WRAP_MARKER), MARKER_LIMIT)
            .is_ok_and(|m| m.as_deref() == Some(sig.as_str())),
        None => true,
    }
}

/// The `full` gate of the project's command policy (`[gates] full`), if
/// any: the check a loop started without `--verify` runs.
pub fn full_gate(root: &Path) -> Option<ralph_core::start::FullGate> {
    let (file, text) = [POLICY_FILE, POLICY_FILE_ALT]
        .into_iter()
        .find_map(|file| Some((file, store::read_optional(&root.join(file)).ok()??)))?;
    let policy = Policy::parse(&text).ok()?;
    let command = policy.gate(Tier::Full)?.to_string();
    Some(ralph_core::start::FullGate { file, command })
}
