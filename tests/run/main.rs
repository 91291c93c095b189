//! `ralph run` in the real Claude Code client (the pinned 2.1.328, installed by
//! `scripts/install-client`) against the scripted model: every `claude -p`
//! the runner starts takes the next replies of one script, in order.
//!
//!     cargo test --test run              # all of these
//!     cargo test --test run rotation     # one
//!
//! Every test has its own git project and HOME; waits are for files and
//! events, never a fixed sleep. A missing client skips the tests (fails
//! under `CI`).

// `ralph run` in the real client, with process groups and signals, on a Unix
// host: not built elsewhere (the Windows slice is tests/windows).
#![cfg(unix)]

mod ci;
mod shapes;
mod support;

use ralph_fake_model::{ApiError, Block, Reply, Usage};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

fn reply(text: &str, blocks: Vec<Block>) -> Reply {
    Reply {
        text: Some(text.into()),
        blocks,
        ..Reply::default()
    }
}

fn bash(command: &str) -> Block {
    Block::Bash {
        command: command.into(),
        description: "scripted".into(),
    }
}

fn write(p: &Project, rel: &str, content: &str) -> Block {
    Block::Write {
        file_path: p.path(rel).display().to_string(),
        content: content.into(),
    }
}

#[test]
fn three_iterations_then_the_promise_each_in_a_fresh_session() {
    let Some(claude) = claude() else { return };
    let p = Project::new("three");
    let m = model(vec![
        reply("Iteration one.", vec![write(&p, "one.txt", "1\n")]),
        Reply::text("ONE-DONE"),
        reply("Iteration two.", vec![bash("echo 2 > two.txt")]),
        Reply::text("TWO-DONE"),
        Reply::text("All three done. <promise>DONE</promise>"),
    ]);
    let args = [
        "Build the three files",
        "--completion-promise",
        "DONE",
        "--max-iterations",
        "5",
    ];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    f.shows("✅ Ralph loop complete after 3 iterations");
    f.shows("▶ iteration 3/5");
    f.shows("tool › Bash: echo 2 > two.txt");
    f.shows("says › ONE-DONE");
    f.shows("■ iteration 1/5 done · 2 requests");
    assert_eq!(m.replies_used(), 5);
    assert_eq!(m.exhausted_requests(), 0);
    // Each iteration opens a session whose first request holds only its prompt.
    let firsts = first_requests(&m);
    assert_eq!(firsts.len(), 3, "three sessions");
    for (i, r) in firsts.iter().enumerate() {
        let t = told(r);
        assert!(
            t.contains("Build the three files"),
            "iteration {}: {t}",
            i + 1
        );
        for earlier in ["Iteration one.", "ONE-DONE", "Iteration two.", "TWO-DONE"] {
            assert!(!t.contains(earlier), "iteration {} saw {earlier:?}", i + 1);
        }
    }
    assert!(told(&firsts[0]).contains("Completion promise: print <promise>DONE</promise>"));
    assert!(told(&firsts[1]).contains("iteration 2/5"));
    assert!(told(&firsts[2]).contains("iteration 3/5"));
    assert_eq!(
        p.decisions(),
        [
            "start/prompt",
            "block/continue",
            "block/continue",
            "end/complete"
        ]
    );
    assert!(!p.path(STATE_FILE).exists());
    assert!(p.run_file("iter-3.jsonl").contains("\"type\":\"result\""));
    assert!(
        p.run_file("outcome.json")
            .contains("\"outcome\": \"complete\"")
    );
    let status = p.ralph(None).arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("end (complete) at iteration 3"), "{status}");
    p.done();
}

