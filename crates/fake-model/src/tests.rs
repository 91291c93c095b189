//! The server over real loopback connections.

use super::*;
use std::io::Read;

/// Sends one request on a fresh connection and returns the raw response.
fn post(port: u16, path: &str, body: &Value) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The body of a raw response.
fn body_of(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn script() -> Script {
    Script {
        replies: vec![
            Reply {
                text: Some("working".into()),
                blocks: vec![Block::Bash {
                    command: "echo hi".into(),
                    description: "say hi".into(),
                }],
                ..Reply::default()
            },
            Reply::text("<promise>DONE</promise>"),
        ],
        ..Script::default()
    }
}

fn main_request() -> Value {
    json!({"stream": true, "system": "You are Claude Code", "tools": [{"name": "Bash"}],
           "messages": [{"role": "user", "content": "go"}]})
}

#[test]
fn serves_script_in_order_and_side_requests_do_not_consume_it() {
    let model = FakeModel::start(script()).unwrap();
    let main = main_request();
    let first = post(model.port(), "/v1/messages?beta=true", &main);
    assert!(first.starts_with("HTTP/1.1 200"));
    assert!(first.contains("\"stop_reason\":\"tool_use\""));
    assert!(first.contains("input_json_delta"));
    assert!(first.contains(r#"\"command\":\"echo hi\""#));
    assert!(first.contains("\"id\":\"msg_fake_1\""));

    let side = post(
        model.port(),
        "/v1/messages?beta=true",
        &json!({"stream": false, "messages": [{"role": "user", "content": "title?"}]}),
    );
    assert!(side.contains(SIDE_TEXT));
    let count = post(
        model.port(),
        "/v1/messages/count_tokens?beta=true",
        &json!({}),
    );
    assert!(count.contains("input_tokens"));

    let second = post(model.port(), "/v1/messages?beta=true", &main);
    assert!(second.contains("<promise>DONE</promise>"));
    assert!(second.contains("\"stop_reason\":\"end_turn\""));
    let third = post(model.port(), "/v1/messages?beta=true", &main);
    assert!(third.contains(EXHAUSTED_TEXT));
    let other = post(model.port(), "/v1/other", &json!({}));
    assert!(other.starts_with("HTTP/1.1 404 Not Found"));

    assert_eq!(model.replies_used(), 2);
    assert_eq!(model.replies_total(), 2);
    assert_eq!(model.exhausted_requests(), 1);
    let kinds: Vec<_> = model.requests().iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        vec![
            RequestKind::Main,
            RequestKind::Side,
            RequestKind::CountTokens,
            RequestKind::Main,
            RequestKind::Exhausted,
            RequestKind::Other,
        ]
    );
    assert_eq!(model.main_requests().len(), 3);
    assert_eq!(model.main_requests()[0].last_user_text(), "go");
    assert_eq!(model.requests()[5].status, 404);
}

fn laned_script() -> Script {
    Script {
        replies: vec![Reply::text("main 1"), Reply::text("main 2")],
        lanes: vec![
            Lane {
                name: "worker".into(),
                system_contains: "You are a fresh worker".into(),
                prompt_contains: String::new(),
                replies: vec![Reply::text("worker 1"), Reply::text("worker 2")],
            },
            Lane {
                name: "reviewer".into(),
                system_contains: "Review the diff".into(),
                prompt_contains: String::new(),
                replies: vec![Reply::text("reviewer 1")],
            },
            Lane {
                name: "shadowed".into(),
                system_contains: "worker".into(),
                prompt_contains: String::new(),
                replies: vec![Reply::text("never")],
            },
        ],
        ..Script::default()
    }
}

#[test]
fn parallel_workers_get_their_own_lane_by_their_task() {
    let lane = |name: &str, story: &str| Lane {
        name: name.into(),
        system_contains: "WORKER".into(),
        prompt_contains: format!("story {story}"),
        replies: vec![
            Reply::text(format!("{name} 1")),
            Reply::text(format!("{name} 2")),
        ],
    };
    let model = FakeModel::start(Script {
        replies: vec![Reply::text("main 1")],
        lanes: vec![lane("a", "A"), lane("b", "B")],
        ..Script::default()
    })
    .unwrap();
    let ask = |task: &str| {
        post(
            model.port(),
            "/v1/messages",
            &json!({"stream": true, "tools": [{"name": "Bash"}], "system": "WORKER",
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                                               {"type": "text", "text": task}]},
                                 {"role": "assistant", "content": "ok"},
                                 {"role": "user", "content": "go on"}]}),
        )
    };
    // Interleaved as two workers running at once would be.
    assert!(ask("Work story B of prd.json").contains("b 1"));
    assert!(ask("Work story A of prd.json").contains("a 1"));
    assert!(ask("Work story B of prd.json").contains("b 2"));
    assert!(ask("Work story A of prd.json").contains("a 2"));
    assert!(post(model.port(), "/v1/messages", &main_request()).contains("main 1"));
}

