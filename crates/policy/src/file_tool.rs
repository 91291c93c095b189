//! The file tools (Write, Edit, MultiEdit, NotebookEdit) while a loop runs:
//! the client's settings are judged by what the edit changes, the loop's
//! files, configuration, pinned files and protected folders may not be
//! changed at all, and the PRD may be edited but must stay a valid PRD.
//! Pure: the binary has read every file the decision needs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::{LoopContext, ToolCall, Verdict};
use crate::pinned::{self, loop_file_reason};
use crate::{git_files, prd, settings};

/// Is `path` (absolute, normalised) the root-relative `rel` under either root?
fn is_under_roots(path: &Path, rel: &Path, ctx: &LoopContext) -> bool {
    ctx.roots().any(|r| path == r.join(rel))
}

pub(crate) fn decide_file(call: &ToolCall, ctx: &LoopContext) -> Verdict {
    let Some(lexical) = call.file_target(&ctx.cwd, ctx.home.as_deref(), ctx.windows) else {
        return Verdict::Allow;
    };
    // The path as named, its real path, and the other names of its hard links.
    let candidates: Vec<&Path> = std::iter::once(lexical.as_path())
        .chain(ctx.file_real_path.as_deref())
        .chain(ctx.file_aliases.iter().map(PathBuf::as_path))
        .collect();
    if let Some(why) = settings_edit(call, ctx, &candidates) {
        return Verdict::Deny(why);
    }
    if let Some(why) = protected_target(ctx, &candidates) {
        return Verdict::Deny(why);
    }
    if let Some(hole) = git_files::file_tool(ctx, &candidates, &|current| new_text(call, current)) {
        return Verdict::Deny(hole.reason());
    }
    prd_edit(call, ctx, &candidates)
}

/// An edit of the client's settings that would loosen what holds the loop.
fn settings_edit(call: &ToolCall, ctx: &LoopContext, candidates: &[&Path]) -> Option<String> {
    let file = ctx
        .settings_files
        .iter()
        .find(|f| candidates.iter().any(|p| p == f))?;
    let current = ctx.settings_current.as_deref();
    let why = match new_text(call, current) {
        Some(new) => settings::judge(current, &new),
        None if call.tool_name == "NotebookEdit" => Some("a notebook edit".to_string()),
        None => None,
    }?;
    Some(settings::edit_reason(&file.display().to_string(), &why))
}

/// A loop file, a file in the loop's configuration folders, a pinned file,
/// a file in a protected folder, or a hard link to one of them from outside
/// the project.
fn protected_target(ctx: &LoopContext, candidates: &[&Path]) -> Option<String> {
    for rel in &ctx.loop_files {
        if candidates.iter().any(|p| is_under_roots(p, rel, ctx)) {
            let what = if candidates[..candidates.len() - ctx.file_aliases.len()]
                .iter()
                .any(|p| is_under_roots(p, rel, ctx))
            {
                "this edit would change"
            } else {
                "this edit would change (through a hard link)"
            };
            return Some(loop_file_reason(&rel.display().to_string(), what));
        }
    }
    for rel in &ctx.config_dirs {
        let under = |p: &&Path| ctx.roots().any(|r| p.starts_with(r.join(rel)));
        if candidates.iter().any(under) {
            return Some(loop_file_reason(
                &rel.display().to_string(),
                "this edit would change a file in",
            ));
        }
    }
    for (rel, why) in &ctx.pins {
        if candidates.iter().any(|p| is_under_roots(p, rel, ctx)) {
            return Some(pinned::pinned_reason(&rel.display().to_string(), why));
        }
    }
    for dir in &ctx.protected_dirs {
        if candidates
            .iter()
            .any(|p| p.starts_with(dir) && !ctx.in_client_memory(p))
        {
            return Some(loop_file_reason(
                &dir.display().to_string(),
                "this edit would change a file in",
            ));
        }
    }
    ctx.file_aliases
        .iter()
        .find(|alias| !ctx.in_project(alias))
        .map(|alias| {
            loop_file_reason(
                &alias.display().to_string(),
                "this edit would change (through a hard link)",
            )
        })
}

/// An edit of the PRD: allowed while it stays a valid PRD with every story.
fn prd_edit(call: &ToolCall, ctx: &LoopContext, candidates: &[&Path]) -> Verdict {
    let Some(prd) = &ctx.prd_file else {
        return Verdict::Allow;
    };
    if !candidates.iter().any(|p| is_under_roots(p, prd, ctx)) {
        return Verdict::Allow;
    }
    let current = ctx.prd_current.as_deref();
    let Some(new) = new_text(call, current) else {
        return Verdict::Allow;
    };
    match prd::judge_with_checks(current, &new, &ctx.story_checks) {
        Some(why) => Verdict::Deny(format!(
            "ralph-guard: this change to {} is refused: {why}. The loop feeds stories from it by id: keep it \
             valid JSON with every story and its id, and record progress in fields such as `passes`.",
            prd.display()
        )),
        None => Verdict::Allow,
    }
}

/// The file's text after a Write, Edit or MultiEdit of `current`; `None`
/// when it cannot be told (an edit that does not apply, another tool).
pub(crate) fn new_text(call: &ToolCall, current: Option<&str>) -> Option<String> {
    let input = &call.tool_input;
    match call.tool_name.as_str() {
        "Write" => input
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_string),
        "Edit" => current.and_then(|c| apply_one(c, input)),
        "MultiEdit" => current.and_then(|c| {
            let edits = input.get("edits")?.as_array()?;
            edits
                .iter()
                .try_fold(c.to_string(), |text, e| apply_one(&text, e))
        }),
        _ => None,
    }
}

fn apply_one(text: &str, edit: &Value) -> Option<String> {
    let old = edit.get("old_string")?.as_str()?;
    let new = edit.get("new_string")?.as_str()?;
    let all = edit
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    prd::apply_edit(text, old, new, all)
}