#[test]
fn prd_with_a_dependency_and_a_story_check() {
    let Some(claude) = claude() else { return };
    let p = Project::new("prd");
    let prd = |one: bool, two: bool| {
        serde_json::json!({"project": "demo", "userStories": [
            {"id": "US-2", "title": "Second", "description": "two.txt holds ok", "priority": 1,
             "passes": two, "dependsOn": ["US-1"],
             "verify": "grep -q ok two.txt 2>/dev/null || { echo 'CHECK: two.txt is missing'; exit 1; }"},
            {"id": "US-1", "title": "First", "description": "one.txt exists", "priority": 2, "passes": one}
        ]})
        .to_string()
    };
    p.write("prd.json", &prd(false, false));
    let m = model(vec![
        reply(
            "US-1 now.",
            vec![
                write(&p, "one.txt", "1\n"),
                write(&p, "prd.json", &prd(true, false)),
            ],
        ),
        Reply::text("US-1 passes."),
        // A false claim: US-2 marked passing without two.txt.
        reply("US-2 now.", vec![write(&p, "prd.json", &prd(true, true))]),
        Reply::text("US-2 passes (it does not)."),
        reply("Fixing US-2.", vec![bash("echo ok > two.txt")]),
        Reply::text("US-2 really passes."),
    ]);
    let args = ["--prd-file", "prd.json", "--max-iterations", "6"];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    f.shows("▶ iteration 1/6 · story US-1 First (0/2 pass)");
    f.shows("▶ iteration 2/6 · story US-2 Second (1/2 pass)");
    f.shows("2/2 stories pass");
    // The refused story is fed again, judged by its check, not by the file.
    f.shows("▶ iteration 3/6 · story US-2 Second (1/2 pass)");
    f.shows("ralph › 🔄 Ralph iteration 3/6 · story US-2 «Second» · 1/2 stories pass · its check failed (exit 1)");
    let firsts = first_requests(&m);
    assert_eq!(firsts.len(), 3);
    // The dependency first, though US-2 has the higher priority.
    assert!(told(&firsts[0]).contains("US-1"));
    assert!(!told(&firsts[0]).contains("Story US-2"));
    assert!(told(&firsts[1]).contains("US-2"));
    // The refused claim comes back with the check's output.
    let third = told(&firsts[2]);
    assert!(third.contains("CHECK: two.txt is missing"), "{third}");
    assert_eq!(p.decisions().last().unwrap(), "end/all_stories_pass");
    assert!(!p.path(STATE_FILE).exists());
    p.done();
}

#[test]
fn the_cap_ends_the_run_and_a_guard_denial_reaches_the_model() {
    let Some(claude) = claude() else { return };
    let p = Project::new("cap");
    let m = model(vec![
        reply(
            "Removing the loop.",
            vec![bash("rm .claude/ralph-loop.local.md")],
        ),
        Reply::text("I could not remove it."),
        Reply::text("Still working."),
    ]);
    let args = [
        "Work on it",
        "--max-iterations",
        "2",
        "--notify",
        "env | grep ^RALPH_ | sort >> notified.txt",
    ];
    // A project default the hooks would use in a session: under `ralph run`
    // the run alone announces its end, once.
    std::fs::create_dir_all(p.path(".claude")).unwrap();
    std::fs::write(
        p.path(".claude/ralph.toml"),
        "notify = \"echo RALPH_OUTCOME=from-a-hook >> notified.txt\"\n",
    )
    .unwrap();
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(1);
    let notified = p.read("notified.txt");
    assert_eq!(notified.matches("RALPH_OUTCOME=").count(), 1, "{notified}");
    for line in [
        "RALPH_OUTCOME=ended",
        "RALPH_ITERATIONS=2",
        "RALPH_REASON=max_iterations",
        "RALPH_EXIT_CODE=1",
        "RALPH_MESSAGE=",
    ] {
        assert!(notified.contains(line), "{line} in {notified}");
    }
    f.shows("tool ✗ PreToolUse:Bash hook error: ralph-guard");
    let denied = told(&m.main_requests()[1]);
    assert!(denied.contains("ralph-guard"), "{denied}");
    assert_eq!(p.decisions().last().unwrap(), "end/max_iterations");
    let reason = p.log().last().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    f.shows(&reason);
    assert!(
        p.run_file("outcome.json")
            .contains("\"outcome\": \"ended\"")
    );
    assert!(!p.path(STATE_FILE).exists());
    p.done();
}