#[test]
fn lanes_are_picked_by_system_prompt_in_any_form() {
    let model = FakeModel::start(laned_script()).unwrap();
    let port = model.port();
    let tools = json!([{"name": "Bash"}]);
    // Top-level system as a string.
    let r = post(
        port,
        "/v1/messages",
        &json!({"stream": true, "tools": tools, "system": "You are a fresh worker. Do story 2.",
                "messages": [{"role": "user", "content": "w"}]}),
    );
    assert!(
        r.contains("worker 1") && r.contains("msg_fake_worker_1"),
        "{r}"
    );
    // The main thread in between.
    assert!(post(port, "/v1/messages", &main_request()).contains("main 1"));
    // Top-level system as a list of text blocks.
    let r = post(
        port,
        "/v1/messages",
        &json!({"stream": true, "tools": tools,
                "system": [{"type": "text", "text": "x-billing-header"},
                           {"type": "text", "text": "You are a fresh worker."}],
                "messages": [{"role": "user", "content": "w2"}]}),
    );
    assert!(r.contains("worker 2"), "{r}");
    // A `role: system` message, and no tools at all (a reviewer).
    let r = post(
        port,
        "/v1/messages",
        &json!({"stream": false, "system": "You are Claude Code",
                "messages": [{"role": "system", "content": [{"type": "text", "text": "Review the diff below."}]},
                             {"role": "user", "content": "diff"}]}),
    );
    assert!(r.contains("reviewer 1"), "{r}");
    // Lanes run out on their own.
    let r = post(
        port,
        "/v1/messages",
        &json!({"stream": true, "tools": tools, "system": "You are a fresh worker.", "messages": []}),
    );
    assert!(r.contains(EXHAUSTED_TEXT));
    assert!(post(port, "/v1/messages", &main_request()).contains("main 2"));

    assert_eq!(model.replies_used(), 2);
    assert_eq!(model.replies_total(), 2);
    assert_eq!(model.replies_used_in(Some("worker")), 2);
    assert_eq!(model.replies_total_in(Some("worker")), 2);
    assert_eq!(model.replies_used_in(Some("reviewer")), 1);
    assert_eq!(model.replies_used_in(Some("shadowed")), 0);
    assert_eq!(model.replies_total_in(Some("nope")), 0);
    assert_eq!(model.exhausted_requests(), 1);
    assert_eq!(model.main_requests().len(), 2);
    assert!(model.main_requests().iter().all(|r| r.lane.is_none()));
    let worker = model.requests_in(Some("worker"));
    assert_eq!(worker.len(), 3);
    assert_eq!(worker[1].reply_index, Some(1));
    assert_eq!(worker[2].kind, RequestKind::Exhausted);
    assert_eq!(
        model.requests_in(Some("reviewer"))[0].last_user_text(),
        "diff"
    );
}

