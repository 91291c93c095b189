//! The `fake-model` binary serves a JSON script with lanes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

fn post(port: u16, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The server process, ended when the test ends (passed or not).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_binary_serves_lanes_errors_and_logs_requests() {
    let dir = std::env::temp_dir().join(format!("fake-model-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    let log = dir.join("requests.jsonl");
    std::fs::write(
        &script,
        r#"{"replies": [{"error": {"status": 429, "headers": {"retry-after": 1}}}, {"text": "main"}],
            "lanes": [{"name": "reviewer", "system_contains": "You review", "replies": [{"text": "LGTM"}]}]}"#,
    )
    .unwrap();
    let mut child = Server(
        Command::new(env!("CARGO_BIN_EXE_fake-model"))
            .arg(&script)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().unwrap();

    let main =
        r#"{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}"#;
    let first = post(port, main);
    let review = post(port, r#"{"system":"You review diffs","messages":[]}"#);
    let second = post(port, main);
    drop(child);

    assert!(first.starts_with("HTTP/1.1 429") && first.contains("\r\nretry-after: 1\r\n"));
    assert!(review.starts_with("HTTP/1.1 200") && review.contains("LGTM"));
    assert!(second.contains("main"));
    let logged = std::fs::read_to_string(&log).unwrap();
    let lanes: Vec<serde_json::Value> = logged
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["lane"].clone())
        .collect();
    assert_eq!(
        lanes,
        vec![
            serde_json::Value::Null,
            serde_json::json!("reviewer"),
            serde_json::Value::Null
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
