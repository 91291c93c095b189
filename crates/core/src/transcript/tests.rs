//! Tests of the walk over a transcript's last turn. Does I/O: files written here.
#[test]
fn a_subagent_task_is_its_transcripts_first_line() {
    let session = std::path::Path::new("/h/.claude/projects/p/abc.jsonl");
    assert_eq!(
        subagent_transcript(session, "a1").unwrap(),
        std::path::PathBuf::from("/h/.claude/projects/p/abc/subagents/agent-a1.jsonl")
    );
    let dir = std::env::temp_dir().join(format!("ralph-subagent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("agent-a1.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"Work story US-1 of /p/prd.json.\"}}\n{\"type\":\"assistant\"}\n",
    )
    .unwrap();
    assert_eq!(
        task(&file).as_deref(),
        Some("Work story US-1 of /p/prd.json.")
    );
    assert_eq!(task(&dir.join("none.jsonl")), None);
    let _ = std::fs::remove_dir_all(dir);
}

use super::*;
use std::io::Write;
use std::time::Duration;

/// Read with nothing awaited.
fn now(path: &Path) -> Written {
    written(Some(path), Awaited::Nothing, Duration::ZERO)
}
fn read(path: &Path, max_bytes: u64) -> Turn {
    now(path).last_turn(max_bytes, None).unwrap()
}
fn read_after(path: &Path, counted: Option<CountedThrough>) -> Turn {
    now(path).last_turn(DEFAULT_MAX_BYTES, counted).unwrap()
}
fn model(path: &Path) -> Option<String> {
    now(path).last_model(1 << 20)
}
fn task(path: &Path) -> Option<String> {
    now(path).task()
}

fn assistant(text: &str) -> String {
    serde_json::json!({"type":"assistant","isSidechain":false,
        "message":{"role":"assistant","content":[{"type":"text","text":text}]}})
    .to_string()
}
fn tool_use() -> String {
    serde_json::json!({"type":"assistant","message":{"role":"assistant",
        "content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}})
    .to_string()
}
fn tool_result() -> String {
    serde_json::json!({"type":"user","message":{"role":"user",
        "content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}})
    .to_string()
}
fn prompt(text: &str) -> String {
    serde_json::json!({"type":"user","message":{"role":"user","content":text}}).to_string()
}

fn write(lines: &[String], pad: usize) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "ralph-transcript-{}-{}.jsonl",
        std::process::id(),
        lines.len() * 1000 + pad
    ));
    let mut f = File::create(&path).unwrap();
    for _ in 0..pad {
        writeln!(
            f,
            "{{\"type\":\"api-request-blob\",\"data\":\"{}\"}}",
            "x".repeat(900)
        )
        .unwrap();
    }
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    path
}

/// A Stop hook's `additionalContext` as 2.1.328 writes it.
fn stop_context(text: &str, event: &str) -> String {
    serde_json::json!({"parentUuid":"p","isSidechain":false,"type":"attachment",
        "attachment":{"type":"hook_additional_context","content":[text],
            "hookName":event,"toolUseID":"u","hookEvent":event}})
    .to_string()
}

#[test]
fn a_stop_context_starts_a_turn_as_a_feedback_line_does() {
    let lines = [
        prompt("task"),
        assistant("<promise>DONE</promise> refused by the check"),
        stop_context("the prompt again", "Stop"),
        assistant("working"),
        tool_use(),
        tool_result(),
        // Another hook's context, or a subagent's, starts nothing.
        stop_context("a worker's", "SubagentStop"),
        stop_context("\"type\":\"user\"", "PostToolUse"),
        assistant("final words"),
    ];
    let path = write(&lines, 20);
    let turn = read(&path, DEFAULT_MAX_BYTES);
    assert_eq!(turn.text.as_deref(), Some("working\nfinal words"));
    assert_eq!(turn.tools, ["Bash"]);
    assert!(turn.complete);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn collects_the_whole_last_turn_across_tool_calls() {
    let lines = [
        prompt("old"),
        assistant("<promise>DONE</promise> from an old turn"),
        prompt("feed"),
        assistant("working; <promise>DONE</promise>"),
        tool_use(),
        tool_result(),
        assistant("final words"),
        serde_json::json!({"type":"attachment"}).to_string(),
    ];
    let path = write(&lines, 300);
    let text = read(&path, DEFAULT_MAX_BYTES).text.unwrap();
    assert_eq!(text, "working; <promise>DONE</promise>\nfinal words");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn reports_tools_and_reads_a_huge_last_line_in_linear_time() {
    let big = "y".repeat(6 << 20);
    let lines = [
        prompt("p"),
        assistant("a"),
        tool_use(),
        tool_result(),
        assistant(&big),
    ];
    let path = write(&lines, 10);
    let t0 = std::time::Instant::now();
    let turn = read(&path, 16 << 20);
    assert!(t0.elapsed().as_millis() < 2000, "{:?}", t0.elapsed());
    assert_eq!(turn.tools, ["Bash"]);
    assert!(turn.complete);
    assert_eq!(turn.text.unwrap().len(), 2 + big.len());
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_file_without_a_trailing_newline_or_turn_start_is_read_whole() {
    let path = std::env::temp_dir().join(format!("ralph-transcript-nonl-{}", std::process::id()));
    std::fs::write(&path, assistant("only")).unwrap();
    let turn = read(&path, DEFAULT_MAX_BYTES);
    assert_eq!(turn.text.as_deref(), Some("only"));
    assert!(turn.complete);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn collects_queue_operations_of_the_turn_and_of_the_stop_before_it() {
    let q = |op: &str, content: &str| {
        serde_json::json!({"type":"queue-operation","operation":op,
            "timestamp":"t","sessionId":"s","content":content})
        .to_string()
    };
    let lines = [
        prompt("old"),
        q("enqueue", "seen at an earlier stop"),
        assistant("old turn"),
        // Typed while the last Stop hook ran: before this turn's feed.
        q("enqueue", "/cancel-ralph"),
        prompt("feed"),
        q("enqueue", "a question"),
        assistant("working"),
        tool_use(),
        tool_result(),
    ];
    let path = write(&lines, 3);
    let turn = read(&path, DEFAULT_MAX_BYTES);
    let texts: Vec<_> = turn
        .queue
        .iter()
        .filter_map(|o| o.content.clone())
        .collect();
    assert_eq!(texts, ["/cancel-ralph", "a question"]);
    assert_eq!(turn.text.as_deref(), Some("working"));
    assert!(turn.complete);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn one_usage_per_message_and_the_last_uuid() {
    let line = |uuid: &str, id: &str, block: serde_json::Value, out: u64| {
        serde_json::json!({"type":"assistant","uuid":uuid,"message":{"id":id,
            "model":"claude-opus-5-5","role":"assistant","content":[block],
            "usage":{"input_tokens":100,"output_tokens":out,"cache_read_input_tokens":5}}})
        .to_string()
    };
    let text = |t: &str| serde_json::json!({"type":"text","text":t});
    let tool = serde_json::json!({"type":"tool_use","id":"t","name":"Bash","input":{}});
    let lines = [
        prompt("old"),
        line("u0", "m0", text("an older turn"), 9),
        prompt("feed"),
        // One message written as two lines, the later one more final.
        line("u1", "m1", text("working"), 1),
        line("u2", "m1", tool, 30),
        tool_result(),
        line("u3", "m2", text("done"), 7),
    ];
    let path = write(&lines, 2);
    let turn = read(&path, DEFAULT_MAX_BYTES);
    assert_eq!(turn.last_uuid.as_deref(), Some("u3"));
    let ids: Vec<_> = turn.usage.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2"]);
    assert_eq!(turn.usage[0].usage.output, 30);
    assert_eq!(turn.usage[0].usage.cache_read, 5);
    assert_eq!(turn.usage[1].model.as_deref(), Some("claude-opus-5-5"));
    // The last Stop counted up to an older message (m-1): m0, which the
    // transcript had not caught up with then, counts now.
    let through = |id| Some(CountedThrough(id));
    let caught_up = read_after(&path, through(Some("m-1")));
    let ids: Vec<_> = caught_up.usage.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m0", "m1", "m2"]);
    let nothing_yet = read_after(&path, through(None));
    assert_eq!(nothing_yet.usage.len(), 3, "the whole turn before");
    let counted = read_after(&path, through(Some("m0")));
    assert_eq!(counted.usage.len(), 2, "m0 was counted at its own Stop");
    assert_eq!(counted.queue, turn.queue);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn the_last_line_of_the_turn_before_while_this_turns_lag() {
    let said = serde_json::json!({"type":"assistant","uuid":"a1",
        "message":{"id":"m1","content":[{"type":"text","text":"before"}]}});
    let lines = [prompt("p"), said.to_string(), prompt("feed")];
    let path = write(&lines, 4);
    let turn = read(&path, DEFAULT_MAX_BYTES);
    assert_eq!(turn.last_uuid.as_deref(), Some("a1"));
    assert_eq!(turn.text, None);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn the_latest_model_named() {
    let said = |model: &str| {
        serde_json::json!({"type":"assistant","message":{"model":model,"content":[]}}).to_string()
    };
    let lines = [
        prompt("p"),
        said("claude-opus-5-5"),
        said("claude-sonnet-4-5"),
        prompt("q"),
    ];
    let path = write(&lines, 1);
    assert_eq!(model(&path).as_deref(), Some("claude-sonnet-4-5"));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(model(&path), None);
}

#[test]
fn sidechains_skipped_and_bound_respected() {
    let side = serde_json::json!({"type":"assistant","isSidechain":true,
        "message":{"content":[{"type":"text","text":"<promise>DONE</promise>"}]}})
    .to_string();
    let lines = [prompt("p"), assistant("main"), side];
    let path = write(&lines, 0);
    assert_eq!(read(&path, 1 << 20).text.as_deref(), Some("main"));
    // A bound smaller than the last lines sees nothing whole.
    assert_eq!(read(&path, 10).text, None);
    std::fs::remove_file(path).unwrap();
}

/// The typed reading of a line gives what the `Value` reading gives,
/// wherever it answers, over lines of the client's shapes and of odd
/// ones; and it answers for the lines a turn is made of.
#[test]
fn the_typed_reading_agrees_with_the_value_reading() {
    let usage = r#"{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}"#;
    let contents = [
        r#"[{"type":"text","text":"Done. <promise>X</promise>"}]"#.to_string(),
        r#"[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"Edit","input":{"x":[1,{"y":null}]}},{"type":"text","text":"b\n\"q\""}]"#.to_string(),
        r#"[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}]}]"#.to_string(),
        r#"[{"type":"thinking","thinking":"hm"},{"type":"tool_use","name":"Bash"}]"#.to_string(),
        r#"[{"type":"text"},{"type":"text","text":null},{"type":"tool_use","name":7}]"#.to_string(),
        r#"["a string block"]"#.to_string(),
        r#""a prompt""#.to_string(),
        "null".to_string(),
        "[]".to_string(),
    ];
    let messages = |content: &str| {
        [
            format!(
                r#"{{"role":"assistant","id":"msg_1","model":"claude-x","content":{content},"usage":{usage}}}"#
            ),
            format!(r#"{{"role":"assistant","id":"msg_1","content":{content},"usage":null}}"#),
            format!(r#"{{"role":"assistant","id":"msg_1","content":{content}}}"#),
            format!(
                r#"{{"role":"assistant","id":7,"content":{content},"usage":{{"input_tokens":1.5}}}}"#
            ),
            format!(r#"{{"role":"user","content":{content}}}"#),
            format!(r#"{{"content":{content},"usage":{{"output_tokens":null}},"id":"m"}}"#),
        ]
    };
    let mut answered = 0;
    let mut lines = 0;
    for content in &contents {
        for message in messages(content) {
            for kind in [r#""assistant""#, r#""user""#, "null", "3"] {
                for extra in [
                    "",
                    r#","isSidechain":true"#,
                    r#","isSidechain":"no""#,
                    r#","uuid":"u-1""#,
                    r#","uuid":5"#,
                    r#","type":"user""#,
                    r#","parentUuid":null,"cwd":"/p","version":"2.1.328""#,
                ] {
                    let line = format!(r#"{{"type":{kind},"message":{message}{extra}}}"#);
                    lines += 1;
                    let value = classify_value(line.as_bytes());
                    if let Some(typed) = serde_json::from_slice::<typed::Line>(line.as_bytes())
                        .ok()
                        .and_then(typed::Line::classify)
                    {
                        answered += 1;
                        assert_eq!(typed, value, "{line}");
                    }
                    assert_eq!(classify(line.as_bytes()), value, "{line}");
                }
            }
        }
    }
    assert!(answered * 5 > lines, "{answered} of {lines} answered");
    for line in [assistant("hi"), tool_use(), tool_result()] {
        assert!(
            serde_json::from_slice::<typed::Line>(line.as_bytes())
                .ok()
                .and_then(typed::Line::classify)
                .is_some(),
            "{line}"
        );
    }
}

/// The `goal_status` lines as 2.1.328 writes them (scenario 117's
/// transcript): set, unmet, cleared, met, impossible.
#[test]
fn the_active_goal_is_the_newest_status_neither_met_nor_failed() {
    let dir = std::env::temp_dir().join(format!("ralph-goal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.jsonl");
    let status = |fields: &str| {
        format!(
            "{{\"type\":\"attachment\",\"attachment\":{{\"type\":\"goal_status\",{fields}}},\"isSidechain\":false}}\n"
        )
    };
    let user = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\n";
    let goal = |lines: &[String]| {
        std::fs::write(&file, lines.concat()).unwrap();
        now(&file).active_goal(1 << 20)
    };
    let set = status(r#""met":false,"sentinel":true,"condition":"tests pass""#);
    let unmet = status(r#""met":false,"condition":"tests pass","reason":"2 fail""#);
    let cleared = status(r#""met":true,"sentinel":true,"condition":"tests pass""#);
    let met = status(r#""met":true,"condition":"tests pass","reason":"ok","iterations":2"#);
    let failed = status(r#""met":false,"failed":true,"condition":"tests pass","reason":"no""#);
    assert_eq!(goal(&[user.into()]), None);
    assert_eq!(
        goal(&[set.clone(), user.into()]).as_deref(),
        Some("tests pass")
    );
    assert_eq!(
        goal(&[set.clone(), unmet.clone()]).as_deref(),
        Some("tests pass")
    );
    assert_eq!(goal(&[set.clone(), unmet.clone(), cleared]), None);
    assert_eq!(goal(&[set.clone(), met]), None);
    assert_eq!(goal(&[set, unmet, failed]), None);
    let _ = std::fs::remove_dir_all(dir);
}
