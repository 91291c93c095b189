//! The guard's Windows table (tests/fixtures/guard/windows-cases.txt) on
//! Linux: the pure decision (`ralph_policy::decide`) over a Windows
//! project's facts as the guard gathers them there (project
//! `C:\Users\me\proj`, home `C:\Users\me`, the real path `\\?\C:\...` that
//! Windows' canonicalize gives). The same table runs under Wine through the
//! real ralph-guard.exe (tests/windows).

use ralph_core::paths::{PROTECTED_FILES, REVIEW_DIR};
use ralph_policy::{LoopContext, PolicySource, ToolCall, decide};
use std::path::PathBuf;

#[path = "../shared/windows_table.rs"]
mod windows_table;

const HOME: &str = r"C:\Users\me";
const ROOT: &str = r"C:\Users\me\proj";

/// What the guard gathers on Windows while the table's loop runs.
fn windows_context() -> LoopContext {
    let p = |s: &str| PathBuf::from(s);
    LoopContext {
        root: p(ROOT),
        real_root: Some(p(r"\\?\C:\Users\me\proj")),
        cwd: p(ROOT),
        loop_active: true,
        home: Some(p(HOME)),
        loop_files: PROTECTED_FILES.iter().map(PathBuf::from).collect(),
        prd_file: Some(p("prd.json")),
        kept_from_whole_tree: vec![p(".ralph/command-policy"), p(".claude/ralph-policy")],
        protected_dirs: vec![
            p(r"C:\Users\me\.claude\ralph"),
            p(r"\\?\C:\Users\me\.claude\ralph"),
            p(r"C:\Users\me\.claude\projects"),
        ],
        client_projects: vec![p(r"C:\Users\me\.claude\projects")],
        settings_files: vec![
            p(r"C:\Users\me\proj\.claude\settings.json"),
            p(r"C:\Users\me\proj\.claude\settings.local.json"),
            p(r"C:\Users\me\.claude\settings.json"),
            p(r"C:\Users\me\.claude\settings.local.json"),
        ],
        config_dirs: vec![p(REVIEW_DIR)],
        pins: vec![(p("tests/check.sh"), "the check `sh tests/check.sh`".into())],
        ..LoopContext::default()
    }
}

#[test]
fn windows_spellings_are_denied_and_look_alikes_allowed() {
    let ctx = windows_context();
    let cases = windows_table::cases(HOME, ROOT);
    assert!(cases.len() >= 90, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let (tool_name, tool_input) = windows_table::tool_call(c);
        let call = ToolCall {
            tool_name,
            tool_input,
        };
        let got = decide(&call, &PolicySource::Absent, &ctx).to_hook_output();
        let denied = got
            .as_ref()
            .and_then(|o| o.pointer("/hookSpecificOutput/permissionDecision"))
            .is_some_and(|d| d == "deny");
        if denied != (c.expect == "deny") {
            failures.push(format!(
                "line {}: expected {} for {} `{}`, got {}",
                c.line,
                c.expect,
                c.tool,
                c.rest,
                got.map(|o| o.to_string())
                    .unwrap_or_else(|| "(nothing)".into())
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

/// GitHub's Windows runners name the profile folder by its 8.3 name in the
/// environment (`C:\Users\RUNNER~1`) while Windows' canonical path is the
/// long one: the guard holds both (the folders as named and as resolved),
/// and the agent's spelling meets either.
#[test]
fn a_home_named_by_its_short_name_meets_its_long_spelling() {
    let p = |s: &str| PathBuf::from(s);
    let ctx = LoopContext {
        root: p(r"C:\Users\RUNNER~1\proj"),
        real_root: Some(p(r"\\?\C:\Users\runneradmin\proj")),
        cwd: p(r"C:\Users\RUNNER~1\proj"),
        home: Some(p(r"C:\Users\RUNNER~1")),
        protected_dirs: vec![
            p(r"C:\Users\RUNNER~1\.claude\ralph"),
            p(r"\\?\C:\Users\runneradmin\.claude\ralph"),
        ],
        ..windows_context()
    };
    let denied = |cmd: &str| {
        let call = ToolCall {
            tool_name: "Bash".into(),
            tool_input: serde_json::json!({ "command": cmd }),
        };
        decide(&call, &PolicySource::Absent, &ctx)
            .to_hook_output()
            .is_some_and(|o| o.to_string().contains("\"deny\""))
    };
    for cmd in [
        "rm -rf ~/.claude/ralph",
        "rm -rf /c/Users/runneradmin/.claude/ralph",
        r"rm -rf 'C:\Users\RUNNER~1\.claude\ralph'",
        r"rm -rf 'C:\Users\RUNNER~2\.claude\ralph'",
        "rm /c/users/runneradmin/proj/.claude/ralph-loop.local.md",
        "rm /c/users/runner~1/proj/.claude/ralph-loop.local.md",
    ] {
        assert!(denied(cmd), "{cmd}");
    }
    for cmd in [
        "rm -rf /c/Users/runneradmin/proj/out",
        "rm -rf ~/.cache",
        r"rm -rf 'C:\Users\RUNNER~1\AppData\Local\Temp\x'",
    ] {
        assert!(!denied(cmd), "{cmd}");
    }
}
