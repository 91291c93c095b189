//! `ralph`, the one command a user types (issue 26): its verbs, its help
//! from the option definitions, and errors that say what to do next,
//! printed once.

use crate::support::{Project, SETUP, command};
use std::process::{Command, Output, Stdio};

const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

/// `bin ARGS` in the project, the AI_AGENT marker off (the user's terminal).
fn user(bin: &str, p: &Project, args: &[&str]) -> Output {
    let mut c = command(bin, p, args);
    c.env_remove("AI_AGENT").stdin(Stdio::null());
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn ralph_names_every_user_verb_and_ralph_setup_points_to_it() {
    let p = Project::new("ralph-help");
    let help = text(&user(RALPH, &p, &["--help"]).stdout);
    for verb in [
        "start",
        "status",
        "cancel",
        "resume",
        "report",
        "statusline",
        "run",
    ] {
        assert!(help.contains(&format!("\n  {verb} ")), "{verb}: {help}");
    }
    assert!(!help.contains("hook-"), "{help}");
    let setup = text(&user(SETUP, &p, &["--help"]).stdout);
    assert!(setup.contains("type `ralph`"), "{setup}");
    for hidden in ["hook-prompt", "hook-event", "show", "start", "cancel"] {
        assert!(
            !setup.contains(&format!("\n  {hidden}")),
            "{hidden}: {setup}"
        );
    }
}

#[test]
fn start_and_run_help_come_from_the_option_table() {
    let p = Project::new("ralph-opts");
    let start = text(&user(RALPH, &p, &["start", "--help"]).stdout);
    let run = text(&user(RALPH, &p, &["run", "-h"]).stdout);
    for o in ralph_core::args::options::of(false) {
        assert!(
            start.contains(&o.line()),
            "ralph start --help lacks {}",
            o.name
        );
        assert!(run.contains(&o.line()), "ralph run --help lacks {}", o.name);
    }
    for o in ralph_core::args::options::of(true) {
        assert!(run.contains(&o.line()), "ralph run --help lacks {}", o.name);
    }
    assert!(!start.contains("--max-wait"), "{start}");
    assert!(run.contains("Exit codes:"), "{run}");
}

#[test]
fn a_misspelt_option_is_named_once_with_the_option_meant() {
    let p = Project::new("ralph-typo");
    // One terminal: stdout and stderr the same file, as `2>&1` makes them.
    let out = Command::new("sh")
        .args([
            "-c",
            &format!("'{RALPH}' start fix it --max-iteration 3 2>&1"),
        ])
        .current_dir(&p.root)
        .env("CLAUDE_PROJECT_DIR", &p.root)
        .env("RALPH_DATA_DIR", p.data_dir())
        .env_remove("AI_AGENT")
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(
        said.matches("did you mean `--max-iterations`?").count(),
        1,
        "{said}"
    );
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(!p.loop_paths().state.exists());
    // Two files (a terminal that shows both streams, a script): stderr
    // alone says it (issue 34: it was printed on both).
    let out = user(RALPH, &p, &["start", "fix", "it", "--max-iteratons", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "", "nothing on stdout");
    let said = text(&out.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("did you mean `--max-iterations`?"), "{said}");
}

#[test]
fn a_missing_prd_says_how_to_write_one() {
    let p = Project::new("ralph-noprd");
    let out = user(RALPH, &p, &["start", "--prd-file", "prd.json"]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said.contains("/ralph-prd") && !said.contains("Fix the PRD"),
        "{said}"
    );
}

#[test]
fn ralph_run_without_the_plugin_says_what_to_set() {
    let p = Project::new("ralph-noplugin");
    let mut c = command(RALPH, &p, &["run", "task", "--fresh", "--max-tokens", "2M"]);
    c.env_remove("AI_AGENT")
        .env("RALPH_PLUGIN_ROOT", p.root.join("nowhere"))
        .stdin(Stdio::null());
    let out = c.output().unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("set it to the ralph plugin's folder")
            && said.contains(".claude/plugins/cache/"),
        "{said}"
    );
}

#[test]
fn ralph_start_status_resume_and_cancel_under_one_name() {
    let p = Project::new("ralph-verbs");
    let out = user(
        RALPH,
        &p,
        &[
            "start",
            "Fix",
            "the -h flag",
            "--max-runtime",
            "2h",
            "--verify-timeout",
            "90s",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = text(&user(RALPH, &p, &["status", "--json"]).stdout);
    assert!(
        status.contains("\"active\": true") || status.contains("iteration"),
        "{status}"
    );
    let resumed = user(RALPH, &p, &["resume"]);
    assert!(resumed.status.code().is_some(), "resume ran");
    let cancelled = text(&user(RALPH, &p, &["cancel"]).stdout);
    assert!(cancelled.contains("Cancelled"), "{cancelled}");
    let report = user(RALPH, &p, &["report"]);
    assert_eq!(report.status.code(), Some(0));
}

/// A client that writes no transcript and says the same words each run:
/// every Stop after the first is the same turn again, counted as none, so
/// the cap would never come. `ralph run` stops after three such runs in a
/// row, and says why (found by the Windows slice's stand-in client).
#[test]
fn ralph_run_stops_when_its_clients_turns_are_never_counted() {
    let p = Project::new("ralph-uncounted");
    p.git_init();
    let said = "Still working on it.";
    let stream = [
        serde_json::json!({"type": "system", "subtype": "init", "cwd": p.root,
            "session_id": "stand-in-1", "tools": [], "model": "m"}),
        serde_json::json!({"type": "assistant", "session_id": "stand-in-1", "message": {
            "id": "msg_1", "model": "m", "role": "assistant",
            "content": [{"type": "text", "text": said}],
            "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        serde_json::json!({"type": "result", "subtype": "success", "is_error": false,
            "num_turns": 1, "result": said, "session_id": "stand-in-1",
            "usage": {"input_tokens": 3, "output_tokens": 2}}),
    ];
    let lines: String = stream.iter().map(|l| format!("{l}\n")).collect();
    p.write("stand-in/stream.jsonl", &lines);
    p.write(
        "stand-in/claude",
        format!(
            "#!/bin/sh\necho run >> {}\ncat {}\n",
            p.path("stand-in/runs").display(),
            p.path("stand-in/stream.jsonl").display()
        ),
    );
    let client = p.path("stand-in/claude");
    std::fs::set_permissions(&client, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut c = command(
        RALPH,
        &p,
        &[
            "run",
            "Fix it.",
            "--completion-promise",
            "DONE",
            "--max-iterations",
            "20",
            "--no-sandbox",
        ],
    );
    c.env_remove("AI_AGENT")
        .env("RALPH_CLAUDE", &client)
        .stdin(Stdio::null());
    let out = c.output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let runs = std::fs::read_to_string(p.path("stand-in/runs")).unwrap_or_default();
    assert!(
        runs.lines().count() <= 5,
        "{} runs: {said}",
        runs.lines().count()
    );
    assert!(
        said.contains("counted none of the client's last 3 runs"),
        "{said}"
    );
    assert_ne!(out.status.code(), Some(0), "{said}");
}
