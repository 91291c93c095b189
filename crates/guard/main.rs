//! ralph-guard: the PreToolUse hook for Bash, Write, Edit, MultiEdit and
//! NotebookEdit. A thin shell around `ralph_policy::decide`: it reads the hook
//! input and the few files the decision needs, and prints the decision.
//!
//! It runs before every tool call of every session, so the common case (no
//! loop, no policy) must cost no more than starting a process: one JSON value
//! read, a few `stat`s, nothing printed. Any internal error allows the call
//! (a broken guard must not wedge a session) but says so on stderr and in a
//! `systemMessage`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ralph_core::hook_input::{HookInput, InputError};
use ralph_core::paths::{
    LAST_INJECTED_FILE, LOCK_FILE, LOG_FILE, LoopPaths, POLICY_FILE, POLICY_FILE_ALT, REVIEW_DIR,
    SETTINGS_FILE, STATE_FILE, VERIFY_FILE, project_root_from_env,
};
use ralph_core::store::{self, StoreError};
use ralph_core::turn_tools;
use ralph_policy::{LoopContext, Policy, PolicyError, PolicySource, ToolCall, Verdict, decide};
use serde_json::Value;

/// Remembers that this policy's `[wrap]` rows were reported, so the user is
/// told once rather than before every tool call.
const WRAP_MARKER: &str = ".claude/ralph-guard.wrap-noted";

/// Remembers which policy text already passed the regex syntax check, so a
/// large policy is not re-checked before every tool call (a forged marker
/// only defers an error to the rule's first use, where it is still reported).
const CHECKED_MARKER: &str = ".claude/ralph-guard.policy-checked";

/// Size caps for what the guard reads: it answers before every tool call and
/// must not stall on an absurd file. The state's `prd_file:` line is near its
/// top; a policy is a page of rules.
const POLICY_LIMIT: u64 = 1 << 20;
const STATE_LIMIT: u64 = 1 << 20;
const PRD_LIMIT: u64 = 64 << 20;
const MARKER_LIMIT: u64 = 1 << 16;

const GUARDED_TOOLS: &[&str] = &["Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"];

fn main() {
    let output = std::panic::catch_unwind(run).unwrap_or_else(|_| {
        // The panic message itself went to stderr through the default hook.
        Some(serde_json::json!({
            "systemMessage": "ralph-guard: internal error (see stderr); the tool call was allowed unchecked."
        }))
    });
    if let Some(out) = output {
        let mut stdout = io::stdout().lock();
        if let Err(e) = writeln!(stdout, "{out}") {
            eprintln!("ralph-guard: cannot write the decision: {e}");
        }
    }
}

/// Claude Code writes the input and closes the pipe at once; a pipe that stays
/// silent this long is not going to deliver (the call is then allowed).
const STDIN_DEADLINE_SECS: u64 = 10;

fn run() -> Option<Value> {
    // The path of every tool call of every session without a loop or a
    // policy: Claude Code sets CLAUDE_PROJECT_DIR, so three stats decide,
    // without reading stdin.
    let mut env_paths = None;
    if let Some(dir) = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty()) {
        let paths = LoopPaths::new(PathBuf::from(dir));
        if !paths.has_loop()
            && !paths.root.join(POLICY_FILE).exists()
            && !paths.root.join(POLICY_FILE_ALT).exists()
        {
            return None;
        }
        env_paths = Some(paths);
    }
    let input = match HookInput::read_stdin_with_deadline(STDIN_DEADLINE_SECS) {
        Ok(input) => input,
        // Nothing sent, or nothing within the deadline: allow, silently. A
        // JSON value that is not an object names no tool call to judge.
        Err(InputError::Empty | InputError::Timeout(_) | InputError::NotAnObject) => return None,
        Err(e) => return Some(internal_error(&format!("cannot read the hook input: {e}"))),
    };
    let tool_name = input.tool_name?;
    if !GUARDED_TOOLS.contains(&tool_name.as_str()) {
        return None;
    }
    let hook_cwd = input.cwd.as_deref().filter(|c| !c.is_empty());
    let root = project_root_from_env(hook_cwd);
    // The loop's paths cost a walk of the root's links: once per call.
    let paths = env_paths
        .filter(|p| p.root == root)
        .unwrap_or_else(|| LoopPaths::new(&root));
    let loop_active = paths.has_loop();
    if loop_active {
        // Git's configuration read is kept in the loop's folder across hooks.
        ralph_core::git::cache_config_in(&paths.git_config);
    }
    // A reviewer's session (`--review`) runs with read-only tools of its own
    // (a pass only ralph hands out: `standaside`).
    if loop_active && ralph_core::standaside::in_reviewer_session(&paths) {
        return None;
    }
    // The agent running the guard itself from Bash (a forged call, recorded
    // as this turn's work to fool the no-progress breaker) gets nothing.
    if loop_active && ralph_core::control::this_process_run_by_agent() {
        return None;
    }
    let policy = read_policy(&root);
    if !loop_active && matches!(policy, PolicySource::Absent) {
        return None;
    }

    let cwd = hook_cwd.map(PathBuf::from).unwrap_or_else(|| root.clone());
    let call = ToolCall {
        tool_name,
        tool_input: input.tool_input.unwrap_or(Value::Null),
    };
    let agent_type = input.agent_type.as_deref();
    let ctx = context(&call, &root, &paths, &cwd, loop_active, &policy, agent_type);
    // --parallel: a worker's story is read from its task once, at its first
    // guarded call, before that call runs (`parallel::bound`).
    if ctx.worker_tree.is_some()
        && let Some(agent) = input.agent_id.as_deref()
    {
        ralph_core::parallel::bound::bind_at_first_call(
            &paths,
            input.transcript_path.as_deref(),
            agent,
        );
    }
    let decision = decide(&call, &policy, &ctx);
    if loop_active && !matches!(decision.verdict, Verdict::Deny(_)) {
        // The no-progress breaker's record of this turn's tools (see
        // ralph_core::turn_tools); a failure only leaves the Stop to judge
        // the turn from the transcript and the tree.
        let session = input.session_id.as_deref().unwrap_or("");
        if let Err(e) = turn_tools::record(&paths.turn_tools, session, &call.tool_name) {
            eprintln!("ralph-guard: {e}");
        }
    }
    if decision.wrap_notice_given {
        remember_wrap_notice(&root, &policy);
    }
    decision.to_hook_output()
}

