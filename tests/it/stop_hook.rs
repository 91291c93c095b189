//! The Stop hook's numbered rules, through the real binary with JSON on stdin.

use crate::support::*;

const PROMPT: &str =
    "Fix the \"parser\" with `cargo test` and $(rm -rf /) $HOME\n---\niteration: 42\nend\n";

#[test]
fn rule1_no_state_prints_nothing_and_touches_nothing() {
    let p = Project::new("nostate");
    assert_eq!(p.stop("s1", Some("hi")), None);
    assert!(
        !p.path(".claude").exists(),
        "the fast path must create nothing"
    );
}

#[test]
fn rule1_another_sessions_loop_is_left_alone() {
    let p = Project::new("other");
    p.loop_state("\"owner\"", 2, 10, Some("DONE"), "", PROMPT);
    let before = p.state().unwrap();
    assert_eq!(p.stop("intruder", Some("<promise>DONE</promise>")), None);
    assert_eq!(p.state().unwrap(), before);
    assert!(p.log().is_empty());
}

#[test]
fn official_format_is_claimed_and_prompt_lines_survive() {
    let p = Project::new("official");
    p.loop_state("", 1, 5, Some("DONE"), "", PROMPT);
    let out = p.stop("s1", Some("working"));
    let r = reason(out.as_ref());
    assert!(r.starts_with(PROMPT.trim_end()), "{r}");
    assert!(r.contains("iteration 2/5"));
    assert!(message(out.as_ref()).contains("Ralph iteration 2/5"));
    let state = p.state().unwrap();
    assert!(state.contains("iteration: 2\n"));
    assert!(state.contains("session_id: \"s1\"\n"));
    // The prompt's own `iteration: 42` line is body, never rewritten.
    assert!(state.ends_with(PROMPT), "{state}");
    let log = p.log();
    assert_eq!(log[0]["decision"], "claim");
    assert_eq!(log[1]["decision"], "block");
    assert_eq!(log[1]["iteration"], 2);
    assert_eq!(log[1]["session"], "s1");
    // Now owned: another session is ignored.
    assert_eq!(p.stop("s2", Some("x")), None);
}

#[test]
fn rule2_corrupt_state_stops_names_field_and_keeps_file() {
    for (tag, fm, body, field) in [
        ("iter", "iteration: abc\n", "x", "iteration"),
        ("yaml", "iteration: [1\n", "x", "frontmatter"),
        (
            "max",
            "iteration: 1\nmax_iterations: lots\n",
            "x",
            "max_iterations",
        ),
        ("prompt", "iteration: 1\n", "   \n", "prompt"),
        ("nofm", "", "", "frontmatter"),
    ] {
        let p = Project::new(tag);
        let text = if fm.is_empty() {
            "just text\n".to_string()
        } else {
            format!("---\n{fm}---\n\n{body}")
        };
        p.write(STATE_FILE, &text);
        let out = p.stop("s1", Some("hi"));
        assert!(!is_block(out.as_ref()), "{tag}: never loop on garbage");
        let msg = message(out.as_ref());
        assert!(msg.contains(STATE_FILE), "{tag}: {msg}");
        assert!(
            msg.contains(field),
            "{tag}: message must name `{field}`: {msg}"
        );
        assert!(p.state().is_none(), "{tag}");
        let kept: Vec<String> = p
            .files_in(".claude")
            .into_iter()
            .filter(|f| f.contains(".corrupt-"))
            .collect();
        assert_eq!(kept.len(), 1, "{tag}: {kept:?}");
        assert_eq!(
            p.read(&format!(".claude/{}", kept[0])).unwrap(),
            text,
            "{tag}: kept verbatim"
        );
        assert_eq!(p.log().last().unwrap()["reason"], "corrupt");
    }
}

#[test]
fn rule3_promise_in_prose_across_lines_completes() {
    let p = Project::new("prose");
    p.loop_state("\"s1\"", 2, 10, Some("ALL TESTS PASS"), "", PROMPT);
    let out = p.stop(
        "s1",
        Some("I ran everything.\n<promise>ALL\n   TESTS\n PASS</promise>\nThanks."),
    );
    assert!(!is_block(out.as_ref()));
    assert!(
        message(out.as_ref()).contains("complete after 2 iterations"),
        "{}",
        message(out.as_ref())
    );
    assert!(p.state().is_none());
    assert_eq!(p.log().last().unwrap()["reason"], "complete");
}

