//! `/ralph:statusline` and `/ralph:statusline off`: the user's settings.json
//! gets ralph's status line (their own kept under `--then`) and, undone, is
//! byte for byte what it was.

use crate::support::*;
use std::path::PathBuf;

/// A settings file as a person writes one: their order, spacing and a
/// status line of their own.
const MINE: &str = "{\n    \"model\": \"opus\",\n    \"statusLine\": { \"type\": \"command\", \"command\": \"echo \\\"$USER's line\\\"\", \"padding\": 0 },\n  \"env\": {\"A\": \"1\"}\n}";

fn config_dir(p: &Project) -> PathBuf {
    // In the data folder, so the project's clean-up takes it too.
    let dir = p.data_dir().join("config");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Type `text` in the project; the hook's answer to the user.
fn typed(p: &Project, text: &str, agent: bool) -> String {
    let mut cmd = command(SETUP, p, &["hook-prompt"]);
    cmd.env("CLAUDE_CONFIG_DIR", config_dir(p));
    if agent {
        cmd.env("AI_AGENT", "claude-code_2.1.328_agent");
    } else {
        cmd.env_remove("AI_AGENT");
    }
    let input = prompt_input(&p.root, text);
    let out = run(cmd, Stdin::Bytes(&input));
    out.json()
        .map(|v| {
            assert_eq!(v["decision"], "block", "{v}");
            v["reason"].as_str().unwrap().to_string()
        })
        .unwrap_or_default()
}

#[test]
fn on_then_off_leaves_the_settings_byte_identical() {
    let p = Project::new("sl-install");
    let settings = config_dir(&p).join("settings.json");
    std::fs::write(&settings, MINE).unwrap();
    let said = typed(&p, "/ralph:statusline", false);
    assert!(said.contains("ralph's status line is in"), "{said}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let cmd = v["statusLine"]["command"].as_str().unwrap().to_string();
    assert!(
        cmd.contains("ralph-setup' statusline --then 'echo"),
        "{cmd}"
    );
    assert_eq!(v["statusLine"]["padding"], 0);
    assert_eq!(v["env"]["A"], "1");
    // Twice is once.
    assert!(typed(&p, "/ralph:statusline", false).contains("already"));
    // The installed command runs: the user's line alone with no loop.
    let out = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .env("USER", "ada")
        .env("RALPH_DATA_DIR", p.data_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ada's line\n");
    let said = typed(&p, "/ralph:statusline off", false);
    assert!(said.contains("exactly as it was"), "{said}");
    assert_eq!(std::fs::read(&settings).unwrap(), MINE.as_bytes());
    assert!(typed(&p, "/ralph:statusline off", false).contains("nothing to undo"));
    assert_eq!(std::fs::read(&settings).unwrap(), MINE.as_bytes());
}

#[test]
fn no_file_before_means_no_file_after() {
    let p = Project::new("sl-nofile");
    let settings = config_dir(&p).join("settings.json");
    typed(&p, "/ralph-statusline", false);
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("statusline\""), "{text}");
    assert!(!text.contains("--then"), "{text}");
    typed(&p, "/ralph:statusline off", false);
    assert!(!settings.exists());
}

#[test]
fn a_file_changed_since_gets_only_its_status_line_back() {
    let p = Project::new("sl-changed");
    let settings = config_dir(&p).join("settings.json");
    std::fs::write(&settings, MINE).unwrap();
    typed(&p, "/ralph:statusline", false);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    v["theme"] = "dark".into();
    std::fs::write(&settings, v.to_string()).unwrap();
    let said = typed(&p, "/ralph:statusline off", false);
    assert!(said.contains("only `statusLine` was put back"), "{said}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    let mine: serde_json::Value = serde_json::from_str(MINE).unwrap();
    assert_eq!(v["statusLine"], mine["statusLine"]);
}

#[test]
fn never_by_the_agent() {
    let p = Project::new("sl-agent");
    let settings = config_dir(&p).join("settings.json");
    std::fs::write(&settings, MINE).unwrap();
    // Refused in one line, the settings untouched.
    assert!(typed(&p, "/ralph:statusline", true).contains("not here"));
    let mut cmd = command(SETUP, &p, &["statusline", "--install"]);
    cmd.env("CLAUDE_CONFIG_DIR", config_dir(&p))
        .env("AI_AGENT", "claude-code_2.1.328_agent");
    let out = run(cmd, Stdin::Bytes(b""));
    assert_ne!(out.code, Some(0));
    assert_eq!(std::fs::read(&settings).unwrap(), MINE.as_bytes());
}
