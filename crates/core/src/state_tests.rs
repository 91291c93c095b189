//! Tests of `state`: the official format, round trips, line edits.
use super::*;

const OFFICIAL: &str = "---\nactive: true\niteration: 1\nsession_id: \nmax_iterations: 0\ncompletion_promise: \"DONE\"\nstarted_at: \"2026-01-01T00:00:00Z\"\n---\n\nBuild it\n";

#[test]
fn reads_official_plugin_file() {
    let s = LoopState::parse(OFFICIAL).unwrap();
    assert!(s.active);
    assert_eq!(s.iteration, 1);
    assert_eq!(s.session_id, "");
    assert_eq!(s.max_iterations, 0);
    assert_eq!(s.completion_promise.as_deref(), Some("DONE"));
    assert_eq!(s.prompt, "Build it\n");
}

#[test]
fn round_trips_awkward_prompt_and_promise() {
    let state = LoopState {
        active: true,
        iteration: 1,
        session_id: "abc".into(),
        max_iterations: 5,
        completion_promise: Some("ALL \"DONE\": yes # no".into()),
        started_at: Some("2026-11-29T00:00:00Z".into()),
        prd_file: Some("prd.json".into()),
        story_ids: vec!["US-1".into(), "a, b".into()],
        story_checks: [
            ("US-1".to_string(), "test \"$X\" # {x}: y".to_string()),
            ("a, b".to_string(), "make".to_string()),
        ]
        .into(),
        pins: [
            (
                "tests/check.sh".to_string(),
                "sh tests/check.sh".to_string(),
            ),
            ("tests/a b.py".to_string(), "--pin tests/**".to_string()),
        ]
        .into(),
        max_story_attempts: 5,
        verify: Some("cargo test -- --quiet".into()),
        notify: None,
        verify_timeout: 60,
        max_stalls: 3,
        stalls: 1,
        last_fingerprint: Some("abc".into()),
        queue_seen: None,
        yielded: false,
        turn_key: Some("k1".into()),
        blocked: Some("story US-1 needs a human: \"key\" # x".into()),
        fresh: true,
        parallel: 3,
        paused: Some(Pause {
            reason: PauseReason::RateLimit,
            at: "2026-12-01T00:00:00Z".into(),
            resets_at: None,
        }),
        budgets: Budgets {
            max_tokens: Some(1000),
            tokens: 12,
            max_runtime_secs: Some(5400),
            max_cost: Some(Usd(2_500_000)),
            cost: Usd(1234),
            model: Some("claude-opus-5-5".into()),
            usage_seen: Some("msg_1".into()),
        },
        review: crate::review::ReviewConfig {
            reviewers: vec!["acceptance".into(), "security".into()],
            command: Some("sh \"review.sh\" --x".into()),
            max_rounds: 2,
            timeout_secs: 60,
            base: Some("0123abcd".into()),
        },
        prompt: "say \"hi\" `id` $(touch x) $HOME\n---\niteration: 99\n\n".into(),
    };
    let text = state.render();
    assert_eq!(LoopState::parse(&text).unwrap(), state);
    let next = LoopState {
        iteration: 2,
        ..state.clone()
    };
    let bumped = updated_text(&text, &next);
    assert_eq!(LoopState::parse(&bumped).unwrap(), next);
}

#[test]
fn corrupt_fields_are_named() {
    let e = LoopState::parse("---\niteration: abc\n---\n\nx").unwrap_err();
    assert_eq!(e.field(), "iteration");
    assert!(e.to_string().contains("abc"), "{e}");
    let e = LoopState::parse("---\nmax_iterations: 1\n---\n\nx").unwrap_err();
    assert_eq!(e, StateError::Missing { field: "iteration" });
    let e = LoopState::parse("---\niteration: 1\n---\n\n  \n").unwrap_err();
    assert_eq!(e, StateError::EmptyPrompt);
    let e = LoopState::parse("---\niteration: [1\n---\n\nx").unwrap_err();
    assert_eq!(e.field(), "frontmatter");
    let e = LoopState::parse("---\niteration: -1\n---\n\nx").unwrap_err();
    assert_eq!(e.field(), "iteration");
}

#[test]
fn update_keeps_unknown_lines_but_never_edits_inside_a_scalar() {
    let text = "---\n# mine\niteration: 1\ncustom: x\n---\n\niteration: 1\n";
    let state = LoopState::parse(text).unwrap();
    let next = LoopState {
        iteration: 2,
        ..state
    };
    let out = updated_text(text, &next);
    assert!(
        out.starts_with("---\n# mine\niteration: 2\ncustom: x\n"),
        "{out}"
    );
    assert!(out.ends_with("\n---\n\niteration: 1\n"));

    // Found by the fuzzer: `iteration:` inside a multi-line quoted scalar.
    let tricky = "---\nsession_id: \"a\niteration: 1\n\"\niteration: 1\nmax_iterations: 3\n---\n\nBuild it\n";
    let state = LoopState::parse(tricky).unwrap();
    let next = LoopState {
        iteration: 2,
        ..state.clone()
    };
    let out = updated_text(tricky, &next);
    assert_eq!(LoopState::parse(&out).unwrap(), next);
    assert_eq!(next.session_id, state.session_id);
}

#[test]
fn null_promise_forms() {
    for fm in [
        "completion_promise: null",
        "completion_promise: \"null\"",
        "",
    ] {
        let s = LoopState::parse(&format!("---\niteration: 1\n{fm}\n---\n\nx")).unwrap();
        assert_eq!(s.completion_promise, None, "{fm}");
    }
}

#[test]
fn a_pause_is_cleared_and_budgets_are_kept_by_line_edits() {
    let mut state = LoopState::parse(OFFICIAL).unwrap();
    state.paused = Some(Pause {
        reason: PauseReason::ServerError,
        at: "2026-12-01T00:00:00Z".into(),
        resets_at: Some("5pm".into()),
    });
    state.budgets.max_tokens = Some(500);
    let paused = updated_text(OFFICIAL, &state);
    assert!(paused.contains("\npaused: \"server_error\"\n"), "{paused}");
    assert_eq!(LoopState::parse(&paused).unwrap(), state);
    let resumed = LoopState {
        paused: None,
        budgets: Budgets {
            tokens: 42,
            ..state.budgets.clone()
        },
        ..state
    };
    let text = updated_text(&paused, &resumed);
    assert!(text.contains("\npaused: null\n"), "{text}");
    assert!(text.contains("\ntokens_used: 42\n"), "{text}");
    assert_eq!(LoopState::parse(&text).unwrap(), resumed);
    // The official plugin's layout stays: its keys first, the body intact.
    assert!(text.starts_with("---\nactive: true\niteration: 1\n"));
    assert!(text.ends_with("---\n\nBuild it\n"));
}
