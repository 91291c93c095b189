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

use ralph_core::hook_input::{self, InputError};
use ralph_core::paths::{
    LAST_INJECTED_FILE, LOCK_FILE, LOG_FILE, LoopPaths, POLICY_FILE, POLICY_FILE_ALT, STATE_FILE,
    VERIFY_FILE, project_root_from_env,
};
use ralph_policy::{LoopContext, Policy, PolicyError, PolicySource, ToolCall, decide, protect};
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
    if let Some(dir) = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty()) {
        let root = PathBuf::from(dir);
        if !LoopPaths::new(&root).state.exists()
            && !root.join(POLICY_FILE).exists()
            && !root.join(POLICY_FILE_ALT).exists()
        {
            return None;
        }
    }
    let input = match hook_input::stdin_first_value(STDIN_DEADLINE_SECS) {
        Ok(v) => v,
        // Nothing sent, or nothing within the deadline: allow, silently.
        Err(InputError::Empty | InputError::Timeout(_)) => return None,
        Err(e) => return Some(internal_error(&format!("cannot read the hook input: {e}"))),
    };
    let tool_name = input.get("tool_name").and_then(Value::as_str)?;
    if !GUARDED_TOOLS.contains(&tool_name) {
        return None;
    }
    let hook_cwd = input
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    let root = project_root_from_env(hook_cwd);
    let paths = LoopPaths::new(&root);
    let loop_active = paths.state.exists();
    let policy = read_policy(&root);
    if !loop_active && matches!(policy, PolicySource::Absent) {
        return None;
    }

    let cwd = hook_cwd.map(PathBuf::from).unwrap_or_else(|| root.clone());
    let call = ToolCall {
        tool_name: tool_name.to_string(),
        tool_input: input.get("tool_input").cloned().unwrap_or(Value::Null),
    };
    let ctx = context(&call, &root, &paths, &cwd, loop_active, &policy);
    let decision = decide(&call, &policy, &ctx);
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
        match read_text(&root.join(rel), POLICY_LIMIT) {
            Ok(text) => return parse_policy(root, rel, &text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return PolicySource::Broken {
                    path: rel.to_string(),
                    error: PolicyError::Unreadable(e.to_string()),
                };
            }
        }
    }
    PolicySource::Absent
}

fn parse_policy(root: &Path, rel: &str, text: &str) -> PolicySource {
    let stamp = checked_stamp(text);
    let marker = root.join(CHECKED_MARKER);
    let checked = read_text(&marker, MARKER_LIMIT).is_ok_and(|m| m == stamp);
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

/// Read a regular file as text, at most `limit` bytes. Anything else (a FIFO
/// would block the open forever, a device never ends) is an error: the
/// caller treats it as unreadable and goes on.
fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    use std::io::Read;
    let meta = fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    let mut text = String::new();
    fs::File::open(path)?
        .take(limit)
        .read_to_string(&mut text)?;
    Ok(text)
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
) -> LoopContext {
    let mut ctx = LoopContext {
        root: root.to_path_buf(),
        real_root: fs::canonicalize(root).ok().filter(|r| r != root),
        cwd: cwd.to_path_buf(),
        loop_active,
        wrap_reported: wrap_already_reported(root, policy),
        ..LoopContext::default()
    };
    if !loop_active {
        return ctx;
    }
    // The verify results too: a forged one would pass the loop's checks.
    ctx.loop_files = [
        STATE_FILE,
        LAST_INJECTED_FILE,
        LOG_FILE,
        LOCK_FILE,
        VERIFY_FILE,
        POLICY_FILE,
        POLICY_FILE_ALT,
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let prd = read_text(&paths.state, STATE_LIMIT)
        .ok()
        .and_then(|s| ralph_policy::prd_file_from_state(&s))
        .unwrap_or_else(|| "prd.json".to_string());
    if call.tool_name != "Bash" {
        let key = if call.tool_name == "NotebookEdit" {
            "notebook_path"
        } else {
            "file_path"
        };
        if let Some(p) = call.tool_input.get(key).and_then(Value::as_str) {
            let lexical = protect::normalize(&cwd.join(p));
            ctx.file_real_path = real_path(&lexical).filter(|r| *r != lexical);
        }
        if matches!(call.tool_name.as_str(), "Write" | "Edit" | "MultiEdit") {
            ctx.prd_current = read_text(&root.join(&prd), PRD_LIMIT).ok();
        }
    }
    let prd = PathBuf::from(prd);
    ctx.missing = ctx
        .loop_files
        .iter()
        .chain(std::iter::once(&prd))
        .filter(|rel| !root.join(rel).exists())
        .cloned()
        .collect();
    ctx.prd_file = Some(prd);
    ctx
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
        Some(sig) => read_text(&root.join(WRAP_MARKER), MARKER_LIMIT).is_ok_and(|m| m == sig),
        None => true,
    }
}

fn remember_wrap_notice(root: &Path, policy: &PolicySource) {
    if let Some(sig) = wrap_signature(policy) {
        write_marker(&root.join(WRAP_MARKER), &sig);
    }
}
