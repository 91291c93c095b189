//! `fake-model SCRIPT.json [--log REQUESTS.jsonl]`: serves the script on
//! `127.0.0.1:0`, prints the port on stdout and runs until killed.
//!
//! The script is a [`Script`] as JSON:
//! `{"replies": [...], "lanes": [{"name", "system_contains", "replies"}]}`.

use ralph_fake_model::{FakeModel, Script};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut script_path = None;
    let mut log_path = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--log" if i + 1 < args.len() => {
                log_path = Some(args[i + 1].clone());
                i += 1;
            }
            "-h" | "--help" => {
                println!("usage: fake-model SCRIPT.json [--log REQUESTS.jsonl]");
                return ExitCode::SUCCESS;
            }
            other if script_path.is_none() => script_path = Some(other.to_string()),
            other => {
                eprintln!("fake-model: unexpected argument {other:?}");
                return ExitCode::from(2);
            }
        }
        i += 1;
    }
    let Some(script_path) = script_path else {
        eprintln!("usage: fake-model SCRIPT.json [--log REQUESTS.jsonl]");
        return ExitCode::from(2);
    };
    let script: Script = match std::fs::read_to_string(&script_path)
        .map_err(|e| e.to_string())
        .and_then(|s| serde_json::from_str(&s).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-model: cannot read script {script_path}: {e}");
            return ExitCode::from(2);
        }
    };
    let log = match log_path.map(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .map_err(|e| format!("{p}: {e}"))
    }) {
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => {
            eprintln!("fake-model: cannot open log {e}");
            return ExitCode::from(2);
        }
        None => None,
    };
    let model = match FakeModel::start_with_log(script, log) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("fake-model: cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", model.port());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