/// The agent rewrites the loop's state with an interpreter (run without the
/// sandbox, so the write lands): the next Stop pauses the loop, and the run
/// ends saying so in a terminal's words (issue 34: it said "the Stop hook
/// did not decide" and named the slash commands).
#[test]
fn a_state_changed_outside_ralph_without_the_sandbox_ends_the_run_paused_in_a_terminals_words() {
    let Some(claude) = claude() else { return };
    let p = Project::new("tampered");
    let rewrite = "python3 -c \"import glob, os; f = glob.glob(os.path.expanduser('~/.claude/ralph/loops/*/state.md'))[0]; open(f, 'a').write('x')\"";
    let m = model(vec![
        reply("Working.", vec![bash(rewrite)]),
        Reply::text("Done for now."),
    ]);
    // Without the sandbox the write lands, and is caught at the next Stop.
    let args = ["Work on it", "--max-iterations", "3", "--no-sandbox"];
    let mut cmd = p.run_cmd(Some(&m), &claude, &args);
    cmd.args(["--", "--dangerously-skip-permissions"]);
    let f = finish(cmd);
    f.expect_code(1);
    f.shows("⚠️  sandbox off: --no-sandbox was given.");
    f.shows("⏸ Ralph loop paused");
    f.shows("`ralph resume` accepts the files as they are now; otherwise `ralph cancel`");
    f.shows("The run stopped; the loop stays paused.");
    let said = format!("{}{}", f.stdout, f.stderr);
    assert!(!said.contains("did not decide"), "{said}");
    assert!(!said.contains("/ralph-resume"), "{said}");
    assert!(
        p.run_file("outcome.json")
            .contains("\"outcome\": \"paused\"")
    );
    assert_eq!(p.decisions().last().unwrap(), "tamper/data_tampered");
    p.done();
}

/// A first run with no client flags: the agent's commands run in the
/// client's sandbox, where an interpreter's writes to ralph's folder, a
/// pinned check, the client's settings and ralph's saved settings copy fail
/// at the kernel, while the project's own files are written; the loop goes
/// on untouched (no tamper pause) and completes on its check.
#[test]
fn in_the_sandbox_an_interpreters_writes_fail_and_the_loop_goes_on() {
    let Some(claude) = claude() else { return };
    let p = Project::new("sandboxed");
    p.write("check.sh", "test -f done.txt\n");
    p.write(".claude/settings.json", "{}\n");
    let home_settings = p.home.join(".claude/settings.json");
    std::fs::create_dir_all(home_settings.parent().unwrap()).unwrap();
    std::fs::write(&home_settings, "{}\n").unwrap();
    let before = p.home.join(".claude/ralph/statusline/before");
    std::fs::create_dir_all(before.parent().unwrap()).unwrap();
    std::fs::write(&before, "{}\n").unwrap();
    let attempt = "import glob, os\nh = os.path.expanduser('~')\nfor f in glob.glob(h + '/.claude/ralph/loops/*/state.md') + ['check.sh', '.claude/settings.json', h + '/.claude/settings.json', h + '/.claude/ralph/statusline/before']:\n    try:\n        open(f, 'a').write('EVIL')\n        print('WROTE', f)\n    except OSError as e:\n        print('REFUSED', e.strerror, f)\n";
    p.write("attempt.py", attempt);
    let m = model(vec![
        reply(
            "Trying the loop's files, then the work.",
            vec![bash("python3 attempt.py; echo x > done.txt")],
        ),
        Reply::text("Done. <promise>DONE</promise>"),
    ]);
    let args = [
        "Do it",
        "--verify",
        "sh check.sh",
        "--completion-promise",
        "DONE",
        "--max-iterations",
        "3",
    ];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    f.shows("🔒 sandbox on");
    f.shows("complete after 1 iteration");
    let result = told(&m.main_requests()[1]);
    assert_eq!(
        result.matches("REFUSED Read-only file system").count(),
        5,
        "{result}"
    );
    assert!(!result.contains("WROTE"), "{result}");
    assert_eq!(p.read("check.sh"), "test -f done.txt\n");
    assert_eq!(p.read(".claude/settings.json"), "{}\n");
    // (The client itself writes its own keys there.)
    assert!(
        !std::fs::read_to_string(&home_settings)
            .unwrap()
            .contains("EVIL")
    );
    assert_eq!(std::fs::read_to_string(&before).unwrap(), "{}\n");
    assert!(
        !p.decisions().iter().any(|d| d.starts_with("tamper")),
        "{:?}",
        p.decisions()
    );
    p.done();
}

