//! The client's settings files while a loop runs: what in them switches
//! ralph's hooks off, redirects them, or sets ralph's variables.
//!
//! A settings file's `env` reaches every hook (measured, 2.1.328), its
//! `hooks` and `disableAllHooks` decide which hooks run at all, and
//! `enabledPlugins` can turn the plugin off: the agent writing any of them
//! ends the loop's checks for good from the next session start. Other keys
//! (permissions, the model, the status line) stay the agent's to change
//! with the file tools; a Bash write to these files is refused outright
//! while a loop runs, since its content cannot be judged.
//! Pure.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The keys whose change is refused.
pub(crate) const SWITCH_KEYS: &[&str] = &[
    "env",
    "hooks",
    "disableAllHooks",
    "enabledPlugins",
    "allowManagedHooksOnly",
    // Turning the sandbox off, letting commands out of it, or widening
    // where they may write would take away what keeps the loop's files
    // out of their reach.
    "sandbox",
];

/// The settings files the client reads for this project: the project's
/// shared and local ones, and the user's (`$CLAUDE_CONFIG_DIR`, else
/// `~/.claude`), absolute.
pub(crate) fn settings_files(
    root: &Path,
    home: Option<&Path>,
    config_dir: Option<&Path>,
) -> Vec<PathBuf> {
    let mut files = vec![
        root.join(".claude/settings.json"),
        root.join(".claude/settings.local.json"),
    ];
    let user = config_dir
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".claude")));
    for dir in user.into_iter().chain(home.map(|h| h.join(".claude"))) {
        for name in ["settings.json", "settings.local.json"] {
            let f = dir.join(name);
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    files
}

/// Is this a settings file's name (a guard message's display path)?
pub(crate) fn is_settings_name(display: &str) -> bool {
    display.ends_with("settings.json") || display.ends_with("settings.local.json")
}

/// The switch keys a change from `current` (absent: an empty file) to
/// `new` alters, or why it cannot be told; `None` when it alters none.
pub(crate) fn judge(current: Option<&str>, new: &str) -> Option<String> {
    let parse = |text: &str| -> Option<Value> {
        if text.trim().is_empty() {
            return Some(Value::Object(Default::default()));
        }
        serde_json::from_str(text).ok()
    };
    let before = current.and_then(parse).unwrap_or(Value::Null);
    // Text that is not JSON has none of the keys (the client cannot read
    // it): refused only when it would take away some that were there.
    let after = parse(new).unwrap_or(Value::Null);
    let changed: Vec<&str> = SWITCH_KEYS
        .iter()
        .copied()
        .filter(|k| before.get(k) != after.get(k))
        .collect();
    (!changed.is_empty()).then(|| {
        let keys: Vec<String> = changed.iter().map(|k| format!("`{k}`")).collect();
        format!("it changes {}", keys.join(", "))
    })
}

/// The refusal of a file-tool change to `file`.
pub(crate) fn edit_reason(file: &str, why: &str) -> String {
    format!(
        "ralph-guard: this change to {file} is refused while a Ralph loop runs: {why}. Those keys switch \
         hooks off, redirect them, set ralph's variables or open the sandbox ({}); only the user changes them. Other keys \
         may be edited.",
        SWITCH_KEYS.join(", ")
    )
}

/// The refusal of a Bash command that writes `file`.
pub(crate) fn bash_reason(file: &str) -> String {
    format!(
        "ralph-guard: this command would write {file}, a settings file of the client, while a Ralph loop \
         runs; its `env`, `hooks` and `disableAllHooks` could switch the loop's hooks off, and a command's \
         write cannot be judged. Use the Edit tool for other keys; only the user changes those."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{LoopContext, PolicySource, ToolCall, Verdict};
    use crate::decide::decide;
    use serde_json::json;

    fn ctx(current: Option<&str>) -> LoopContext {
        LoopContext {
            root: PathBuf::from("/proj"),
            cwd: PathBuf::from("/proj"),
            loop_active: true,
            home: Some(PathBuf::from("/home/u")),
            settings_files: settings_files(Path::new("/proj"), Some(Path::new("/home/u")), None),
            settings_current: current.map(str::to_string),
            ..LoopContext::default()
        }
    }

    fn verdict(tool: &str, input: serde_json::Value, c: &LoopContext) -> Verdict {
        let call = ToolCall {
            tool_name: tool.to_string(),
            tool_input: input,
        };
        decide(&call, &PolicySource::Absent, c).verdict
    }

    fn denied(v: &Verdict) -> Option<&str> {
        match v {
            Verdict::Deny(why) => Some(why),
            _ => None,
        }
    }

    #[test]
    fn the_file_tools_may_change_other_keys_only() {
        let local = "/proj/.claude/settings.local.json";
        let c = ctx(Some(r#"{"permissions": {"allow": []}}"#));
        let kill = json!({"file_path": local, "content": "{\"env\":{\"RALPH_REVIEWER\":\"1\"}}"});
        let why = denied(&verdict("Write", kill, &c)).map(str::to_string);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("`env`")),
            "{why:?}"
        );
        let edit = json!({"file_path": local, "old_string": "{\"permissions\"",
            "new_string": "{\"disableAllHooks\": true, \"permissions\""});
        assert!(denied(&verdict("Edit", edit, &c)).is_some());
        let fine = json!({"file_path": local, "old_string": "[]", "new_string": "[\"Bash(ls)\"]"});
        assert!(denied(&verdict("Edit", fine, &c)).is_none());
        let user = json!({"file_path": "/home/u/.claude/settings.json",
            "content": "{\"hooks\": {}}"});
        assert!(denied(&verdict("Write", user, &ctx(None))).is_some());
        let model = json!({"file_path": "/home/u/.claude/settings.json",
            "content": "{\"model\": \"sonnet\"}"});
        assert!(denied(&verdict("Write", model, &ctx(None))).is_none());
    }

    #[test]
    fn bash_may_not_write_them_but_may_read_them() {
        let c = ctx(None);
        for cmd in [
            "echo '{\"disableAllHooks\":true}' > .claude/settings.local.json",
            "sed -i 's/a/b/' ~/.claude/settings.json",
            "cp /tmp/s.json /proj/.claude/settings.json",
            "rm .claude/settings.json",
        ] {
            let v = verdict("Bash", json!({"command": cmd}), &c);
            let why = denied(&v).unwrap_or_else(|| panic!("{cmd}: allowed"));
            assert!(why.contains("settings file of the client"), "{cmd}: {why}");
        }
        for cmd in [
            "cat .claude/settings.json",
            "jq .env ~/.claude/settings.json",
        ] {
            assert!(
                denied(&verdict("Bash", json!({"command": cmd}), &c)).is_none(),
                "{cmd}"
            );
        }
    }

    #[test]
    fn switches_are_refused_and_other_keys_are_free() {
        let cur = r#"{"permissions":{"allow":["Bash(ls)"]},"env":{"A":"1"}}"#;
        assert_eq!(
            judge(Some(cur), r#"{"permissions":{"allow":[]},"env":{"A":"1"}}"#),
            None
        );
        assert_eq!(judge(Some(cur), r#"{"env":{"A":"1"},"model":"x"}"#), None);
        let forged = r#"{"env":{"A":"1","RALPH_REVIEWER":"1"}}"#;
        assert!(judge(Some(cur), forged).unwrap().contains("`env`"));
        assert!(
            judge(None, r#"{"disableAllHooks":true}"#)
                .unwrap()
                .contains("disableAllHooks")
        );
        assert!(judge(None, r#"{"hooks":{"Stop":[]}}"#).is_some());
        assert!(judge(None, r#"{"enabledPlugins":{"ralph@ralph":false}}"#).is_some());
        // The sandbox: off, commands let out, writes widened.
        let boxed = r#"{"sandbox":{"enabled":true}}"#;
        for opened in [
            r#"{"sandbox":{"enabled":false}}"#,
            r#"{"sandbox":{"enabled":true,"allowUnsandboxedCommands":true}}"#,
            r#"{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["~/.claude"]}}}"#,
            "{}",
        ] {
            assert!(
                judge(Some(boxed), opened).unwrap().contains("`sandbox`"),
                "{opened}"
            );
        }
        assert!(judge(Some(cur), "not json").unwrap().contains("`env`"));
        assert_eq!(judge(Some(r#"{"model":"x"}"#), "x"), None);
        // A new file without switches, an empty one.
        assert_eq!(judge(None, r#"{"model":"sonnet"}"#), None);
        assert_eq!(judge(Some(""), "{}"), None);
    }

    #[test]
    fn the_project_and_the_users_files() {
        let f = settings_files(
            Path::new("/p"),
            Some(Path::new("/h")),
            Some(Path::new("/cfg")),
        );
        for want in [
            "/p/.claude/settings.json",
            "/p/.claude/settings.local.json",
            "/cfg/settings.json",
            "/h/.claude/settings.json",
        ] {
            assert!(f.contains(&PathBuf::from(want)), "{want}: {f:?}");
        }
        assert!(is_settings_name("~/.claude/settings.json"));
        assert!(!is_settings_name(".claude/ralph-loop.local.md"));
    }
}
