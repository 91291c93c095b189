//! The official Ralph plugin enabled beside ralph: said in one line when a
//! loop starts.
//!
//! Measured with both installed (Claude Code 2.1.328, docs/client-measurements.md,
//! "Both plugins installed"): a typed `/ralph-loop` runs ralph's skill, and
//! the official Stop hook stays silent in ralph's loops only because ralph
//! quotes `session_id` in the project's copy and the official hook compares
//! it unquoted. But the official `/ralph-loop:ralph-loop` writes
//! `.claude/ralph-loop.local.md` itself: at the first Stop both plugins feed
//! the prompt (the model gets it twice) before ralph adopts the loop, and its
//! `/ralph-loop:cancel-ralph` asks the model to delete a file ralph guards and
//! restores. So the user is told, once, at the start, with the command that
//! turns the other plugin off.
//!
//! The client's own `/goal` is another Stop check beside ralph's: a session
//! with an active goal is told so at the start, in one line (measured on
//! 2.1.328: docs/client-measurements.md, "/goal beside a Ralph loop"). Both
//! checks answer every Stop; the client makes one continuation of what
//! both say, so the model gets the loop's feed and the goal's reason in the
//! same turn, never two turns; the session stops only when neither asks
//! for more, and neither ends the other.
//!
//! Does I/O: [`note`] reads the settings files a session reads. Pure:
//! [`others_enabled`] (the settings' texts in, the plugin ids out), [`line`]
//! and [`goal_line`] (the goal read by `start::commands`).

use crate::statusline_install;
use crate::store;
use serde_json::Value;
use std::path::Path;

/// The official plugin's names: `ralph-loop` in the claude-plugins-official
/// marketplace, `ralph-wiggum` in the claude-code repository's (its former name).
pub(crate) const OFFICIAL_NAMES: [&str; 2] = ["ralph-loop", "ralph-wiggum"];

/// The plugin ids (`name@marketplace`) of the official plugin that the
/// settings enable, in order of precedence (user, then project, then
/// local): a later file's `false` turns an earlier `true` off, as the client
/// reads them. A file that does not parse counts as absent.
pub(crate) fn others_enabled(settings: &[Option<&str>]) -> Vec<String> {
    let mut enabled: Vec<(String, bool)> = Vec::new();
    for text in settings.iter().flatten() {
        let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let Some(Value::Object(plugins)) = top.get("enabledPlugins") else {
            continue;
        };
        for (id, on) in plugins {
            let name = id.split('@').next().unwrap_or(id);
            if !OFFICIAL_NAMES.contains(&name) {
                continue;
            }
            let on = on.as_bool().unwrap_or(false);
            match enabled.iter_mut().find(|(known, _)| known == id) {
                Some(entry) => entry.1 = on,
                None => enabled.push((id.clone(), on)),
            }
        }
    }
    enabled
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(id, _)| id)
        .collect()
}

/// The line for the start's summary (with its leading newline), or nothing.
pub(crate) fn line(ids: &[String]) -> String {
    let Some(first) = ids.first() else {
        return String::new();
    };
    format!(
        "\n⚠️ The official Ralph plugin is enabled too ({}): `/ralph-loop` runs ralph's, but its \
         `/{name}:ralph-loop` starts a loop both plugins drive and its `/{name}:cancel-ralph` \
         does not cancel ralph's. Turn it off: `claude plugin disable {first}`.",
        ids.join(", "),
        name = first.split('@').next().unwrap_or(first),
    )
}

/// Reads the user's settings and the project's (`.claude/settings.json`,
/// `.claude/settings.local.json`) and says whether the official plugin is
/// enabled. Never fails: an unreadable file counts as absent.
pub(crate) fn note(root: &Path) -> String {
    let files = [
        statusline_install::settings_file(),
        root.join(".claude/settings.json"),
        root.join(".claude/settings.local.json"),
    ];
    let texts: Vec<Option<String>> = files
        .iter()
        .map(|f| store::read_optional(f).ok().flatten())
        .collect();
    let refs: Vec<Option<&str>> = texts.iter().map(Option::as_deref).collect();
    line(&others_enabled(&refs))
}

/// The line for the start's summary when the session has an active
/// `/goal` (with its leading newline), or nothing.
pub(crate) fn goal_line(condition: Option<&str>) -> String {
    let Some(condition) = condition else {
        return String::new();
    };
    format!(
        "\nGoal: this session's /goal (\"{}\") stays active beside the loop. Its check runs at each stop with ralph's, and the session goes on while either asks for more: the loop ends on its own terms, the goal when its check finds it met (/goal clear ends it sooner, /cancel-ralph the loop).",
        crate::fmt::one_line(condition, 120)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_official_plugin_under_either_name() {
        let user = r#"{"enabledPlugins": {"ralph@ralph": true,
            "ralph-loop@claude-plugins-official": true, "ralph-wiggum@claude-code-plugins": true}}"#;
        assert_eq!(
            others_enabled(&[Some(user)]),
            [
                "ralph-loop@claude-plugins-official",
                "ralph-wiggum@claude-code-plugins"
            ]
        );
    }

    #[test]
    fn a_later_file_turns_it_off_and_ralph_alone_says_nothing() {
        let user = r#"{"enabledPlugins": {"ralph-loop@claude-plugins-official": true}}"#;
        let local = r#"{"enabledPlugins": {"ralph-loop@claude-plugins-official": false}}"#;
        assert!(others_enabled(&[Some(user), None, Some(local)]).is_empty());
        let only_ours = r#"{"enabledPlugins": {"ralph@ralph": true, "ralph-loopy@x": true}}"#;
        assert!(others_enabled(&[Some(only_ours)]).is_empty());
        assert_eq!(line(&[]), "");
    }

    #[test]
    fn broken_or_odd_settings_count_as_absent() {
        let odd = [
            Some("not json"),
            Some("[]"),
            Some(r#"{"enabledPlugins": ["ralph-loop@x"]}"#),
            Some(r#"{"enabledPlugins": {"ralph-loop@x": "yes"}}"#),
        ];
        assert!(others_enabled(&odd).is_empty());
    }

    #[test]
    fn the_line_names_the_plugin_and_the_command_that_turns_it_off() {
        let text = line(&["ralph-loop@claude-plugins-official".to_string()]);
        assert!(text.starts_with("\n⚠️ The official Ralph plugin is enabled too"));
        assert!(text.contains("`/ralph-loop:ralph-loop`"));
        assert!(text.contains("`claude plugin disable ralph-loop@claude-plugins-official`"));
        assert_eq!(text.lines().count(), 2, "one line after the newline");
    }

    #[test]
    fn an_active_goal_is_named_in_one_line() {
        assert_eq!(goal_line(None), "");
        let text = goal_line(Some("every test passes"));
        assert!(text.starts_with("\nGoal: this session's /goal (\"every test passes\")"));
        assert!(text.contains("/goal clear") && text.contains("/cancel-ralph"));
        assert_eq!(text.lines().count(), 2, "one line after the newline");
    }
}