#[test]
fn rule3_bare_promise_without_tag_is_not_completion() {
    let p = Project::new("bare");
    p.loop_state("\"s1\"", 1, 10, Some("DONE"), "", PROMPT);
    assert!(is_block(p.stop("s1", Some("DONE")).as_ref()));
    assert!(p.state().unwrap().contains("iteration: 2\n"));
}

#[test]
fn rule3_transcript_fallback_finds_promise_in_earlier_block_of_the_turn() {
    let p = Project::new("transcript");
    p.loop_state("\"s1\"", 1, 10, Some("DONE"), "", PROMPT);
    let lines = [
        r#"{"type":"user","message":{"role":"user","content":"Stop hook feedback:\nold"}}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"<promise>DONE</promise> I think"}]}}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"final words"}]}}"#,
        r#"{"type":"attachment","attachment":{"type":"hook_system_message"}}"#,
    ];
    p.write_transcript(&(lines.join("\n") + "\n"));
    // The final message lacks the promise; the turn's earlier block has it.
    let out = p.stop("s1", Some("final words"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    // And with no last_assistant_message at all (older clients).
    p.loop_state("\"s1\"", 1, 10, Some("DONE"), "", PROMPT);
    assert!(!is_block(p.stop("s1", None).as_ref()));
}

#[test]
fn rule3_missing_transcript_still_uses_last_assistant_message() {
    let p = Project::new("notranscript");
    p.loop_state("\"s1\"", 1, 10, Some("DONE"), "", PROMPT);
    assert!(!p.transcript().exists());
    assert!(!is_block(
        p.stop("s1", Some("<promise>DONE</promise>")).as_ref()
    ));
}

#[test]
fn rule4_cap_gives_exactly_n_turns_and_promise_wins_on_the_last() {
    let p = Project::new("cap");
    p.loop_state("\"s1\"", 1, 3, Some("DONE"), "", PROMPT);
    assert!(reason(p.stop("s1", Some("a")).as_ref()).contains("iteration 2/3"));
    assert!(reason(p.stop("s1", Some("b")).as_ref()).contains("iteration 3/3"));
    let out = p.stop("s1", Some("c"));
    assert!(!is_block(out.as_ref()));
    assert!(message(out.as_ref()).contains("iteration cap (3) after 3 iterations"));
    assert_eq!(p.log().last().unwrap()["reason"], "max_iterations");

    p.loop_state("\"s1\"", 3, 3, Some("DONE"), "", PROMPT);
    let out = p.stop("s1", Some("<promise>DONE</promise>"));
    assert_eq!(p.log().last().unwrap()["reason"], "complete", "{out:?}");
}

#[test]
fn cancelled_flag_ends_the_loop() {
    let p = Project::new("inactive");
    p.write(
        STATE_FILE,
        "---\nactive: false\niteration: 4\nsession_id: s1\n---\n\nx\n",
    );
    let out = p.stop("s1", Some("x"));
    assert!(message(out.as_ref()).contains("cancelled"));
    assert!(p.state().is_none());
}

#[test]
fn bad_stdin_fails_open_with_a_message_and_no_change() {
    let p = Project::new("stdin");
    p.loop_state("\"s1\"", 1, 10, None, "", PROMPT);
    let before = p.state().unwrap();
    for input in ["", "not json", "[1,2]", "{\"session_id\":"] {
        let (code, out) = run_raw(STOP, &[], &p.root, input.as_bytes());
        assert_eq!(code, 0);
        let v: serde_json::Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{input:?}: {out}"));
        assert!(v.get("decision").is_none(), "{input:?} must not block");
        assert!(
            v["systemMessage"].as_str().unwrap().contains("ralph:"),
            "{input:?}"
        );
        assert_eq!(p.state().unwrap(), before, "{input:?}");
    }
}

#[test]
fn concurrent_stops_never_lose_an_increment() {
    let p = Project::new("concurrent");
    p.loop_state("\"s1\"", 1, 0, None, "", PROMPT);
    let root = p.root.clone();
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                // Sixteen turns, each its own words (the same words twice
                // with no transcript would be one turn delivered twice).
                let said = format!("turn {i}");
                let input =
                    serde_json::json!({"session_id":"s1","cwd":root,"last_assistant_message":said});
                run_json(STOP, &[], &root, &input.to_string())
            })
        })
        .collect();
    let blocks = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|out| is_block(out.as_ref()))
        .count();
    assert_eq!(blocks, 16);
    assert!(p.state().unwrap().contains("iteration: 17\n"));
    let mut iterations: Vec<u64> = p
        .log()
        .iter()
        .map(|e| e["iteration"].as_u64().unwrap())
        .collect();
    iterations.sort_unstable();
    assert_eq!(iterations, (2..=17).collect::<Vec<_>>());
}

