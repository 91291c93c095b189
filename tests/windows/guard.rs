//! The guard's Windows table through the real ralph-guard.exe, in a loop
//! that ralph-setup.exe started from the prompt hook, in a project under
//! the profile folder, with HOME and USERPROFILE in Windows form.

use crate::support::{SESSION, WinProject, parse, shown};
use crate::windows_table;
use serde_json::{Value, json};

const PRD: &str = r#"{"project":"p","userStories":[{"id":"US-1","title":"a","passes":false}]}"#;

#[test]
fn every_spelling_of_the_loops_files_is_refused_and_honest_work_allowed() {
    let p = WinProject::new("guard");
    p.write("prd.json", PRD);
    p.write("tests/check.sh", "exit 0\n");
    p.write("src/main.rs", "fn main() {}\n");
    let started =
        p.prompt(r#"/ralph-loop Fix it. --verify "sh tests/check.sh" --max-iterations 5"#);
    let state = p
        .state()
        .unwrap_or_else(|| panic!("no loop started: {started:?}"));
    assert!(
        state.contains("tests/check.sh"),
        "the check's script is pinned: {state}"
    );
    let cases = windows_table::cases(&shown(&p.home), &shown(&p.root));
    assert!(cases.len() >= 90, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let (tool_name, tool_input) = windows_table::tool_call(c);
        let input = json!({"session_id": SESSION, "cwd": p.root,
            "transcript_path": p.transcript(), "hook_event_name": "PreToolUse",
            "tool_name": tool_name, "tool_input": tool_input});
        let out = p.run("ralph-guard", &[], &input.to_string());
        let got = parse(&out);
        let decision = got
            .as_ref()
            .and_then(|o| o.pointer("/hookSpecificOutput/permissionDecision"))
            .and_then(Value::as_str);
        let ok = match c.expect.as_str() {
            "deny" => decision == Some("deny"),
            _ => decision.is_none() && out.status.success(),
        };
        if !ok {
            failures.push(format!(
                "line {}: expected {} for {} `{}`, got {}{}",
                c.line,
                c.expect,
                c.tool,
                c.rest,
                got.map(|o| o.to_string())
                    .unwrap_or_else(|| "(nothing)".into()),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} Windows cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
