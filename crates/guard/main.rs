//! ralph-guard: the PreToolUse hook for Bash, Write, Edit, MultiEdit and
//! NotebookEdit. A thin shell: it reads the hook input, gathers the loop's
//! facts (`ralph_policy::gather`), asks `ralph_policy::decide`, and prints
//! the decision (and records the turn's tool for the no-progress breaker).
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
use ralph_core::paths::{LoopPaths, POLICY_FILE, POLICY_FILE_ALT, project_root_from_env};
use ralph_core::turn_tools;
use ralph_policy::gather::{self, MARKER_LIMIT, POLICY_LIMIT, WRAP_MARKER, read_capped};
use ralph_policy::{Policy, PolicyError, PolicySource, ToolCall, Verdict, decide};
use serde_json::Value;

/// Remembers which policy text already passed the regex syntax check, so a
/// large policy is not re-checked before every tool call (a forged marker
/// only defers an error to the rule's first use, where it is still reported).
const CHECKED_MARKER: &str = ".claude/ralph-guard.policy-checked";

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
    let env_paths = match leave_early() {
        Early::Leave => return None,
        Early::Go(paths) => paths,
    };
    let input = match HookInput::read_stdin_with_deadline(STDIN_DEADLINE_SECS) {
        Ok(input) => input,
        // Nothing sent, or nothing within the deadline: allow, silently. A
        // JSON value that is not an object names no tool call to judge.
        Err(InputError::Empty | InputError::Timeout(_) | InputError::NotAnObject) => return None,
        Err(e) => return Some(internal_error(&format!("cannot read the hook input: {e}"))),
    };
    let tool_name = input.tool_name.clone()?;
    if !GUARDED_TOOLS.contains(&tool_name.as_str()) {
        return None;
    }
    let hook_cwd = input.cwd.as_deref().filter(|c| !c.is_empty());
    let root = project_root_from_env(hook_cwd);
    // The loop's paths cost a walk of the root's links, and whether a loop
    // runs two stats: once per call.
    let (paths, loop_active) = match env_paths.filter(|(p, _)| p.root == root) {
        Some((paths, has_loop)) => (*paths, has_loop),
        None => {
            let paths = LoopPaths::new(&root);
            let has_loop = paths.has_loop();
            (paths, has_loop)
        }
    };
    if loop_active && stands_aside(&paths) {
        return None;
    }
    let policy = read_policy(&root);
    if !loop_active && matches!(policy, PolicySource::Absent) {
        return None;
    }
    let cwd = hook_cwd.map(PathBuf::from).unwrap_or_else(|| root.clone());
    let call = ToolCall {
        tool_name,
        tool_input: input.tool_input.clone().unwrap_or(Value::Null),
    };
    let ctx = gather::context(&gather::Call {
        call: &call,
        root: &root,
        paths: &paths,
        cwd: &cwd,
        loop_active,
        policy: &policy,
        agent_type: input.agent_type.as_deref(),
    });
    let decision = decide(&call, &policy, &ctx);
    apply(&paths, &input, &call, &ctx, &decision);
    if decision.wrap_notice_given {
        remember_wrap_notice(&root, &policy);
    }
    decision.to_hook_output()
}

/// Whether the guard has anything to do before it reads its input.
enum Early {
    Leave,
    /// Go on, with the loop's paths when `CLAUDE_PROJECT_DIR` named them,
    /// and whether a loop runs there.
    Go(Option<(Box<LoopPaths>, bool)>),
}

/// The path of every tool call of every session without a loop or a
/// policy: Claude Code sets CLAUDE_PROJECT_DIR, so three stats decide,
/// without reading stdin.
fn leave_early() -> Early {
    let Some(dir) = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty()) else {
        return Early::Go(None);
    };
    let paths = LoopPaths::new(PathBuf::from(dir));
    let has_loop = paths.has_loop();
    if !has_loop
        && !paths.root.join(POLICY_FILE).exists()
        && !paths.root.join(POLICY_FILE_ALT).exists()
    {
        return Early::Leave;
    }
    Early::Go(Some((Box::new(paths), has_loop)))
}

/// A loop runs: a reviewer's session (`--review`: read-only tools of its
/// own, and a pass only ralph hands out, `passes`) and the agent
/// running the guard itself from Bash (a forged call, recorded as this
/// turn's work to fool the no-progress breaker) get nothing.
fn stands_aside(paths: &LoopPaths) -> bool {
    // Git's configuration read is kept in the loop's folder across hooks.
    ralph_core::git::cache_config_in(&paths.git_config);
    ralph_core::passes::in_reviewer_session(paths)
        || ralph_core::control::this_process_run_by_agent()
}

/// What the guard writes, before the call runs: a `--parallel` worker's
/// story bound at its first guarded call (`parallel::bound`), and the
/// no-progress breaker's record of this turn's tools (`turn_tools`) for a
/// call it allows while a loop runs. A failure only leaves the Stop to
/// judge the turn from the transcript and the tree.
fn apply(
    paths: &LoopPaths,
    input: &HookInput,
    call: &ToolCall,
    ctx: &ralph_policy::LoopContext,
    decision: &ralph_policy::GuardDecision,
) {
    if ctx.worker_tree.is_some()
        && let Some(agent) = input.agent_id.as_deref()
    {
        ralph_core::parallel::bound::bind_at_first_call(
            paths,
            input.transcript_path.as_deref(),
            agent,
        );
    }
    if ctx.loop_active && !matches!(decision.verdict, Verdict::Deny(_)) {
        let session = input.session_id.as_deref().unwrap_or("");
        if let Err(e) = turn_tools::record(&paths.turn_tools, session, &call.tool_name) {
            eprintln!("ralph-guard: {e}");
        }
    }
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

fn remember_wrap_notice(root: &Path, policy: &PolicySource) {
    if let Some(sig) = gather::wrap_signature(policy) {
        write_marker(&root.join(WRAP_MARKER), &sig);
    }
}