/// A story's usual end, `git add -A && git commit`, works inside the
/// sandbox: the names the client binds `/dev/null` over are passed over by
/// git there (the run's excludes), so nothing but the work is committed.
#[test]
fn a_story_commits_inside_the_sandbox() {
    let Some(claude) = claude() else { return };
    let p = Project::new("commit");
    p.write(".gitignore", ".claude/ralph-*\n.claude/ralph-runs/\n");
    let commit = "echo 1 > one.txt && git add -A && git -c user.name=w -c user.email=w@x commit -qm 'US-1: one' && echo COMMITTED; git status --porcelain";
    let m = model(vec![
        reply("Committing the story.", vec![bash(commit)]),
        Reply::text("Done. <promise>DONE</promise>"),
    ]);
    let args = [
        "Do it",
        "--completion-promise",
        "DONE",
        "--max-iterations",
        "2",
    ];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    let result = told(&m.main_requests()[1]);
    assert!(result.contains("COMMITTED"), "{result}");
    let shown = Command::new("git")
        .args(["show", "--stat", "--format=%s", "HEAD"])
        .current_dir(&p.dir)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.starts_with("US-1: one\n"), "{shown}");
    for placeholder in [".bashrc", ".mcp.json", ".vscode", ".claude/agents"] {
        assert!(
            !shown.contains(placeholder),
            "{placeholder} committed: {shown}"
        );
    }
    assert!(
        shown.contains("one.txt") && shown.contains(".gitignore"),
        "{shown}"
    );
    p.done();
}

#[test]
fn a_rate_limit_the_client_retries_is_waited_out_and_said() {
    let Some(claude) = claude() else { return };
    let p = Project::new("429");
    let m = model(vec![
        Reply::error(ApiError::status(429).header("retry-after", "1")),
        Reply::text("Recovered. <promise>DONE</promise>"),
    ]);
    let args = ["Do it", "--completion-promise", "DONE"];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    f.shows("wait › rate limited (429): the client retries in");
    f.shows("complete after 1 iteration");
    let log = p.log();
    let wait = log
        .iter()
        .find(|e| e["decision"] == "wait")
        .expect("a wait in the log");
    assert_eq!(wait["reason"], "rate_limited");
    assert!(wait["message"].as_str().unwrap().contains("retries in"));
    p.done();
}

#[test]
fn a_rate_limit_the_client_gives_up_on_is_retried_by_the_runner() {
    let Some(claude) = claude() else { return };
    let p = Project::new("backoff");
    let m = model(vec![
        Reply::error(ApiError::status(529)),
        Reply::text("Recovered. <promise>DONE</promise>"),
    ]);
    let args = ["Do it", "--completion-promise", "DONE"];
    let mut cmd = p.run_cmd(Some(&m), &claude, &args);
    // The client gives up at once and ends its turn with the API error.
    cmd.env("CLAUDE_CODE_MAX_RETRIES", "0");
    let f = finish(cmd);
    f.expect_code(0);
    f.shows("rate limited or overloaded after the client's own retries: API Error: 529");
    f.shows("then iteration 1 runs again");
    // The rerun is not a loop iteration.
    f.shows("complete after 1 iteration");
    assert_eq!(
        p.decisions(),
        ["start/prompt", "wait/rate_limited", "end/complete"]
    );
    assert!(p.run_file("iter-1.try2.jsonl").contains("Recovered"));
    p.done();
}

