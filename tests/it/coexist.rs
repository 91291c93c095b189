//! The official Ralph plugin enabled beside ralph: the start says so in one
//! line (`start::coexist`), through the real UserPromptSubmit hook.

use crate::support::*;

const WARNING: &str = "The official Ralph plugin is enabled too";

fn start_with_settings(name: &str, enabled: bool) -> String {
    let p = Project::new(name);
    p.write(
        ".claude/settings.local.json",
        format!(r#"{{"enabledPlugins": {{"ralph@ralph": true, "ralph-loop@claude-plugins-official": {enabled}}}}}"#),
    );
    let out = p.prompt("s", "/ralph-loop Fix it. --max-iterations 2");
    let msg = message(out.as_ref());
    assert!(msg.contains("Ralph loop started"), "{msg}");
    msg
}

#[test]
fn the_start_names_the_official_plugin_and_how_to_turn_it_off() {
    let msg = start_with_settings("coexist-on", true);
    assert!(msg.contains(WARNING), "{msg}");
    assert!(
        msg.contains("claude plugin disable ralph-loop@claude-plugins-official"),
        "{msg}"
    );
}

#[test]
fn a_disabled_official_plugin_is_not_mentioned() {
    let msg = start_with_settings("coexist-off", false);
    assert!(!msg.contains(WARNING), "{msg}");
}