const PRD: &str = r#"{"project":"Shop","userStories":[
 {"id":"US-001","title":"Schema","description":"Add the table","acceptanceCriteria":["migration runs"],"priority":1,"passes":false},
 {"id":"US-002","title":"API","priority":1,"passes":false,"dependsOn":["US-001"]},
 {"id":"US-003","title":"Docs","priority":3,"passes":false}
]}"#;

fn prd_loop(p: &Project, iteration: u64, prd: &str) {
    p.write("prd.json", prd);
    p.loop_state(
        "\"s1\"",
        iteration,
        20,
        Some("RALPH-COMPLETE"),
        "prd_file: \"prd.json\"\nstory_ids: [\"US-001\", \"US-002\", \"US-003\"]\n",
        "Work through the PRD.\n",
    );
}

fn pass(prd: &str, id: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(prd).unwrap();
    for s in v["userStories"].as_array_mut().unwrap() {
        if s["id"] == id {
            s["passes"] = true.into();
        }
    }
    v.to_string()
}

#[test]
fn prd_stories_in_dependency_and_priority_order_then_complete() {
    let p = Project::new("prd");
    prd_loop(&p, 1, PRD);
    let r = reason(p.stop("s1", Some("start")).as_ref());
    assert!(r.contains("story US-001 of prd.json: Schema"), "{r}");
    assert!(r.contains("0/3 stories pass") && r.contains("- migration runs"));
    let prd1 = pass(PRD, "US-001");
    p.write("prd.json", &prd1);
    // US-002 (priority 1, dependency met) before US-003 (priority 3).
    let r = reason(
        p.stop("s1", Some("<promise>RALPH-COMPLETE</promise>"))
            .as_ref(),
    );
    assert!(r.starts_with("Completion refused"), "{r}");
    assert!(r.contains("story US-002"));
    assert_eq!(p.log().last().unwrap()["reason"], "promise_refused");
    let prd2 = pass(&prd1, "US-002");
    p.write("prd.json", &prd2);
    assert!(reason(p.stop("s1", None).as_ref()).contains("story US-003"));
    p.write("prd.json", pass(&prd2, "US-003"));
    let out = p.stop("s1", Some("done"));
    assert!(
        message(out.as_ref()).contains("all 3 stories in prd.json pass"),
        "{out:?}"
    );
    assert!(p.state().is_none());
    assert!(!p.loop_paths().last_injected.exists());
}

#[test]
fn prd_deadlock_made_mid_loop_is_fed_for_repair() {
    let p = Project::new("deadlock");
    prd_loop(
        &p,
        2,
        r#"{"userStories":[{"id":"US-001","dependsOn":["US-002"]},{"id":"US-002","dependsOn":["US-001"]},{"id":"US-003","passes":true}]}"#,
    );
    let out = p.stop("s1", None);
    assert!(is_block(out.as_ref()), "the loop goes on: {out:?}");
    assert!(reason(out.as_ref()).contains("Restore them"));
    let msg = message(out.as_ref());
    assert!(msg.contains("US-001 waits on US-002"), "{msg}");
    assert_eq!(p.log().last().unwrap()["reason"], "deadlock");
}