#[test]
fn a_usage_limit_with_a_reset_time_is_waited_for() {
    let Some(claude) = claude() else { return };
    let p = Project::new("usage");
    // A client that first reports a usage limit resetting in 2 s (the form
    // older clients printed), then is the real one.
    let shim = p.root.join("claude-limited");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nif [ ! -e \"$0.used\" ]; then\n  : > \"$0.used\"\n  echo '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"shim\"}}'\n  echo \"{{\\\"type\\\":\\\"result\\\",\\\"subtype\\\":\\\"success\\\",\\\"is_error\\\":true,\\\"api_error_status\\\":429,\\\"result\\\":\\\"Claude AI usage limit reached|$(( $(date +%s) + 2 ))\\\"}}\"\n  exit 1\nfi\nexec '{}' \"$@\"\n",
            claude.display()
        ),
    )
    .unwrap();
    chmod_x(&shim);
    let m = model(vec![Reply::text("<promise>DONE</promise>")]);
    let args = ["Do it", "--completion-promise", "DONE"];
    let f = finish(p.run_cmd(Some(&m), &shim, &args));
    f.expect_code(0);
    f.shows("usage limit: Claude AI usage limit reached|");
    f.shows("complete after 1 iteration");
    assert_eq!(
        p.decisions(),
        ["start/prompt", "wait/usage_limit", "end/complete"]
    );
    let wait = p.log()[1]["message"].as_str().unwrap().to_string();
    assert!(wait.contains("(until "), "{wait}");
    p.done();
}

fn chmod_x(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_client_that_keeps_failing_ends_the_run_with_its_message() {
    let p = Project::new("failing");
    let broken = p.root.join("claude-broken");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'starting' >&2\necho 'boom: no model here' >&2\nexit 3\n",
    )
    .unwrap();
    chmod_x(&broken);
    let f = finish(p.run_cmd(None, &broken, &["Do it", "--max-iterations", "5"]));
    f.expect_code(1);
    f.shows("the client failed (1/3 in a row): the client exited with status 3: starting / boom: no model here");
    f.shows("the client failed 3 times in a row; the last time: the client exited with status 3");
    assert_eq!(
        p.decisions(),
        [
            "start/prompt",
            "retry/client_error",
            "retry/client_error",
            "retry/client_error",
            "end/client_failed"
        ]
    );
    assert!(!p.path(STATE_FILE).exists());
    p.done();
}

