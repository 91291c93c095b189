use super::*;
use crate::state::DEFAULT_MAX_STORY_ATTEMPTS;
use crate::verify::{CheckResult, VerifyLog};

fn state(iteration: u64, max: u64, promise: Option<&str>) -> LoopState {
    LoopState {
        active: true,
        iteration,
        session_id: "s".into(),
        max_iterations: max,
        completion_promise: promise.map(str::to_string),
        started_at: None,
        prd_file: None,
        story_ids: vec![],
        max_story_attempts: DEFAULT_MAX_STORY_ATTEMPTS,
        verify: None,
        verify_timeout: 300,
        max_stalls: 3,
        stalls: 0,
        last_fingerprint: None,
        queue_seen: None,
        yielded: false,
        prompt: "Fix the bug\n---\niteration: 7\n".into(),
    }
}

fn prd_state(iteration: u64, ids: &[&str]) -> LoopState {
    LoopState {
        prd_file: Some("prd.json".into()),
        story_ids: ids.iter().map(|s| s.to_string()).collect(),
        prompt: DEFAULT_PRD_PROMPT.into(),
        ..state(iteration, 20, Some("RALPH-COMPLETE"))
    }
}

fn cx<'a>(state: &'a LoopState, said: Option<&'a str>) -> StopContext<'a> {
    StopContext {
        state,
        assistant_text: said,
        prd: None,
        blocker: None,
        last_injected: None,
        verify_log: None,
        loop_check: None,
        stalls: 0,
    }
}

const THREE: &str = r#"{"userStories":[
  {"id":"US-1","title":"Schema","priority":1,"passes":true,"acceptanceCriteria":["table exists"]},
  {"id":"US-2","title":"API","priority":2,"passes":false,"depends_on":["US-1"],"acceptanceCriteria":["GET works"]},
  {"id":"US-3","title":"UI","priority":1,"passes":false,"depends_on":["US-2"]}]}"#;

fn prd(json: &str) -> Result<Prd, PrdReadError> {
    Ok(Prd::parse(json)?)
}

