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
        score: Some("sh score.sh \"$X\"".into()),
        max_plateau: 8,
        last_fingerprint: Some("abc".into()),
        queue_seen: None,
        yielded: false,
        turn_key: Some("k1".into()),
        blocked: Some("story US-1 needs a human: \"key\" # x".into()),
        fresh: true,
        parallel: 3,
        sandbox: None,
        injected: Some(crate::reinject::Injected {
            story_id: "a, b".into(),
            count: 3,
        }),
        records: crate::records::RecordGens::default()
            .with(crate::records::LoopRecord::Verify, 4)
            .with(crate::records::LoopRecord::Scores, 6),
        watched: Some("9f0c1e2d3b4a5968".into()),
        api_error_pause: Some(Pause {
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
    state.api_error_pause = Some(Pause {
        reason: PauseReason::ServerError,
        at: "2026-12-01T00:00:00Z".into(),
        resets_at: Some("5pm".into()),
    });
    state.budgets.max_tokens = Some(500);
    let paused = updated_text(OFFICIAL, &state);
    assert!(
        paused.contains("\napi_error_pause: \"server_error\"\n"),
        "{paused}"
    );
    assert_eq!(LoopState::parse(&paused).unwrap(), state);
    let resumed = LoopState {
        api_error_pause: None,
        budgets: Budgets {
            tokens: 42,
            ..state.budgets.clone()
        },
        ..state
    };
    let text = updated_text(&paused, &resumed);
    assert!(text.contains("\napi_error_pause: null\n"), "{text}");
    assert!(text.contains("\ntokens_used: 42\n"), "{text}");
    assert_eq!(LoopState::parse(&text).unwrap(), resumed);
    // The official plugin's layout stays: its keys first, the body intact.
    assert!(text.starts_with("---\nactive: true\niteration: 1\n"));
    assert!(text.ends_with("---\n\nBuild it\n"));
}

#[test]
fn a_pause_written_under_its_old_key_is_read_and_cleared() {
    let old = OFFICIAL.replace(
        "---\n\nBuild it",
        "paused: \"rate_limit\"\npaused_at: \"2026-12-01T00:00:00Z\"\n---\n\nBuild it",
    );
    let state = LoopState::parse(&old).unwrap();
    let pause = state.api_error_pause.clone().expect("the old key is read");
    assert_eq!(pause.reason, PauseReason::RateLimit);
    assert_eq!(pause.at, "2026-12-01T00:00:00Z");
    // Saved while still paused: under the new key, the old one cleared.
    let kept = updated_text(&old, &state);
    assert!(
        kept.contains("\napi_error_pause: \"rate_limit\"\n"),
        "{kept}"
    );
    assert!(kept.contains("\npaused: null\n"), "{kept}");
    assert_eq!(LoopState::parse(&kept).unwrap(), state);
    // Resumed: no pause under either key.
    let resumed = LoopState {
        api_error_pause: None,
        ..state.clone()
    };
    for text in [
        updated_text(&old, &resumed),
        updated_text_from(&old, &state, &resumed),
    ] {
        assert_eq!(LoopState::parse(&text).unwrap(), resumed, "{text}");
    }
}

/// The Stop's save parses once: its line edits, when not read back, give
/// the text the read-back path gives, for the changes a turn makes.
#[test]
fn a_save_without_read_back_gives_what_the_read_back_gives() {
    let rendered = {
        let mut s = sample(3, 10, Some("DONE"));
        s.last_fingerprint = Some("abc".into());
        s.budgets.max_cost = Some(crate::budget::Usd(5_000_000));
        s.render()
    };
    let quoted_multi = OFFICIAL.replace(
        "completion_promise: \"DONE\"",
        "completion_promise: \"two\nlines: 1\"",
    );
    for text in [OFFICIAL, rendered.as_str(), quoted_multi.as_str()] {
        let Ok(old) = LoopState::parse(text) else {
            continue;
        };
        let mut turns = Vec::new();
        let mut next = old.clone();
        next.iteration += 1;
        next.turn_key = Some("p-1".into());
        turns.push(next.clone());
        next.stalls = 2;
        next.last_fingerprint = None;
        next.yielded = true;
        next.queue_seen = Some("2026-12-01T00:00:00Z".into());
        next.budgets.tokens = 7;
        next.budgets.cost = crate::budget::Usd(12);
        next.budgets.usage_seen = Some("msg_1".into());
        turns.push(next.clone());
        next.blocked = Some("US-1 fails".into());
        next.active = false;
        next.pins.insert("a.sh".into(), "sh a.sh".into());
        turns.push(next);
        for new in &turns {
            let fast = updated_text_from(text, &old, new);
            assert_eq!(fast, updated_text(text, new), "{text}\n{new:?}");
            assert_eq!(LoopState::parse(&fast).as_ref(), Ok(new));
        }
    }
    assert!(!edits_stand_alone(&quoted_multi));
    assert!(edits_stand_alone(OFFICIAL) && edits_stand_alone(&rendered));
}

/// `plain_lines` (the reading without the YAML parser) answers only where
/// it reads what the YAML parser reads, and answers for the states ralph
/// writes turn after turn.
#[test]
fn plain_lines_read_what_yaml_reads_or_leave_it_to_yaml() {
    let keys = [
        "iteration",
        "session_id",
        "a1_b",
        "true",
        "Iteration",
        "1st",
        "yes",
        "x y",
        "k",
    ];
    let values = [
        "true",
        "false",
        "null",
        "0",
        "7",
        "007",
        "-3",
        "12345678901234567890",
        "1e3",
        "0x1f",
        "\"\"",
        "\"text\"",
        "\"a: b # c\"",
        "\"quote \\\" inside\"",
        "\"tab\there\"",
        "\"é\"",
        "\"x\" ",
        "plain",
        "~",
        "Null",
        "True",
        "[1, 2]",
        "{a: 1}",
        "\"2026-11-29T23:00:00Z\"",
        "",
        ".inf",
        "+1",
        "1_000",
        "'single'",
    ];
    let yaml_of = |y: &str| serde_yaml_ng::from_str::<Value>(y).ok();
    let mut answered = 0;
    let mut n: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..10_000 {
        // A few lines from the lists above, picked by a fixed sequence.
        let mut yaml = String::new();
        for _ in 0..=(round % 4) {
            n ^= n << 13;
            n ^= n >> 7;
            n ^= n << 17;
            let key = keys[(n % keys.len() as u64) as usize];
            let value = values[((n >> 20) % values.len() as u64) as usize];
            yaml.push_str(&format!("{key}: {value}\n"));
        }
        if let Some(fields) = plain_lines(&yaml) {
            answered += 1;
            assert_eq!(yaml_of(&yaml), Some(Value::Mapping(fields)), "{yaml}");
        }
    }
    assert!(answered > 200, "only {answered} answered");
    // What a steady loop's Stop reads: every line plain.
    let state = LoopState::parse(OFFICIAL).unwrap();
    let text = state.render();
    let split = frontmatter::split(&text).unwrap();
    assert!(plain_lines(split.yaml).is_some(), "{}", split.yaml);
    assert_eq!(
        yaml_of(split.yaml),
        plain_lines(split.yaml).map(Value::Mapping)
    );
}