/// A run whose first iteration marks that it started, then sleeps: its
/// commands carry `tag` (their pids, inside the sandbox, are another
/// namespace's).
fn sleeping_run(
    p: &Project,
    claude: &std::path::Path,
) -> (ralph_fake_model::FakeModel, std::process::Child, String) {
    let tag = format!("60.{}", std::process::id());
    let m = model(vec![reply(
        "Working for a long time.",
        vec![bash(&format!("echo go > started; sleep {tag}"))],
    )]);
    let child = p
        .run_cmd(Some(&m), claude, &["Long task", "--max-iterations", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(
        "the scripted command to start",
        Duration::from_secs(60),
        || !p.read("started").trim().is_empty(),
    );
    (m, child, tag)
}

#[test]
fn sigint_mid_iteration_stops_the_client_and_cancels_the_loop() {
    let Some(claude) = claude() else { return };
    let p = Project::new("sigint");
    let (_m, child, tag) = sleeping_run(&p, &claude);
    let pid = child.id();
    // The user's own shell sends it (its `kill` builtin), and lives on.
    Command::new("bash")
        .args(["-c", &format!("kill -INT {pid}; sleep 1")])
        .status()
        .unwrap();
    let f = wait_output(child, Duration::from_secs(30));
    f.expect_code(130);
    f.shows("🛑 ralph run interrupted (SIGINT) at iteration 1: the client was stopped and the loop cancelled.");
    let left = running_with(&tag);
    assert!(
        left.is_empty(),
        "the iteration's commands still run: {left:?}"
    );
    assert!(!p.path(STATE_FILE).exists());
    assert_eq!(p.decisions().last().unwrap(), "cancel/interrupted");
    let status = p.ralph(None).arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("cancel (interrupted) at iteration 1"),
        "{status}"
    );
    assert!(p.run_file("outcome.json").contains("\"exit_code\": 130"));
    p.done();
}

/// A run whose agent runs `command` (which signals the runner) in one
/// Bash call, then claims: it ends complete, each signal ignored and said;
/// how many signals were logged as ignored. Outside the sandbox: inside it
/// the agent's commands cannot see the runner's pid.
fn signalled_run(p: &Project, claude: &std::path::Path, command: &str) -> usize {
    let m = model(vec![
        reply("Stopping the runner.", vec![bash(command)]),
        Reply::text("Done. <promise>DONE</promise>"),
    ]);
    let args = [
        "Work on it",
        "--completion-promise",
        "DONE",
        "--max-iterations",
        "3",
        "--no-sandbox",
        "--",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash",
    ];
    let f = finish(p.run_cmd(Some(&m), claude, &args));
    f.expect_code(0);
    f.shows("ignored SIGTERM from process");
    f.shows("ignored SIGINT from process");
    f.shows("✅ Ralph loop complete after 1 iteration");
    let decisions = p.decisions();
    assert_eq!(decisions.last().unwrap(), "end/complete");
    decisions
        .iter()
        .filter(|d| *d == "tamper/signal_ignored")
        .count()
}

/// The agent signals its runner (the client's parent): the runner reads the
/// sender, one of its own descendants, ignores the signal and says so, and
/// the run goes on to its normal end.
#[test]
fn a_signal_from_the_runs_own_agent_is_ignored_and_logged() {
    let Some(claude) = claude() else { return };
    let p = Project::new("agent-signal");
    let ignored = signalled_run(
        &p,
        &claude,
        "kill -TERM $(ps -o ppid= -p $PPID); kill -INT $(ps -o ppid= -p $PPID); sleep 1; echo still here",
    );
    assert!(ignored >= 1, "{ignored}");
    p.done();
}

#[test]
fn a_signal_from_a_process_the_agent_detached_is_ignored_too() {
    let Some(claude) = claude() else { return };
    let p = Project::new("detached-signal");
    // The runner is the client's parent; each sender is left to init (or
    // its shell exits at once after sending, gone before ralph looks).
    let detach = "R=$(ps -o ppid= -p $PPID | tr -d ' '); \
        setsid sh -c \"sleep 1; kill -TERM $R\" </dev/null >/dev/null 2>&1 & \
        env -u AI_AGENT setsid -f sh -c \"sleep 1; kill -INT $R; sleep 30\" </dev/null >/dev/null 2>&1; \
        nohup python3 -c \"import os, time; time.sleep(1); os.kill($R, 15)\" </dev/null >/dev/null 2>&1 & disown; \
        sleep 3; echo still here";
    let ignored = signalled_run(&p, &claude, detach);
    assert!(ignored >= 3, "{ignored}");
    p.done();
}

#[test]
fn cancel_from_outside_and_a_second_run_is_refused() {
    let Some(claude) = claude() else { return };
    let p = Project::new("cancel");
    let (_m, child, tag) = sleeping_run(&p, &claude);
    // A second run in the same project is refused while this one runs.
    let second = finish(p.run_cmd(None, &claude, &["Another task"]));
    second.expect_code(2);
    second.shows("another `ralph run` is running in");
    let status = p.ralph(None).arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("ralph run: running (pid"), "{status}");
    assert!(status.contains("session:   ralph-run-"), "{status}");
    let cancel = p.ralph(None).arg("cancel").output().unwrap();
    assert!(cancel.status.success());
    let f = wait_output(child, Duration::from_secs(30));
    f.expect_code(1);
    f.shows("🛑 The loop was cancelled (ralph cancel or /cancel-ralph) at iteration 1; the client was stopped.");
    let left = running_with(&tag);
    assert!(
        left.is_empty(),
        "the iteration's commands still run: {left:?}"
    );
    assert!(
        p.run_file("outcome.json")
            .contains("\"outcome\": \"cancelled\"")
    );
    p.done();
}