#[test]
fn plain_block_feeds_prompt_verbatim_and_counts() {
    let s = state(1, 3, Some("DONE"));
    match decide(&cx(&s, Some("working on it"))) {
        Decision::Continue {
            code,
            next_iteration,
            reason,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::Continue);
            assert_eq!(next_iteration, 2);
            assert!(reason.starts_with(s.prompt.trim_end()), "{reason}");
            assert!(!reason.contains("\n\n\n"), "{reason}");
            assert!(reason.contains("iteration 2/3"), "{reason}");
            assert!(
                system_message.contains("Ralph iteration 2/3"),
                "{system_message}"
            );
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn promise_completes_even_on_the_last_turn() {
    let s = state(3, 3, Some("ALL DONE"));
    let d = decide(&cx(&s, Some("Done.\n<promise>\n ALL\n  DONE </promise>")));
    assert_eq!(d.code(), Code::Complete);
    if let Decision::End {
        system_message,
        iterations,
        ..
    } = d
    {
        assert_eq!(iterations, 3);
        assert!(system_message.contains("after 3 iterations"));
    }
}

#[test]
fn bare_promise_is_not_completion_and_cap_ends() {
    let s = state(2, 3, Some("DONE"));
    assert_eq!(decide(&cx(&s, Some("DONE"))).code(), Code::Continue);
    let s = state(3, 3, Some("DONE"));
    let d = decide(&cx(&s, Some("DONE")));
    assert_eq!(d.code(), Code::MaxIterations);
    if let Decision::End { system_message, .. } = d {
        assert!(
            system_message.contains("cap (3) after 3 iterations"),
            "{system_message}"
        );
    }
}

#[test]
fn mismatched_tag_is_explained_to_the_model() {
    let s = state(1, 0, Some("DONE"));
    match decide(&cx(&s, Some("<promise>almost</promise>"))) {
        Decision::Continue { reason, .. } => assert!(reason.contains("did not match")),
        d => panic!("{d:?}"),
    }
}

#[test]
fn unlimited_loop_has_no_cap_and_says_so() {
    let s = state(500, 0, None);
    match decide(&cx(&s, None)) {
        Decision::Continue {
            reason,
            next_iteration,
            ..
        } => {
            assert_eq!(next_iteration, 501);
            assert!(reason.contains("cancel-ralph"));
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn inactive_state_ends_as_cancelled() {
    let mut s = state(4, 10, None);
    s.active = false;
    assert_eq!(decide(&cx(&s, None)).code(), Code::Cancelled);
}

#[test]
fn prd_feeds_next_story_with_progress_and_counter() {
    let s = prd_state(1, &["US-1", "US-2", "US-3"]);
    let p = prd(THREE);
    let c = StopContext {
        prd: Some(&p),
        ..cx(&s, Some("ok"))
    };
    match decide(&c) {
        Decision::Continue {
            code,
            reason,
            story,
            injected,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::Story);
            assert_eq!(story.as_deref(), Some("US-2"));
            assert!(reason.contains("story US-2 of prd.json: API"), "{reason}");
            assert!(reason.contains("- GET works"));
            assert!(reason.contains("1/3 stories pass"));
            assert!(reason.contains("\"passes\": true"));
            assert!(reason.contains("progress.txt"));
            assert!(!reason.contains("Loop instructions"));
            assert_eq!(
                injected,
                Some(Injected {
                    story_id: "US-2".into(),
                    count: 1
                })
            );
            assert!(system_message.contains("story US-2"));
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn prd_refuses_early_promise_and_completes_when_all_pass() {
    let s = prd_state(2, &["US-1", "US-2", "US-3"]);
    let p = prd(THREE);
    let c = StopContext {
        prd: Some(&p),
        ..cx(&s, Some("<promise>RALPH-COMPLETE</promise>"))
    };
    match decide(&c) {
        Decision::Continue { code, reason, .. } => {
            assert_eq!(code, Code::PromiseRefused);
            assert!(reason.starts_with("Completion refused"), "{reason}");
            assert!(reason.contains("US-2, US-3"));
        }
        d => panic!("{d:?}"),
    }
    let all = prd(&THREE.replace("\"passes\":false", "\"passes\":true"));
    let c = StopContext {
        prd: Some(&all),
        ..cx(&s, None)
    };
    assert_eq!(decide(&c).code(), Code::AllStoriesPass);
}

#[test]
fn prd_all_pass_beats_the_cap() {
    let mut s = prd_state(20, &["US-1"]);
    s.max_iterations = 20;
    let all = prd(r#"{"stories":[{"id":"US-1","passes":true}]}"#);
    let c = StopContext {
        prd: Some(&all),
        ..cx(&s, None)
    };
    assert_eq!(decide(&c).code(), Code::AllStoriesPass);
}

#[test]
fn prd_deadlock_names_stories() {
    let s = prd_state(3, &["a", "b"]);
    let p = prd(r#"{"stories":[{"id":"a","depends_on":["b"]},{"id":"b","depends_on":["a"]}]}"#);
    let c = StopContext {
        prd: Some(&p),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::End {
            code,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::Deadlock);
            assert!(
                system_message.contains("a waits on b; b waits on a"),
                "{system_message}"
            );
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn vanished_story_counts_as_failing() {
    let s = prd_state(3, &["US-1", "US-9"]);
    let p = prd(r#"{"stories":[{"id":"US-1","passes":true}]}"#);
    let c = StopContext {
        prd: Some(&p),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue {
            code,
            reason,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::StoriesVanished);
            assert!(reason.contains("US-9"));
            assert!(system_message.contains("US-9"));
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn blocker_halts_until_its_story_passes() {
    let s = prd_state(2, &["US-1", "US-2", "US-3"]);
    let p = prd(THREE);
    let b = Blocker {
        story_id: "US-2".into(),
        summary: "Need creds.".into(),
    };
    let c = StopContext {
        prd: Some(&p),
        blocker: Some(&b),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::End {
            code,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::Blocked);
            assert!(
                system_message.contains("US-2 is blocked")
                    && system_message.contains("Need creds.")
            );
        }
        d => panic!("{d:?}"),
    }
    let done = Blocker {
        story_id: "US-1".into(),
        summary: "old".into(),
    };
    let c = StopContext {
        prd: Some(&p),
        blocker: Some(&done),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue { remove_blocker, .. } => assert!(remove_blocker),
        d => panic!("{d:?}"),
    }
}

#[test]
fn reinjection_escalates_then_stops() {
    let s = prd_state(4, &["US-1", "US-2", "US-3"]);
    let p = prd(THREE);
    let twice = Injected {
        story_id: "US-2".into(),
        count: 2,
    };
    let c = StopContext {
        prd: Some(&p),
        last_injected: Some(&twice),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue {
            reason, injected, ..
        } => {
            assert!(reason.contains("attempt 3 of 5"), "{reason}");
            assert_eq!(injected.unwrap().count, 3);
        }
        d => panic!("{d:?}"),
    }
    let five = Injected {
        story_id: "US-2".into(),
        count: 5,
    };
    let c = StopContext {
        prd: Some(&p),
        last_injected: Some(&five),
        ..cx(&s, None)
    };
    assert_eq!(decide(&c).code(), Code::StoryStuck);
}

#[test]
fn invalid_prd_asks_for_repair() {
    let s = prd_state(2, &["US-1"]);
    let bad: Result<Prd, PrdReadError> = Err(crate::prd::PrdError::NotJson("EOF".into()).into());
    let c = StopContext {
        prd: Some(&bad),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue { code, reason, .. } => {
            assert_eq!(code, Code::PrdInvalid);
            assert!(reason.contains("Restore prd.json"));
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn user_instructions_are_kept_in_prd_mode() {
    let mut s = prd_state(1, &["US-1", "US-2", "US-3"]);
    s.prompt = "Use pnpm, never npm.\n".into();
    let p = prd(THREE);
    let c = StopContext {
        prd: Some(&p),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue { reason, .. } => {
            assert!(reason.contains("## Loop instructions\nUse pnpm, never npm."))
        }
        d => panic!("{d:?}"),
    }
}

fn check(cmd: &str, exit: Option<i32>, timed_out: bool, out: &str) -> CheckResult {
    CheckResult {
        command: cmd.into(),
        exit,
        timed_out,
        output_tail: out.into(),
        fingerprint: Some("f".into()),
        time: "t".into(),
        duration_ms: 5,
    }
}

#[test]
fn verified_promise_completes_only_when_the_check_passes() {
    let mut s = state(2, 10, Some("DONE"));
    s.verify = Some("cargo test".into());
    let failed = check("cargo test", Some(101), false, "test foo ... FAILED");
    let c = StopContext {
        loop_check: Some(&failed),
        ..cx(&s, Some("<promise>DONE</promise>"))
    };
    match decide(&c) {
        Decision::Continue {
            code,
            reason,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::VerifyFailed);
            assert!(
                reason.contains("Completion refused") && reason.contains("exit 101"),
                "{reason}"
            );
            assert!(reason.contains("test foo ... FAILED"));
            assert!(
                system_message.contains("check failed (exit 101)"),
                "{system_message}"
            );
        }
        d => panic!("{d:?}"),
    }
    let slow = check("cargo test", None, true, "");
    let c = StopContext {
        loop_check: Some(&slow),
        ..cx(&s, Some("<promise>DONE</promise>"))
    };
    match decide(&c) {
        Decision::Continue { reason, .. } => {
            assert!(reason.contains("timed out after 300 s"), "{reason}")
        }
        d => panic!("{d:?}"),
    }
    let ok = check("cargo test", Some(0), false, "ok");
    let c = StopContext {
        loop_check: Some(&ok),
        ..cx(&s, Some("<promise>DONE</promise>"))
    };
    match decide(&c) {
        Decision::End {
            code,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::Complete);
            assert!(system_message.contains("verified (`cargo test` exited 0)"));
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn story_with_failing_check_is_fed_again_with_its_output() {
    let s = prd_state(3, &["A", "B"]);
    let p = prd(
        r#"{"stories":[{"id":"A","passes":true,"verify":"make a"},{"id":"B","passes":false,"depends_on":["A"]}]}"#,
    );
    let mut log = VerifyLog::default();
    log.stories
        .insert("A".into(), check("make a", Some(2), false, "a.c:3: error"));
    let c = StopContext {
        prd: Some(&p),
        verify_log: Some(&log),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue {
            code,
            reason,
            story,
            system_message,
            ..
        } => {
            assert_eq!(code, Code::VerifyFailed);
            assert_eq!(story.as_deref(), Some("A"));
            assert!(
                reason.contains("claim that A passes was refused")
                    && reason.contains("a.c:3: error"),
                "{reason}"
            );
            assert!(reason.contains("0/2 stories pass"));
            assert!(system_message.contains("check failed (exit 2)"));
        }
        d => panic!("{d:?}"),
    }
    log.stories
        .insert("A".into(), check("make a", Some(0), false, ""));
    let c = StopContext {
        prd: Some(&p),
        verify_log: Some(&log),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue { story, .. } => assert_eq!(story.as_deref(), Some("B")),
        d => panic!("{d:?}"),
    }
}

#[test]
fn prd_final_check_gates_completion() {
    let mut s = prd_state(3, &["A"]);
    s.verify = Some("make check".into());
    let p = prd(r#"{"stories":[{"id":"A","passes":true}]}"#);
    let bad = check("make check", Some(1), false, "boom");
    let c = StopContext {
        prd: Some(&p),
        loop_check: Some(&bad),
        ..cx(&s, None)
    };
    match decide(&c) {
        Decision::Continue { code, reason, .. } => {
            assert_eq!(code, Code::VerifyFailed);
            assert!(reason.contains("final check failed") && reason.contains("boom"));
        }
        d => panic!("{d:?}"),
    }
    let good = check("make check", Some(0), false, "");
    let c = StopContext {
        prd: Some(&p),
        loop_check: Some(&good),
        ..cx(&s, None)
    };
    assert_eq!(decide(&c).code(), Code::AllStoriesPass);
}

#[test]
fn no_progress_breaker_fires_at_n_but_a_true_promise_still_completes() {
    let s = state(5, 0, Some("DONE"));
    assert_eq!(
        decide(&StopContext {
            stalls: 2,
            ..cx(&s, Some("x"))
        })
        .code(),
        Code::Continue
    );
    let d = decide(&StopContext {
        stalls: 3,
        ..cx(&s, Some("x"))
    });
    assert_eq!(d.code(), Code::Stalled);
    if let Decision::End { system_message, .. } = d {
        assert!(
            system_message.contains("did not change for 3 iterations"),
            "{system_message}"
        );
    }
    assert_eq!(
        decide(&StopContext {
            stalls: 3,
            ..cx(&s, Some("<promise>DONE</promise>"))
        })
        .code(),
        Code::Complete
    );
    // On the turn the cap is reached too, the cap is the reason given.
    let capped = state(5, 5, Some("DONE"));
    assert_eq!(
        decide(&StopContext {
            stalls: 3,
            ..cx(&capped, Some("x"))
        })
        .code(),
        Code::MaxIterations
    );
    let mut off = state(5, 0, None);
    off.max_stalls = 0;
    assert_eq!(
        decide(&StopContext {
            stalls: 99,
            ..cx(&off, None)
        })
        .code(),
        Code::Continue
    );
}
