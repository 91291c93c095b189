//! `--fresh` loops: the main thread only dispatches to `ralph:ralph-worker`
//! subagents, so its own writes are refused (the worker's, which carry an
//! `agent_id`, are judged as usual). Pure.
//!
//! What counts as a write of a Bash command is read the way the rest of the
//! guard reads commands (chains, wrappers, `sh -c`, substitutions), and errs
//! on the side of "writes" for what it cannot see into (a shell reading its
//! script from stdin, `python -c`). Like the rest of the guard, a rail for a
//! cooperative model, not a sandbox.

use serde_json::Value;

use crate::context::{LoopContext, ToolCall};
use crate::protect;

/// Why the main thread's write is refused.
pub(crate) fn delegate_reason(what: &str, worker: &str) -> String {
    format!(
        "ralph-guard: this Ralph loop runs with --fresh: the main thread only dispatches, so {what} is refused here. \
         Delegate the work as the loop's last message says (Agent tool, subagent_type \"{worker}\"); reading stays free."
    )
}

/// Whether running `command` (from the call's folder) may write a file:
/// the guard's one reading of where a command writes
/// ([`crate::protect::bash_writes`]), erring on the side of "writes" for
/// what it cannot see into (a shell reading its script from stdin,
/// `python -c`).
pub(crate) fn bash_writes(command: &str, ctx: &LoopContext) -> bool {
    protect::bash_writes(
        command,
        &ctx.cwd,
        &ctx.root,
        ctx.home.as_deref(),
        ctx.windows,
    )
    .any()
}

/// What the main thread of a `--fresh` loop would write, in words; `None`
/// for a call that only reads (a `--parallel` worker's refusal words a file
/// tool's write the same way).
pub(crate) fn main_write(call: &ToolCall, ctx: &LoopContext) -> Option<String> {
    match call.tool_name.as_str() {
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
            Some(format!("{} (a file change)", call.tool_name))
        }
        "Bash" => {
            let command = call.tool_input.get("command").and_then(Value::as_str)?;
            bash_writes(command, ctx).then(|| "a Bash command that writes files".to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::bash_writes;
    use crate::context::LoopContext;

    // Which commands write is `protect::writes`'s (its tests hold the
    // forms); this holds the wiring: the call's folder and the project.
    #[test]
    fn the_main_thread_is_judged_by_the_one_reading() {
        let ctx = LoopContext {
            root: "/p".into(),
            cwd: "/p".into(),
            ..LoopContext::default()
        };
        for c in [
            "echo hi > a.txt",
            "git config core.hooksPath x",
            "sed -ri s/a/b/ f",
        ] {
            assert!(bash_writes(c, &ctx), "{c}");
        }
        for c in [
            "git branch --show-current",
            "git stash list",
            "cat prd.json",
        ] {
            assert!(!bash_writes(c, &ctx), "{c}");
        }
    }
}
