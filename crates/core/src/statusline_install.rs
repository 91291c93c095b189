//! `/ralph-statusline` and `/ralph-statusline off`: put ralph's status line
//! into the user's `settings.json` (`statusLine`), keeping the user's own
//! command under `--then`, and take it out again leaving the file exactly
//! as it was. Only the user does this (the typed command reaches the
//! UserPromptSubmit hook; ralph-setup refuses the agent): plugins cannot set
//! the main status line themselves.
//!
//! Install keeps the file's exact bytes (or its absence) in ralph's data
//! folder, `statusline/before`, and what it wrote in `statusline/after`.
//! Undo puts `before` back byte for byte when the file is still what ralph
//! wrote; when the user changed it since, only `statusLine` is put back (the
//! rest of their edits stay). [`with_statusline`] and [`without_ours`] are
//! pure; [`install`] and [`uninstall`] do I/O. `before` is sealed (`seal`):
//! a copy ralph did not keep is never written back into the settings.

use crate::store;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// What marks ralph's own status-line command.
pub const MARK: &str = " statusline";

/// The user's settings file: `$CLAUDE_CONFIG_DIR/settings.json`, else
/// `~/.claude/settings.json`.
pub fn settings_file() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CLAUDE_CONFIG_DIR") {
        return PathBuf::from(dir).join("settings.json");
    }
    let home = var("HOME")
        .or_else(|| var("USERPROFILE"))
        .unwrap_or_default();
    PathBuf::from(home).join(".claude").join("settings.json")
}

/// `text` quoted for sh.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Is `command` ralph's status line?
pub(crate) fn is_ours(command: &str, ours: &str) -> bool {
    command == ours || command.starts_with(&format!("{ours} --then "))
}

fn parse_object(text: Option<&str>) -> Result<Map<String, Value>, String> {
    match text.map(str::trim) {
        None | Some("") => Ok(Map::new()),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err("it is not a JSON object".into()),
            Err(e) => Err(format!("it is not valid JSON ({e})")),
        },
    }
}

fn render(map: Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}

/// The settings `text` (`None`: no file) with ralph's status line `ours`,
/// the user's own command kept under `--then`. `Ok(None)`: already there.
pub(crate) fn with_statusline(text: Option<&str>, ours: &str) -> Result<Option<String>, String> {
    let mut map = parse_object(text)?;
    let old = map.get("statusLine").cloned();
    let old_cmd = old
        .as_ref()
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty());
    if old_cmd.is_some_and(|c| is_ours(c, ours)) {
        return Ok(None);
    }
    let command = match old_cmd {
        Some(cmd) => format!("{ours} --then {}", sh_quote(cmd)),
        None => ours.to_string(),
    };
    // The user's other statusLine fields (`padding`) stay.
    let mut line = match old {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    line.insert("type".into(), Value::String("command".into()));
    line.insert("command".into(), Value::String(command));
    map.insert("statusLine".into(), Value::Object(line));
    Ok(Some(render(map)))
}

/// The settings `now` with ralph's status line taken out: `statusLine` as
/// it was in `before` (or none). `Ok(None)`: ralph's line is not there.
pub(crate) fn without_ours(
    now: &str,
    before: Option<&str>,
    ours: &str,
) -> Result<Option<String>, String> {
    let mut map = parse_object(Some(now))?;
    let cmd = map
        .get("statusLine")
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str);
    if !cmd.is_some_and(|c| is_ours(c, ours)) {
        return Ok(None);
    }
    let old = parse_object(before)
        .ok()
        .and_then(|m| m.get("statusLine").cloned());
    match old {
        Some(v) => map.insert("statusLine".into(), v),
        None => map.remove("statusLine"),
    };
    Ok(Some(render(map)))
}

/// Where install keeps the file as it was, and what it wrote.
fn record(data: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let dir = data.join("statusline");
    (
        dir.join("before"),
        dir.join("before.absent"),
        dir.join("after"),
    )
}

/// `/ralph-statusline`: ralph's line `ours` into `settings`; what to tell the user.
pub fn install(settings: &Path, data: &Path, ours: &str) -> Result<String, String> {
    let err = |e: store::StoreError| e.to_string();
    let text = store::read_optional(settings).map_err(err)?;
    let new = with_statusline(text.as_deref(), ours)
        .map_err(|e| format!("{} was left alone: {e}", settings.display()))?;
    let Some(new) = new else {
        return Ok(format!(
            "ralph's status line is already in {} (`/ralph-statusline off` takes it out).",
            settings.display()
        ));
    };
    let (before, absent, after) = record(data);
    if let Some(dir) = before.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    match &text {
        Some(t) => {
            // Sealed: `off` writes it back into the user's settings only
            // as ralph kept it.
            crate::seal::write(&before, t.as_bytes()).map_err(err)?;
            store::remove_if_present(&absent).map_err(err)?;
        }
        None => {
            store::atomic_write(&absent, b"").map_err(err)?;
            store::remove_if_present(&before).map_err(err)?;
            crate::seal::remove(&before).map_err(err)?;
        }
    }
    if let Some(dir) = settings.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    store::atomic_write(settings, new.as_bytes()).map_err(err)?;
    store::atomic_write(&after, new.as_bytes()).map_err(err)?;
    let kept = if text
        .as_deref()
        .is_some_and(|t| t.contains("\"statusLine\""))
    {
        " Your own status line still shows, after ralph's (`--then`)."
    } else {
        ""
    };
    let copy = match &text {
        Some(_) => format!("a copy of the file as it was: {}", before.display()),
        None => "there was no such file before".to_string(),
    };
    Ok(format!(
        "ralph's status line is in {} ({copy}).{kept} It shows the loop of the project (nothing when none runs) from the next message. `/ralph-statusline off` undoes it exactly.",
        settings.display(),
    ))
}

