//! The file tools, applied the way the client applies them once the guard
//! allowed the call: in place, following links (the worse case for the loop:
//! a hard link or symlink to a loop file is written through), with the
//! client's own refusals (text not found, not unique, not a notebook).

use crate::sandbox::Sandbox;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What happened to an allowed file-tool call.
pub(crate) enum Applied {
    Done,
    /// The tool itself refused (as the client would report to the model).
    Refused(String),
}

/// Apply `tool` with `input` (JSON, placeholders expanded), relative paths
/// resolved against `cwd`, `~` against the sandbox's HOME and
/// `/proc/self/cwd` against the project (the client's own folder: never
/// this test's).
pub(crate) fn apply(tool: &str, input: &Value, cwd: &Path, sb: &Sandbox) -> Applied {
    let mut input = input.clone();
    for key in ["file_path", "notebook_path"] {
        if let Some(p) = input[key].as_str() {
            let resolved = if let Some(rest) = p.strip_prefix("~/") {
                sb.home.join(rest)
            } else if let Some(rest) = p.strip_prefix("/proc/self/cwd") {
                sb.project.join(rest.trim_start_matches('/'))
            } else {
                cwd.join(p)
            };
            input[key] = Value::String(resolved.to_string_lossy().into_owned());
        }
    }
    let input = &input;
    let result = match tool {
        "Write" => write(input, cwd),
        "Edit" => edit(input, cwd),
        "MultiEdit" => multi_edit(input, cwd),
        "NotebookEdit" => notebook_edit(input, cwd),
        other => Err(format!("not a file tool: {other}")),
    };
    match result {
        Ok(()) => Applied::Done,
        Err(why) => Applied::Refused(why),
    }
}

fn field<'a>(input: &'a Value, name: &str) -> Result<&'a str, String> {
    input[name]
        .as_str()
        .ok_or_else(|| format!("missing string field `{name}`"))
}

fn path(input: &Value, name: &str, cwd: &Path) -> Result<PathBuf, String> {
    Ok(cwd.join(field(input, name)?))
}

fn write(input: &Value, cwd: &Path) -> Result<(), String> {
    let p = path(input, "file_path", cwd)?;
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    std::fs::write(&p, field(input, "content")?).map_err(|e| e.to_string())
}

fn read(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// One replacement, refused as the Edit tool refuses.
fn replace(text: &str, edit: &Value) -> Result<String, String> {
    let old = field(edit, "old_string")?;
    let new = field(edit, "new_string")?;
    let all = edit["replace_all"].as_bool().unwrap_or(false);
    match text.matches(old).count() {
        0 => Err("String to replace not found in file.".into()),
        n if n > 1 && !all => Err(format!(
            "Found {n} matches of the string to replace, but replace_all is false."
        )),
        _ if all => Ok(text.replace(old, new)),
        _ => Ok(text.replacen(old, new, 1)),
    }
}

fn edit(input: &Value, cwd: &Path) -> Result<(), String> {
    let p = path(input, "file_path", cwd)?;
    let text = replace(&read(&p)?, input)?;
    std::fs::write(&p, text).map_err(|e| e.to_string())
}

fn multi_edit(input: &Value, cwd: &Path) -> Result<(), String> {
    let p = path(input, "file_path", cwd)?;
    let mut text = read(&p)?;
    for edit in input["edits"].as_array().ok_or("missing `edits`")? {
        text = replace(&text, edit)?;
    }
    std::fs::write(&p, text).map_err(|e| e.to_string())
}

/// Replace, insert (after `cell_id`, or first) or delete one cell.
fn notebook_edit(input: &Value, cwd: &Path) -> Result<(), String> {
    let p = path(input, "notebook_path", cwd)?;
    if p.extension().is_none_or(|e| e != "ipynb") {
        return Err("File must be a Jupyter notebook (.ipynb file).".into());
    }
    let mut nb: Value =
        serde_json::from_str(&read(&p)?).map_err(|e| format!("Notebook is not valid JSON: {e}"))?;
    let cells = nb["cells"]
        .as_array_mut()
        .ok_or("Notebook has no cells array")?;
    let at = match input["cell_id"].as_str() {
        Some(id) => cells
            .iter()
            .position(|c| c["id"] == id)
            .ok_or_else(|| format!("Cell with ID \"{id}\" not found in notebook."))?,
        None => 0,
    };
    let source = input["new_source"].as_str().unwrap_or_default();
    match input["edit_mode"].as_str().unwrap_or("replace") {
        "insert" => {
            let kind = input["cell_type"].as_str().unwrap_or("code");
            let cell = serde_json::json!({"cell_type": kind, "id": "new", "metadata": {}, "source": source, "outputs": [], "execution_count": null});
            cells.insert((at + 1).min(cells.len()), cell);
        }
        "delete" if at < cells.len() => {
            cells.remove(at);
        }
        _ if at < cells.len() => cells[at]["source"] = Value::String(source.into()),
        _ => return Err("No cell to edit.".into()),
    }
    let text = serde_json::to_string_pretty(&nb).map_err(|e| e.to_string())?;
    std::fs::write(&p, text).map_err(|e| e.to_string())
}