#[test]
fn rotation_asks_for_a_handoff_and_the_next_iteration_gets_it() {
    let Some(claude) = claude() else { return };
    let p = Project::new("rotation");
    let big = |input| Usage {
        input_tokens: input,
        ..Usage::default()
    };
    let m = model(vec![
        // Iteration 1: a request past --rotate-at (120k by default).
        Reply {
            usage: Some(big(130_000)),
            ..reply("Working on the parser.", vec![bash("echo step")])
        },
        reply(
            "Writing my hand-off.",
            // With Bash: the client's file tools ask for approval in `.claude/`.
            vec![bash(
                "printf 'HANDOFF-NOTE: the parser is half done; next, wire the CLI.\\n' > .claude/ralph-handoff.md",
            )],
        ),
        Reply::text("Handed off."),
        // Iteration 2: past --rotate-hard (160k): stopped.
        Reply {
            usage: Some(big(170_000)),
            // (A bare `sleep 30` is refused by the client's Bash tool.)
            ..reply("Going on.", vec![bash("echo slow; sleep 30")])
        },
        // Iteration 3.
        Reply::text("Done. <promise>DONE</promise>"),
    ]);
    let args = ["Build the parser", "--completion-promise", "DONE"];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    f.shows("context 130k passed --rotate-at 120k: the agent is asked to write its hand-off");
    f.shows("context 170k passed --rotate-hard 160k: the client is stopped");
    f.shows("complete after 3 iterations");
    // The request reached the running client with the next tool result.
    let asked = told(&m.main_requests()[1]);
    assert!(
        asked.contains("write your hand-off to .claude/ralph-handoff.md"),
        "{asked}"
    );
    let firsts = first_requests(&m);
    assert_eq!(firsts.len(), 3);
    let second = told(&firsts[1]);
    assert!(
        second.contains("HANDOFF-NOTE: the parser is half done"),
        "{second}"
    );
    assert!(second.contains("## State after iteration 1"), "{second}");
    assert!(
        second.contains("rotated: asked for a hand-off at 130k tokens"),
        "{second}"
    );
    let third = told(&firsts[2]);
    assert!(third.contains("HANDOFF-NOTE"), "{third}");
    assert!(third.contains("rotated: stopped at 170k tokens"), "{third}");
    p.done();
}