/// Issue 17: a blocker naming a failing story pauses a PRD loop: each Stop
/// lets the session stop, the loop stays, and only the user resumes it (the
/// agent's `ralph-setup resume` is refused).
#[test]
fn prd_blocker_pauses_until_the_user_resumes() {
    let p = Project::new("blocker");
    prd_loop(&p, 2, PRD);
    p.write(
        ".ralph-blocker.md",
        "---\nstory_id: US-001\n---\n\nThe database password is missing.\n",
    );
    let out = p.stop("s1", None);
    assert!(!is_block(out.as_ref()), "{out:?}");
    let msg = message(out.as_ref());
    assert!(
        msg.contains("paused") && msg.contains("US-001") && msg.contains("password is missing"),
        "{msg}"
    );
    assert!(
        p.state().unwrap().contains("\nblocked: "),
        "the loop stays, paused"
    );
    assert_eq!(p.log().last().unwrap()["decision"], "pause");
    // The user talks to Claude meanwhile: each Stop lets the session stop.
    assert!(!is_block(p.stop("s1", Some("What password?")).as_ref()));
    let (_, status) = p.setup(&["status"]);
    assert!(
        status.contains("Ralph loop paused") && status.contains("/ralph-resume"),
        "{status}"
    );

    // The agent cannot resume it.
    let out = command(RALPH, &p, &["resume"])
        .env("AI_AGENT", "claude-code_2-1-328_agent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(p.state().unwrap().contains("\nblocked: "));

    // The user types /ralph-resume: the prompt goes on, the blocker is gone.
    let out = p.prompt("s1", "/ralph-resume");
    assert!(
        out.as_ref().is_some_and(|v| v.get("decision").is_none()),
        "the prompt goes on: {out:?}"
    );
    assert!(message(out.as_ref()).contains("Resumed"), "{out:?}");
    assert!(!p.path(".ralph-blocker.md").exists());
    assert!(
        !p.state().unwrap().contains("\nblocked: \""),
        "{:?}",
        p.state()
    );
    assert_eq!(p.log().last().unwrap()["decision"], "resume");
    assert!(is_block(p.stop("s1", None).as_ref()), "fed again");
    // Nothing to resume now.
    let out = p.prompt("s1", "/ralph-resume");
    assert_eq!(out.as_ref().unwrap()["decision"], "block", "{out:?}");
}

#[test]
fn prd_blocker_of_a_passing_story_is_removed() {
    let p = Project::new("blocker-done");
    prd_loop(&p, 2, &pass(PRD, "US-001"));
    p.write(".ralph-blocker.md", "---\nstory_id: US-001\n---\n\nold\n");
    assert!(is_block(p.stop("s1", None).as_ref()));
    assert!(!p.path(".ralph-blocker.md").exists());
}

#[test]
fn a_blocker_in_plain_mode_is_ignored_and_the_agent_told() {
    let p = Project::with_claude_dir("blocker-plain");
    p.prompt("s1", "/ralph:ralph-loop Tidy up. --max-iterations 9");
    p.write(".ralph-blocker.md", "I want to stop.\n");
    let out = p.stop("s1", Some("stopping"));
    assert!(is_block(out.as_ref()), "the loop goes on: {out:?}");
    let r = reason(out.as_ref());
    assert!(r.starts_with("Ralph ignored .ralph-blocker.md"), "{r}");
    assert!(r.contains("Tidy up."), "{r}");
    assert!(!p.path(".ralph-blocker.md").exists());
}

#[test]
fn prd_vanished_story_counts_as_failing_and_user_is_told() {
    let p = Project::new("vanished");
    prd_loop(
        &p,
        2,
        r#"{"userStories":[{"id":"US-001","passes":true},{"id":"US-002","passes":true}]}"#,
    );
    let out = p.stop("s1", Some("<promise>RALPH-COMPLETE</promise>"));
    assert!(reason(out.as_ref()).contains("US-003"));
    assert!(message(out.as_ref()).contains("US-003"));
}

#[test]
fn prd_reinjection_escalates_then_stops() {
    let p = Project::new("reinject");
    prd_loop(&p, 2, PRD);
    let mut feeds = 0;
    let mut last = String::new();
    for _ in 0..10 {
        let out = p.stop("s1", None);
        if !is_block(out.as_ref()) {
            last = message(out.as_ref());
            break;
        }
        feeds += 1;
    }
    assert_eq!(
        feeds, 5,
        "a story is fed at most max_story_attempts times in a row"
    );
    assert!(last.contains("US-001 was fed 5 times"), "{last}");
    assert_eq!(p.log().last().unwrap()["reason"], "story_stuck");
}

#[test]
fn prd_reinjection_message_escalates() {
    let p = Project::new("escalate");
    prd_loop(&p, 2, PRD);
    let counter = p.loop_paths().last_injected;
    std::fs::create_dir_all(counter.parent().unwrap()).unwrap();
    // A loop from before the counter moved into the state: its file (no
    // seal line, no marker) is read once.
    let state = p.state().unwrap();
    let old_form: String = state
        .lines()
        .filter(|l| !l.starts_with("injected:"))
        .map(|l| format!("{l}\n"))
        .collect();
    // Written as a loop from before seals: no seal line, no seal beside it.
    let paths = p.loop_paths();
    std::fs::write(&paths.state, &old_form).unwrap();
    let _ = std::fs::remove_file(ralph_core::seal::seal_path(&paths.state));
    p.write(".claude/ralph-loop.local.md", &old_form);
    std::fs::write(&counter, "US-001 2\n").unwrap();
    assert!(reason(p.stop("s1", None).as_ref()).contains("attempt 3 of 5"));
    assert!(
        p.state().unwrap().contains("\ninjected: \"US-001 3\"\n"),
        "the counter is the state's from then on"
    );
    // The file rewritten by something other than ralph (an interpreter):
    // it is no longer read, the state counts.
    std::fs::write(&counter, "US-001 5\n").unwrap();
    let out = p.stop("s1", None);
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(reason(out.as_ref()).contains("attempt 4 of 5"), "{out:?}");
    std::fs::write(&counter, "US-001 1\n").unwrap();
    let out = p.stop("s1", None);
    assert!(reason(out.as_ref()).contains("attempt 5 of 5"), "{out:?}");
    assert!(p.state().is_some(), "the loop stays");
}

#[test]
fn prd_invalid_json_mid_loop_asks_for_repair() {
    let p = Project::new("prdbad");
    prd_loop(&p, 2, "{ not json");
    let r = reason(p.stop("s1", None).as_ref());
    assert!(r.contains("prd.json can no longer be read"), "{r}");
}

/// A transcript whose last turn has the user's queued messages in it, as the
/// interactive client writes them (`queue-operation` lines, measured on 2.1.328).
fn transcript_with_queue(p: &Project, queued: &[(&str, &str)]) {
    let mut lines = vec![
        serde_json::json!({"type":"user","message":{"role":"user","content":"feed"}}).to_string(),
    ];
    for (time, text) in queued {
        lines.push(
            serde_json::json!({"type":"queue-operation","operation":"enqueue",
                "timestamp":time,"sessionId":"s1","content":text})
            .to_string(),
        );
    }
    lines.push(
        serde_json::json!({"type":"assistant","message":{"role":"assistant",
            "content":[{"type":"text","text":"working"}]}})
        .to_string(),
    );
    p.write_transcript(&(lines.join("\n") + "\n"));
}

#[test]
fn queued_cancel_ends_the_loop_at_this_stop() {
    let p = Project::new("qcancel");
    p.loop_state("\"s1\"", 3, 10, Some("DONE"), "", PROMPT);
    transcript_with_queue(&p, &[("2026-01-01T00:00:01Z", "/ralph:cancel-ralph")]);
    let out = p.stop("s1", Some("working"));
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(
        message(out.as_ref())
            .contains("Cancelled the Ralph loop at iteration 3/10: you typed /ralph:cancel-ralph"),
        "{out:?}"
    );
    assert!(p.state().is_none());
    assert_eq!(p.log().last().unwrap()["decision"], "cancel");
    // The client then runs the queued command itself: it is told why there is nothing left.
    let out = p.prompt("s1", "/ralph:cancel-ralph").unwrap();
    assert!(
        reason(Some(out).as_ref()).contains("it was cancelled at iteration 3"),
        "the second cancel explains itself"
    );
}

#[test]
fn queued_message_lets_the_turn_end_and_the_loop_goes_on_after() {
    let p = Project::new("qyield");
    p.loop_state("\"s1\"", 2, 10, None, "", PROMPT);
    transcript_with_queue(&p, &[("2026-01-01T00:00:01Z", "what is 2+2?")]);
    let out = p.stop("s1", Some("working"));
    assert!(
        !is_block(out.as_ref()),
        "the turn ends so the client hands over the message"
    );
    assert!(
        message(out.as_ref()).contains("paused at iteration 2/10"),
        "{out:?}"
    );
    let state = p.state().expect("the loop is not cancelled");
    assert!(
        state.contains("iteration: 2\n"),
        "the iteration is not lost: {state}"
    );
    assert!(state.contains("yielded: true"), "{state}");
    assert_eq!(p.log().last().unwrap()["decision"], "yield");
    // The client dequeued the message and the model answered: the loop goes on.
    p.write_transcript([
            serde_json::json!({"type":"queue-operation","operation":"dequeue","timestamp":"2026-01-01T00:00:02Z"}).to_string(),
            serde_json::json!({"type":"user","message":{"role":"user","content":"what is 2+2?"}}).to_string(),
            serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"4"}]}}).to_string(),
        ]
        .join("\n"),
    );
    let out = p.stop("s1", Some("4"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(reason(out.as_ref()).contains("iteration 3/10"), "{out:?}");
    let state = p.state().unwrap();
    assert!(state.contains("yielded: false"), "{state}");
    assert!(
        state.contains("stalls: 0"),
        "the answer turn is not a stall: {state}"
    );
}

#[test]
fn queued_status_is_answered_once_and_the_loop_goes_on() {
    let p = Project::new("qstatus");
    p.loop_state("\"s1\"", 2, 10, None, "", PROMPT);
    transcript_with_queue(&p, &[("2026-01-01T00:00:01Z", "/ralph-status")]);
    let out = p.stop("s1", Some("working"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(
        message(out.as_ref()).contains("Ralph iteration 3/10"),
        "{out:?}"
    );
    assert!(
        message(out.as_ref()).contains("Ralph loop active"),
        "{out:?}"
    );
    assert!(
        message(out.as_ref()).contains("iteration: 3/10"),
        "status after the decision: {out:?}"
    );
    // Still queued at the next Stop (the client runs it when the loop ends): not answered twice.
    let out = p.stop("s1", Some("working"));
    assert!(is_block(out.as_ref()));
    assert!(
        !message(out.as_ref()).contains("Ralph loop active"),
        "{out:?}"
    );
}

/// The race behind scenario 19's rare failure, made deterministic: a turn
/// judged by its tools as an edit must still refresh the breaker's view of
/// the tree, or the next turn whose transcript lags (judged by the tree)
/// counts the earlier edit as its own progress.
#[test]
fn a_lagging_transcript_after_an_edit_is_still_a_stall() {
    let p = Project::new("lagging");
    p.git_init();
    p.loop_state("\"s1\"", 1, 10, None, "max_stalls: 3\n", "Task");
    let line = |v: serde_json::Value| v.to_string();
    let turn = |tool: &str, text: &str| {
        [
            line(serde_json::json!({"type":"user","message":{"role":"user","content":"feed"}})),
            line(
                serde_json::json!({"type":"assistant","message":{"role":"assistant",
                "content":[{"type":"tool_use","id":"t","name":tool,"input":{}}]}}),
            ),
            line(serde_json::json!({"type":"user","message":{"role":"user",
                "content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}})),
            line(
                serde_json::json!({"type":"assistant","message":{"role":"assistant",
                "content":[{"type":"text","text":text}]}}),
            ),
        ]
        .join("\n")
            + "\n"
    };
    // A Bash turn: judged by the tree, which becomes the baseline.
    p.write_transcript(turn("Bash", "ran"));
    assert!(is_block(p.stop("s1", Some("ran")).as_ref()));
    // An edit, judged by its tools.
    p.write("edited.txt", "new");
    p.write_transcript(turn("Write", "edited"));
    assert!(is_block(p.stop("s1", Some("edited")).as_ref()));
    assert!(p.state().unwrap().contains("stalls: 0\n"));
    // A talk-only turn the transcript has not caught up with: judged by the
    // tree, which has not changed since the edit: a stall.
    assert!(is_block(p.stop("s1", Some("just talking")).as_ref()));
    let state = p.state().unwrap();
    assert!(state.contains("stalls: 1\n"), "{state}");
}

/// With the guard's record, an edited turn is progress without a look at
/// the tree (no `git status`, whatever the repository's size): the
/// breaker's baseline, out of date after the edit, is dropped. The next
/// turn judged by the tree (Bash) sets a new one instead of taking the
/// edit for its own progress; from then on an unchanged tree is a stall.
#[test]
fn an_edit_the_guard_recorded_drops_the_baseline_instead_of_asking_git() {
    let p = Project::new("guarded-edit");
    p.git_init();
    p.loop_state("\"s1\"", 1, 10, None, "max_stalls: 3\n", "Task");
    let fingerprint = |p: &Project| {
        let state = p.state().unwrap();
        let line = state.lines().find(|l| l.starts_with("last_fingerprint:"));
        line.map(str::to_string)
    };
    // A Bash turn: judged by the tree, which becomes the baseline.
    p.guard_saw("s1", "Bash");
    assert!(is_block(p.stop("s1", Some("ran")).as_ref()));
    let baseline = fingerprint(&p).expect("a baseline");
    assert!(!baseline.contains("null"), "{baseline}");
    // An edit the guard recorded: progress, the baseline dropped.
    p.write("edited.txt", "new");
    p.guard_saw("s1", "Write");
    assert!(is_block(p.stop("s1", Some("edited")).as_ref()));
    let state = p.state().unwrap();
    assert!(state.contains("stalls: 0\n"), "{state}");
    assert_eq!(fingerprint(&p).as_deref(), Some("last_fingerprint: null"));
    // A Bash turn that changed nothing: no baseline to compare with, so it
    // sets one (not a stall); the next such turn is one.
    p.guard_saw("s1", "Bash");
    assert!(is_block(p.stop("s1", Some("ran again")).as_ref()));
    let state = p.state().unwrap();
    assert!(state.contains("stalls: 0\n"), "{state}");
    assert_ne!(fingerprint(&p).as_deref(), Some("last_fingerprint: null"));
    p.guard_saw("s1", "Bash");
    assert!(is_block(p.stop("s1", Some("and again")).as_ref()));
    let state = p.state().unwrap();
    assert!(state.contains("stalls: 1\n"), "{state}");
}

/// A client that continues a Stop on `additionalContext` (2.1.328 on, named
/// in the hook's `AI_AGENT`) is fed that way: it shows "Stop hook says: …"
/// instead of "Stop hook reported a problem". An older or unnamed client
/// gets the block, the only form it is known to continue on. The text is
/// the same either way (the prompt's bytes, then the footer), and so is the
/// counting.
#[test]
fn the_feed_form_follows_the_client() {
    use std::io::Write;
    let clients = [
        ("328", Some("claude-code_2-1-328_harness"), true),
        ("332", Some("claude-code_2-1-332_harness"), true),
        ("300", Some("claude-code_2-1-300_harness"), false),
        ("none", None, false),
    ];
    for (tag, agent, context) in clients {
        let p = Project::new(&format!("form-{tag}"));
        p.loop_state("", 1, 5, Some("DONE"), "", PROMPT);
        let input = serde_json::json!({
            "session_id": "s1", "transcript_path": p.transcript(), "cwd": p.cwd,
            "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "working",
        });
        let mut cmd = command(STOP, &p, &[]);
        match agent {
            Some(a) => cmd.env("AI_AGENT", a),
            None => cmd.env_remove("AI_AGENT"),
        };
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let fed = if context {
            assert!(v.get("decision").is_none(), "{tag}: {v}");
            assert_eq!(v["hookSpecificOutput"]["hookEventName"], "Stop", "{tag}");
            &v["hookSpecificOutput"]["additionalContext"]
        } else {
            assert_eq!(v["decision"], "block", "{tag}: {v}");
            &v["reason"]
        };
        let fed = fed.as_str().unwrap();
        assert!(fed.starts_with(PROMPT.trim_end()), "{tag}: {fed}");
        assert!(fed.contains("iteration 2/5"), "{tag}: {fed}");
        assert!(
            v["systemMessage"]
                .as_str()
                .unwrap()
                .contains("Ralph iteration 2/5")
        );
        assert!(p.state().unwrap().contains("iteration: 2\n"), "{tag}");
        assert_eq!(p.log().last().unwrap()["decision"], "block", "{tag}");
    }
}
