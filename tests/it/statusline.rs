//! The status line (`ralph-setup statusline`), fed the JSON Claude Code
//! 2.1.328 sends (recorded from the client: docs/client-measurements.md).

use crate::support::*;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// The status-line input measured on the real client, for the project at `root`.
fn client_json(root: &std::path::Path, used: &str) -> String {
    let root = root.display();
    format!(
        r#"{{"session_id":"S1","transcript_path":"/tmp/t.jsonl","cwd":"{root}","prompt_id":"p1",
 "model":{{"id":"claude-opus-5-5","display_name":"Opus 5.5"}},
 "workspace":{{"current_dir":"{root}","project_dir":"{root}","added_dirs":[]}},"version":"2.1.328",
 "cost":{{"total_cost_usd":0.00024,"total_duration_ms":11549,"total_api_duration_ms":49,"total_lines_added":0,"total_lines_removed":0}},
 "context_window":{{"total_input_tokens":10,"total_output_tokens":10,"context_window_size":1000000,
   "current_usage":{{"input_tokens":10,"output_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},
   "used_percentage":{used},"remaining_percentage":59}},
 "exceeds_200k_tokens":false,"fast_mode":false,"thinking":{{"enabled":true}}}}"#
    )
}

/// The loop's status line for `p`, without colour, as the client shows it.
pub(crate) fn plain_line(p: &Project) -> String {
    statusline(p, &[], &client_json(&p.root, "null"), Some("1"))
}

/// `ralph-setup statusline ARGS` with `stdin`, from another folder (the
/// client's JSON names the project), NO_COLOR as given.
fn statusline(p: &Project, args: &[&str], stdin: &str, no_color: Option<&str>) -> String {
    let mut cmd = Command::new(SETUP);
    cmd.arg("statusline")
        .args(args)
        .current_dir(std::env::temp_dir())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("NO_COLOR")
        .env("RALPH_DATA_DIR", p.data_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn nothing_at_all_without_a_loop() {
    let p = Project::new("sl-none");
    let json = client_json(&p.root, "null");
    assert_eq!(statusline(&p, &[], &json, None), "");
    assert_eq!(statusline(&p, &[], "", None), "");
    // Composes: the user's own line alone.
    let out = statusline(&p, &["--then", "echo mine"], &json, None);
    assert_eq!(out, "mine\n");
}

#[test]
fn iteration_story_check_and_context_during_a_loop() {
    let p = Project::new("sl-loop");
    p.write(
        "prd.json",
        r#"{"userStories":[{"id":"US-001","passes":true},{"id":"US-002","passes":false},{"id":"US-003","passes":false}]}"#,
    );
    p.prompt(
        "S1",
        "/ralph:ralph-loop --prd-file prd.json --max-iterations 10 --verify true",
    );
    let json = client_json(&p.root, "41.4");
    assert_eq!(
        statusline(&p, &[], &json, Some("1")),
        "ralph 1/10 · US-002 1/3 · 41 % ctx\n"
    );
    assert_eq!(
        statusline(&p, &[], &json, None),
        "\x1b[32mralph 1/10 · US-002 1/3 · 41 % ctx\x1b[0m\n"
    );
    // A Stop feeds the next iteration; the loop's check has a result on file.
    p.stop("S1", Some("did some"));
    let verify = p.loop_paths().verify;
    let result = |exit| {
        format!(r#"{{"loop":{{"command":"true","exit":{exit},"time":"2026-12-01T00:00:00Z"}}}}"#)
    };
    std::fs::write(&verify, result(1)).unwrap();
    let out = statusline(&p, &[], &client_json(&p.root, "null"), Some("1"));
    assert_eq!(out, "ralph 2/10 · US-002 1/3 · verify ✘\n");
    std::fs::write(&verify, result(0)).unwrap();
    let out = statusline(&p, &[], &client_json(&p.root, "null"), Some("1"));
    assert_eq!(out, "ralph 2/10 · US-002 1/3 · verify ✔\n");
    // The user's own line follows ours, given the same stdin.
    let out = statusline(&p, &["--then", "head -c 16"], &json, Some("1"));
    assert_eq!(
        out,
        "ralph 2/10 · US-002 1/3 · verify ✔ · 41 % ctx  {\"session_id\":\"S"
    );
}

#[test]
fn yellow_from_70_and_red_from_90_percent_of_the_cap() {
    let p = Project::new("sl-colour");
    let json = client_json(&p.root, "null");
    for (iteration, colour) in [(6, "32"), (7, "33"), (8, "33"), (9, "31"), (10, "31")] {
        p.loop_state("S1", iteration, 10, None, "", "work");
        let out = statusline(&p, &[], &json, None);
        assert_eq!(
            out,
            format!("\x1b[{colour}mralph {iteration}/10\x1b[0m\n"),
            "iteration {iteration}"
        );
    }
}