#[test]
fn an_error_reply_sends_its_status_headers_and_body_and_uses_its_place() {
    let limit = ApiError::status(429)
        .header("retry-after", "2")
        .header("anthropic-ratelimit-unified-status", "rejected")
        .header("anthropic-ratelimit-unified-reset", "1900000000");
    let overloaded = ApiError {
        status: 529,
        message: Some("Overloaded".into()),
        ..ApiError::default()
    };
    let s = Script {
        replies: vec![
            Reply::error(limit),
            Reply::error(overloaded),
            Reply::text("made it"),
        ],
        ..Script::default()
    };
    let model = FakeModel::start(s).unwrap();
    let first = post(model.port(), "/v1/messages", &main_request());
    assert!(
        first.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
        "{first}"
    );
    assert!(first.contains("\r\nContent-Type: application/json\r\n"));
    assert!(first.contains("\r\nretry-after: 2\r\n"));
    assert!(first.contains("\r\nanthropic-ratelimit-unified-status: rejected\r\n"));
    assert!(first.contains("\r\nanthropic-ratelimit-unified-reset: 1900000000\r\n"));
    let body: Value = serde_json::from_str(body_of(&first)).unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert!(body["error"]["message"].is_string());

    let second = post(model.port(), "/v1/messages", &main_request());
    assert!(
        second.starts_with("HTTP/1.1 529 Overloaded\r\n"),
        "{second}"
    );
    let body: Value = serde_json::from_str(body_of(&second)).unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let third = post(model.port(), "/v1/messages", &main_request());
    assert!(third.starts_with("HTTP/1.1 200 OK\r\n") && third.contains("made it"));
    assert_eq!(model.replies_used(), 3);
    let statuses: Vec<u16> = model.main_requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 529, 200]);
}

#[test]
fn scripted_usage_reaches_the_stream() {
    let s = Script {
        replies: vec![Reply {
            usage: Some(Usage {
                input_tokens: 123_456,
                output_tokens: 789,
                ..Usage::default()
            }),
            ..Reply::text("counted")
        }],
        ..Script::default()
    };
    let model = FakeModel::start(s).unwrap();
    let r = post(model.port(), "/v1/messages", &main_request());
    assert!(r.contains("\r\nContent-Type: text/event-stream\r\n"));
    assert!(r.contains("\"input_tokens\":123456"));
    assert!(r.contains("\"usage\":{\"output_tokens\":789}"));
}

#[test]
fn a_slow_reply_does_not_hold_up_another_connection() {
    let s = Script {
        replies: vec![
            Reply {
                delay_ms: Some(2_000),
                ..Reply::text("slow")
            },
            Reply::text("fast"),
        ],
        ..Script::default()
    };
    let model = FakeModel::start(s).unwrap();
    let port = model.port();
    let t0 = Instant::now();
    let slow = thread::spawn(move || post(port, "/v1/messages", &main_request()));
    while model.requests().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "slow request never arrived"
        );
        thread::sleep(Duration::from_millis(5));
    }
    let t1 = Instant::now();
    let fast = post(port, "/v1/messages", &main_request());
    assert!(fast.contains("fast"));
    assert!(
        t1.elapsed() < Duration::from_millis(1_000),
        "the fast reply waited {:?}",
        t1.elapsed()
    );
    let slow = slow.join().unwrap();
    assert!(slow.contains("slow"));
    assert!(t0.elapsed() >= Duration::from_millis(2_000));
    let at: Vec<u64> = model.requests().iter().map(|r| r.at_ms).collect();
    assert!(at[0] <= at[1] && at[1] < at[0] + 1_000, "{at:?}");
}

#[test]
fn keep_alive_connections_serve_several_requests() {
    let model = FakeModel::start(script()).unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", model.port())).unwrap();
    let body = main_request().to_string();
    for _ in 0..2 {
        write!(
            s,
            "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    }
    // Both answers arrive on the one connection; then close ours.
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let t0 = Instant::now();
    while !seen.contains("<promise>DONE</promise>") && t0.elapsed() < Duration::from_secs(5) {
        let n = s.read(&mut buf).unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("echo hi") && seen.contains("<promise>DONE</promise>"));
    assert_eq!(model.replies_used(), 2);
}