fn internal_error(what: &str) -> Value {
    eprintln!("ralph-guard: {what}");
    serde_json::json!({
        "systemMessage": format!("ralph-guard: {what}; the tool call was allowed unchecked.")
    })
}

/// `.ralph/command-policy` wins over `.claude/ralph-policy` when both exist.
fn read_policy(root: &Path) -> PolicySource {
    for rel in [POLICY_FILE, POLICY_FILE_ALT] {
        match read_capped(&root.join(rel), POLICY_LIMIT) {
            Ok(Some(text)) => return parse_policy(root, rel, &text),
            Ok(None) => {}
            Err(e) => {
                return PolicySource::Broken {
                    path: rel.to_string(),
                    error: PolicyError::Unreadable(e),
                };
            }
        }
    }
    PolicySource::Absent
}

fn parse_policy(root: &Path, rel: &str, text: &str) -> PolicySource {
    let stamp = checked_stamp(text);
    let marker = root.join(CHECKED_MARKER);
    let checked =
        read_capped(&marker, MARKER_LIMIT).is_ok_and(|m| m.as_deref() == Some(stamp.as_str()));
    match Policy::parse_with(text, !checked) {
        Ok(policy) => {
            if !checked && !policy.rewrites.is_empty() {
                write_marker(&marker, &stamp);
            }
            PolicySource::Loaded {
                path: rel.to_string(),
                policy,
            }
        }
        Err(error) => {
            eprintln!("ralph-guard: {rel} is broken: {error}");
            PolicySource::Broken {
                path: rel.to_string(),
                error,
            }
        }
    }
}

/// A file's text, or None when it does not exist: `store::read_optional`
/// (which refuses a FIFO, whose open would block, and a device that never
/// ends), with a tighter cap per file, since the guard answers before every
/// tool call. Any error is worded for the user.
fn read_capped(path: &Path, limit: u64) -> Result<Option<String>, String> {
    if let Ok(meta) = fs::metadata(path)
        && meta.is_file()
        && meta.len() > limit
    {
        return Err(format!("larger than {limit} bytes"));
    }
    store::read_optional(path).map_err(|e| match e {
        StoreError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    })
}

/// Identifies a policy text (and the guard version that checked it).
fn checked_stamp(text: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    format!(
        "{} {:016x} {}\n",
        env!("CARGO_PKG_VERSION"),
        h.finish(),
        text.len()
    )
}

fn write_marker(marker: &Path, content: &str) {
    let written = marker
        .parent()
        .map_or(Ok(()), fs::create_dir_all)
        .and_then(|()| fs::write(marker, content));
    if let Err(e) = written {
        eprintln!("ralph-guard: cannot write {}: {e}", marker.display());
    }
}