#[test]
fn usage_errors_start_nothing_and_help_gives_the_exit_codes() {
    let p = Project::new("usage");
    let run = |args: &[&str]| {
        let out = p.ralph(None).arg("run").args(args).output().unwrap();
        Finished::from_output(&out)
    };
    let f = run(&["x", "--max-wait", "soon"]);
    f.expect_code(2);
    f.shows("`--max-wait` takes a duration, e.g. 90s, 10m, 2h");
    let f = run(&["x", "--rotate-at", "100k", "--rotate-hard", "50k"]);
    f.expect_code(2);
    f.shows("--rotate-hard (50000) must be above --rotate-at (100000)");
    // Loop options are checked by the same start as /ralph-loop.
    let f = run(&["x", "--max-iterations", "many", "--claude", "/bin/false"]);
    f.expect_code(2);
    f.shows("`--max-iterations` takes a whole number");
    let f = run(&["--claude", "/bin/false"]);
    f.expect_code(2);
    f.shows("no prompt");
    // --sandbox=require where the sandbox cannot run: the packages named.
    let bare = p.root.join("bare-path");
    std::fs::create_dir_all(&bare).unwrap();
    for program in ["git", "sh"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .unwrap();
        let found = String::from_utf8_lossy(&found.stdout).trim().to_string();
        std::os::unix::fs::symlink(found, bare.join(program)).unwrap();
    }
    let out = p
        .ralph(None)
        .env("PATH", &bare)
        .args(["run", "x", "--sandbox=require", "--claude", "/bin/false"])
        .output()
        .unwrap();
    let f = Finished::from_output(&out);
    f.expect_code(2);
    f.shows("--sandbox=require: the agent's commands would not run in Claude Code's sandbox: the sandbox needs bubblewrap and socat (install: sudo apt-get install bubblewrap socat");
    assert!(!p.path(STATE_FILE).exists());
    assert!(!p.path(".claude/ralph-runs").exists());
    let help = run(&["--help"]);
    help.expect_code(0);
    help.shows("Exit codes:");
    help.shows("130  interrupted");
    // `-h` alone is the same help; inside a prompt it is a word.
    let short = run(&["-h"]);
    short.shows("Exit codes:");
    short.shows("--max-wait DURATION");
    // Every /ralph-loop option, from the one table, and a misspelt one named.
    help.shows("--fresh");
    help.shows("--review[=LIST]");
    let f = run(&["x", "--max-runtme", "2h"]);
    f.expect_code(2);
    f.shows("did you mean `--max-runtime`?");
    p.done();
}

#[test]
fn parallel_stories_run_at_once_in_worktrees_and_are_merged() {
    let Some(claude) = claude() else { return };
    let p = Project::new("parallel");
    p.write(
        "prd.json",
        r#"{"project": "demo", "userStories": [
  {"id": "US-1", "title": "One", "priority": 1, "passes": false, "verify": "grep -q one one.txt"},
  {"id": "US-2", "title": "Two", "priority": 2, "passes": false, "verify": "grep -q two two.txt"}
]}
"#,
    );
    for args in [
        &["add", "-A"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@l",
            "commit",
            "-qm",
            "start",
        ],
    ] {
        assert!(
            Command::new("git")
                .args(args)
                .current_dir(&p.dir)
                .status()
                .unwrap()
                .success()
        );
    }
    let worker = |story: &str, file: &str, text: &str| ralph_fake_model::Lane {
        name: story.into(),
        system_contains: "RALPH-PARALLEL-WORKER".into(),
        prompt_contains: format!("Work story {story}"),
        replies: vec![
            reply("", vec![bash(&format!("echo {text} > {file}"))]),
            Reply::text(format!("Done.\nSTORY DONE: {story}")),
        ],
    };
    let m = ralph_fake_model::FakeModel::start(ralph_fake_model::Script {
        lanes: vec![
            worker("US-1", "one.txt", "one"),
            worker("US-2", "two.txt", "two"),
        ],
        follow_dispatches: true,
        ..ralph_fake_model::Script::default()
    })
    .unwrap();
    let args = [
        "--prd-file",
        "prd.json",
        "--parallel",
        "2",
        "--max-iterations",
        "4",
    ];
    let f = finish(p.run_cmd(Some(&m), &claude, &args));
    f.expect_code(0);
    f.shows("2/2 stories pass");
    assert_eq!(p.read("one.txt"), "one\n");
    assert_eq!(p.read("two.txt"), "two\n");
    let decisions = p.decisions();
    assert!(
        decisions.contains(&"merge/story_merged".to_string()),
        "{decisions:?}"
    );
    assert_eq!(decisions.last().unwrap(), "end/all_stories_pass");
    assert!(!p.path(".claude/worktrees").exists());
    p.done();
}
