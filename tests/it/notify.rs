//! `--notify`: a command run once per loop end (complete, cap, stall,
//! budget, blocker, a pause on an API error or usage limit), with the
//! outcome in its environment, after the hook answered.

use crate::support::*;
use serde_json::json;

/// The script every test names: one line per call in `notified.txt`.
const SCRIPT: &str = "printf '%s %s %s|%s\\n' \"$RALPH_OUTCOME\" \"$RALPH_ITERATIONS\" \"$RALPH_REASON\" \"$RALPH_MESSAGE\" >> notified.txt\n";

fn notified(p: &Project) -> Vec<String> {
    p.read("notified.txt")
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn once_when_the_cap_ends_the_loop_with_the_outcome() {
    let p = Project::new("notify-cap");
    p.write("n.sh", SCRIPT);
    p.prompt(
        "S1",
        "/ralph:ralph-loop task --max-iterations 2 --notify \"sh n.sh\"",
    );
    assert!(p.state().unwrap().contains("notify: \"sh n.sh\""));
    assert!(is_block(p.stop("S1", Some("one")).as_ref()));
    assert!(notified(&p).is_empty(), "not while the loop goes on");
    let out = p.stop("S1", Some("two"));
    assert!(!is_block(out.as_ref()));
    let lines = notified(&p);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("ended 2 max_iterations|"), "{lines:?}");
    assert!(
        lines[0].contains("iteration cap (2)"),
        "the hook's own message: {lines:?}"
    );
    // Another Stop with no loop: nothing more.
    p.stop("S1", Some("three"));
    assert_eq!(notified(&p).len(), 1);
}

#[test]
fn the_project_default_on_completion_and_not_on_cancel() {
    let p = Project::new("notify-default");
    p.write("n.sh", SCRIPT);
    p.write(".claude/ralph.toml", "# ralph\nnotify = \"sh n.sh\"\n");
    p.prompt("S1", "/ralph:ralph-loop task --completion-promise DONE");
    p.stop("S1", Some("<promise>DONE</promise>"));
    let lines = notified(&p);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("complete 1 complete|"), "{lines:?}");
    // A cancel is the user's own doing.
    p.prompt("S1", "/ralph:ralph-loop task --completion-promise DONE");
    p.prompt("S1", "/ralph:cancel-ralph");
    p.stop("S1", Some("stopped"));
    assert_eq!(notified(&p).len(), 1);
    // `off` in the loop wins over the default.
    p.prompt(
        "S1",
        "/ralph:ralph-loop task --max-iterations 1 --notify off",
    );
    p.stop("S1", Some("one"));
    assert_eq!(notified(&p).len(), 1);
}

#[test]
fn a_pause_on_a_usage_limit_and_not_under_ralph_run() {
    let p = Project::new("notify-pause");
    p.write("n.sh", SCRIPT);
    // The project's default, as a start resolves it into the state (the
    // file itself is not read during the loop).
    p.write(".claude/ralph.toml", "notify = 'sh n.sh'\n");
    p.loop_state("\"s1\"", 2, 10, None, "notify: \"sh n.sh\"\n", "Task\n");
    let failure = json!({"session_id": "s1", "cwd": p.root, "hook_event_name": "StopFailure",
        "error": "rate_limit", "last_assistant_message": "API Error: 429"});
    let (code, _) = run_raw(
        SETUP,
        &["hook-event"],
        &p.root,
        failure.to_string().as_bytes(),
    );
    assert_eq!(code, 0);
    let lines = notified(&p);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("paused 2 rate_limit|"), "{lines:?}");
    // `ralph run` tells the hooks it notifies itself.
    let p = Project::new("notify-runner");
    p.write("n.sh", SCRIPT);
    p.prompt(
        SESSION,
        "/ralph:ralph-loop task --max-iterations 1 --notify \"sh n.sh\"",
    );
    let run_pass = ralph_core::passes::Pass::issue(
        &p.loop_paths(),
        &ralph_core::passes::Purpose::Run {
            session: SESSION.into(),
        },
    )
    .expect("pass");
    let mut cmd = command(STOP, &p, &[]);
    cmd.env(ralph_core::passes::PASS_ENV, run_pass.token());
    let input = stop_input(&p.root, "one");
    let out = run(cmd, Stdin::Bytes(&input));
    assert!(!out.is_block());
    assert!(p.state().is_none(), "the loop ended");
    assert!(notified(&p).is_empty());
    // The old flag, which the agent could set in the project's settings, no
    // longer silences the loop's end.
    let p = Project::new("notify-old-flag");
    p.write("n.sh", SCRIPT);
    p.prompt(
        SESSION,
        "/ralph:ralph-loop task --max-iterations 1 --notify \"sh n.sh\"",
    );
    let mut cmd = command(STOP, &p, &[]);
    cmd.env("RALPH_RUN_NOTIFIES", "1");
    let out = run(cmd, Stdin::Bytes(&stop_input(&p.root, "one")));
    assert!(!out.is_block());
    assert_eq!(notified(&p).len(), 1);
}

#[test]
fn a_slow_command_never_holds_the_hook_long() {
    let p = Project::new("notify-slow");
    p.prompt(
        "S1",
        "/ralph:ralph-loop task --max-iterations 1 --notify \"sleep 60\"",
    );
    let started = std::time::Instant::now();
    p.stop("S1", Some("one"));
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
}