fn context(
    call: &ToolCall,
    root: &Path,
    paths: &LoopPaths,
    cwd: &Path,
    loop_active: bool,
    policy: &PolicySource,
    agent_type: Option<&str>,
) -> LoopContext {
    let real_root = fs::canonicalize(root).ok();
    let mut ctx = LoopContext {
        root: root.to_path_buf(),
        real_root: real_root.clone().filter(|r| r != root),
        cwd: cwd.to_path_buf(),
        loop_active,
        wrap_reported: wrap_already_reported(root, policy),
        ..LoopContext::default()
    };
    if !loop_active {
        return ctx;
    }
    ctx.home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    // The verify results too: a forged one would pass the loop's checks.
    // And the loop's configuration, fixed at its start (the settings file,
    // the command policy, the reviewers' folder).
    ctx.loop_files = [
        STATE_FILE,
        LAST_INJECTED_FILE,
        LOG_FILE,
        LOCK_FILE,
        VERIFY_FILE,
        POLICY_FILE,
        POLICY_FILE_ALT,
        SETTINGS_FILE,
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let state = read_capped(&paths.state, STATE_LIMIT)
        .ok()
        .flatten()
        .or_else(|| read_capped(&paths.mirror, STATE_LIMIT).ok().flatten());
    // --fresh: the main thread only dispatches; only a ralph:ralph-worker
    // (whose stop SubagentStop checks) writes. Another subagent the main
    // thread might start instead would write past that gate.
    // --parallel: only its worktree workers write, each in its own worktree
    // (its hook `cwd`); a plain ralph:ralph-worker would write in the main tree.
    let parallel = state
        .as_deref()
        .map_or(0, ralph_policy::parallel_from_state)
        > 0;
    let worker = if parallel {
        ralph_core::parallel::WORKER_TYPE
    } else {
        ralph_core::fresh::WORKER_TYPE
    };
    ctx.fresh_main_thread = (agent_type != Some(worker)
        && state.as_deref().is_some_and(ralph_policy::fresh_from_state))
    .then_some(worker);
    if parallel && agent_type == Some(worker) {
        ctx.worker_tree = Some(cwd.to_path_buf());
        ctx.worker_tree_gone = !cwd.exists();
    }
    let prd = state
        .as_deref()
        .and_then(ralph_policy::prd_file_from_state)
        .unwrap_or_else(|| "prd.json".to_string());

    // What a whole-tree `git stash -u` or `git clean` may not take: the
    // policy (nothing puts it back), and everything while the state itself
    // lives in the tree (RALPH_DATA_DIR pointed there).
    ctx.kept_from_whole_tree = if paths.state.starts_with(root) {
        ctx.loop_files
            .iter()
            .cloned()
            .chain([PathBuf::from(&prd)])
            .collect()
    } else {
        [POLICY_FILE, POLICY_FILE_ALT]
            .iter()
            .map(PathBuf::from)
            .collect()
    };

    (ctx.protected_dirs, ctx.client_projects) = protected_dirs(
        root,
        real_root.as_deref().unwrap_or(root),
        ctx.home.as_deref(),
    );
    let config_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    ctx.settings_files =
        ralph_policy::settings::settings_files(root, ctx.home.as_deref(), config_dir.as_deref());
    if call.tool_name != "Bash" {
        if let Some(lexical) = call.file_target(cwd, ctx.home.as_deref()) {
            ctx.file_real_path = real_path(&lexical).filter(|r| *r != lexical);
            let real = ctx.file_real_path.as_ref().unwrap_or(&lexical);
            if ctx
                .settings_files
                .iter()
                .any(|f| *f == lexical || f == real)
            {
                ctx.settings_current = read_capped(real, POLICY_LIMIT).ok().flatten();
            }
            ctx.file_aliases = hard_link_aliases(&lexical, root, paths, &ctx.loop_files, &prd);
        }
        if matches!(call.tool_name.as_str(), "Write" | "Edit" | "MultiEdit") {
            ctx.prd_current = read_capped(&root.join(&prd), PRD_LIMIT).ok().flatten();
            ctx.story_checks = state
                .as_deref()
                .map(ralph_policy::story_checks_from_state)
                .unwrap_or_default();
        }
    }
    ctx.config_dirs = vec![PathBuf::from(REVIEW_DIR)];
    // Pinned checks: their files may not be written (see ralph_core::pins).
    ctx.pins = state
        .as_deref()
        .map(ralph_policy::pins_from_state)
        .unwrap_or_default()
        .into_iter()
        .map(|(path, why)| (PathBuf::from(path), why))
        .collect();
    let prd = PathBuf::from(prd);
    ctx.missing = ctx
        .loop_files
        .iter()
        .chain(&ctx.config_dirs)
        .chain(std::iter::once(&prd))
        .filter(|rel| !root.join(rel).exists())
        .cloned()
        .collect();
    ctx.prd_file = Some(prd);
    ctx
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

/// The protected files that are `target` under another name: hard links
/// (same device and inode). Costs one `stat`, and more only when the target
/// has several links.
fn hard_link_aliases(
    target: &Path,
    root: &Path,
    paths: &LoopPaths,
    loop_files: &[PathBuf],
    prd: &str,
) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::metadata(target) else {
        return Vec::new();
    };
    if meta.nlink() < 2 || !meta.is_file() {
        return Vec::new();
    }
    let mut candidates: Vec<PathBuf> = loop_files.iter().map(|r| root.join(r)).collect();
    candidates.push(root.join(prd));
    for p in [
        &paths.state,
        &paths.log,
        &paths.last_injected,
        &paths.lock,
        &paths.verify,
    ] {
        if !candidates.contains(p) {
            candidates.push(p.clone());
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

fn wrap_signature(policy: &PolicySource) -> Option<String> {
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

fn remember_wrap_notice(root: &Path, policy: &PolicySource) {
    if let Some(sig) = wrap_signature(policy) {
        write_marker(&root.join(WRAP_MARKER), &sig);
    }
}