/// `/ralph-statusline off`: the file as it was before [`install`].
pub fn uninstall(settings: &Path, data: &Path, ours: &str) -> Result<String, String> {
    let err = |e: store::StoreError| e.to_string();
    let (before, absent, after) = record(data);
    let now = store::read_optional(settings).map_err(err)?;
    let wrote = store::read_optional(&after).map_err(err)?;
    let kept = crate::seal::read_sealed(&before);
    if kept.seal != crate::seal::Seal::Intact {
        return Err(untrusted_copy(settings, &before));
    }
    let was = kept.text;
    let forget = || {
        for f in [&before, &absent, &after] {
            let _ = store::remove_if_present(f);
        }
        let _ = crate::seal::remove(&before);
    };
    let Some(now) = now else {
        forget();
        return Ok(format!(
            "There is no {}: nothing to undo.",
            settings.display()
        ));
    };
    if wrote.as_deref() == Some(now.as_str()) {
        // Untouched since: exactly the bytes it had (or no file at all).
        match &was {
            Some(t) => store::atomic_write(settings, t.as_bytes()).map_err(err)?,
            None if absent.exists() => {
                store::remove_if_present(settings).map_err(err)?;
            }
            None => return Err("the copy of the settings made at install is gone".into()),
        }
        forget();
        return Ok(format!(
            "ralph's status line is out: {} is exactly as it was before.",
            settings.display()
        ));
    }
    match without_ours(&now, was.as_deref(), ours) {
        Ok(Some(text)) => {
            store::atomic_write(settings, text.as_bytes()).map_err(err)?;
            forget();
            Ok(format!(
                "ralph's status line is out of {}; your own is back. The file changed since the install, so only `statusLine` was put back (your other changes stay).",
                settings.display()
            ))
        }
        Ok(None) => Ok(format!(
            "ralph's status line is not in {}: nothing to undo.",
            settings.display()
        )),
        Err(e) => Err(format!("{} was left alone: {e}", settings.display())),
    }
}

/// The one line said when the kept copy fails its seal (or has none): it
/// is not written back.
fn untrusted_copy(settings: &Path, before: &Path) -> String {
    format!(
        "{} was left alone: ralph's copy of it, {}, was changed by something other than ralph (or kept by an older ralph), so it is not written back: check that copy, then remove ralph's `statusLine` from {} by hand (and delete the copy).",
        settings.display(),
        before.display(),
        settings.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "'/p/ralph-setup' statusline";

    #[test]
    fn install_keeps_the_users_command_under_then() {
        let text =
            r#"{"model":"opus","statusLine":{"type":"command","command":"echo 'hi'","padding":0}}"#;
        let new = with_statusline(Some(text), OURS).unwrap().unwrap();
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(
            v["statusLine"]["command"],
            format!("{OURS} --then 'echo '\\''hi'\\'''")
        );
        assert_eq!(v["statusLine"]["padding"], 0);
        assert_eq!(v["model"], "opus");
        assert_eq!(with_statusline(Some(&new), OURS).unwrap(), None, "once");
        let fresh = with_statusline(None, OURS).unwrap().unwrap();
        assert!(
            fresh.contains("\"command\": \"'/p/ralph-setup' statusline\""),
            "{fresh}"
        );
        assert!(with_statusline(Some("[1]"), OURS).is_err());
        assert!(with_statusline(Some("{"), OURS).is_err());
        // Taken out: the user's line as it was.
        let back = without_ours(&new, Some(text), OURS).unwrap().unwrap();
        let b: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(b, serde_json::from_str::<Value>(text).unwrap());
        let none = without_ours(&fresh, None, OURS).unwrap().unwrap();
        assert_eq!(none, "{}\n");
        assert_eq!(without_ours(text, None, OURS).unwrap(), None);
    }

    #[test]
    fn a_kept_copy_changed_outside_ralph_is_not_written_back() {
        let d = std::env::temp_dir().join(format!("ralph-sl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let (settings, data) = (d.join("settings.json"), d.join("data"));
        let mine = "{\"model\":\"opus\"}\n";
        std::fs::write(&settings, mine).unwrap();
        install(&settings, &data, OURS).unwrap();
        // An honest round trip: exactly the bytes back.
        uninstall(&settings, &data, OURS).unwrap();
        assert_eq!(std::fs::read_to_string(&settings).unwrap(), mine);
        // A hook planted in the kept copy: never written back.
        install(&settings, &data, OURS).unwrap();
        let before = record(&data).0;
        std::fs::write(&before, "{\"hooks\":{\"SessionStart\":[]}}").unwrap();
        let e = uninstall(&settings, &data, OURS).unwrap_err();
        assert!(
            e.contains("not written back")
                && e.contains(&format!("statusline{}before", std::path::MAIN_SEPARATOR)),
            "{e}"
        );
        assert!(
            !std::fs::read_to_string(&settings)
                .unwrap()
                .contains("hooks")
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
