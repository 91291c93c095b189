//! Whole-process timing of the release `ralph-guard`: spawn it N times, feed
//! the hook input on stdin, wait for it to exit, and print the medians.
//! What is measured is what Claude Code pays before every tool call.
//!
//!     cargo build --release --bin ralph-guard
//!     cargo bench -p ralph-policy --bench guard_process [-- RUNS]
//!
//! The binary is `$RALPH_GUARD_BIN`, else `$CARGO_TARGET_DIR/release/ralph-guard`,
//! else `target/release/ralph-guard` at the workspace root.
//!
//! To compare two builds on a busy machine, set `RALPH_GUARD_BIN_B` to the
//! other one: each scenario then runs both binaries, taking turns run by run,
//! so that load from elsewhere falls on both alike (rows marked [A] and [B]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn guard_binary() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("RALPH_GUARD_BIN") {
        return Ok(PathBuf::from(p));
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let p = target.join("release/ralph-guard");
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "{} not found: run `cargo build --release --bin ralph-guard` first (or set RALPH_GUARD_BIN)",
            p.display()
        ))
    }
}

/// A project directory for one scenario, removed at the end.
struct Project(PathBuf);

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn project(name: &str, loop_active: bool, policy: Option<&str>) -> std::io::Result<Project> {
    let root =
        std::env::temp_dir().join(format!("ralph-guard-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join(".git"))?;
    std::fs::create_dir_all(root.join(".claude"))?;
    if loop_active {
        std::fs::write(
            root.join(".claude/ralph-loop.local.md"),
            "---\niteration: 1\nprd_file: prd.json\n---\nwork\n",
        )?;
    }
    if let Some(p) = policy {
        std::fs::create_dir_all(root.join(".ralph"))?;
        std::fs::write(root.join(".ralph/command-policy"), p)?;
    }
    Ok(Project(root))
}

/// 100 rules: 40 rewrites, 40 denies, 20 protects, all live.
fn hundred_rule_policy() -> String {
    let mut s = String::from(
        "[gates]\nbasic | cargo test\nfull | cargo test --all-targets\nfinal | cargo test\n\n[rewrite]\n",
    );
    for i in 0..40 {
        s.push_str(&format!(
            "^tool{i} -w run (.+)$ | tool{i} \\1 | no workspace flag for tool{i}\n"
        ));
    }
    s.push_str("\n[deny]\n");
    for i in 0..40 {
        s.push_str(&format!(
            "danger{i} --force | danger{i} must not be forced in the loop\n"
        ));
    }
    s.push_str("\n[protect]\n");
    for i in 0..20 {
        s.push_str(&format!("pnpm format{i}:write\n"));
    }
    s
}

/// 24 commands chained with every operator, quotes, a substitution and redirects;
/// one of them is rewritten by the policy.
fn long_chain() -> String {
    let mut parts = Vec::new();
    for i in 0..6 {
        parts.push(format!(
            "cd crate{i} && cargo build --release 2>&1 | tail -n 20"
        ));
        parts.push(format!(
            "echo \"step {i}: $(date +%s)\" >> build.log || true"
        ));
    }
    parts.push("tool7 -w run build --verbose".to_string());
    parts.push("grep -rn 'TODO|FIXME' src; git status --short".to_string());
    parts.join(" && ")
}

fn input(cwd: &Path, command: &str) -> String {
    serde_json::json!({
        "session_id": "bench", "transcript_path": "/nonexistent", "cwd": cwd.display().to_string(),
        "permission_mode": "bypassPermissions", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command, "description": "bench"},
        "tool_use_id": "toolu_bench"
    })
    .to_string()
}

/// Spawn `bin` once with `stdin`; returns the wall time and stdout.
fn spawn_once(bin: &Path, stdin: &str) -> Result<(Duration, String), String> {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .env_remove("CLAUDE_PROJECT_DIR")
        // What the client gives a hook (measured, docs/client-measurements.md):
        // the guard's ancestry walk (`ralph_core::ancestry`) stops at its
        // client, here the bench, as it does two steps up under Claude Code.
        .env("AI_AGENT", "claude-code_2-1-328_harness")
        .env("CLAUDE_PID", std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
    if let Some(mut s) = child.stdin.take() {
        // `true` exits without reading: a broken pipe is expected there.
        let _ = s.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok((
        start.elapsed(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn report(label: &str, times: &mut [Duration], floor: Duration, target: Option<f64>) {
    let m = median(times);
    let p90 = times[times.len() * 9 / 10];
    let verdict = match target {
        Some(t) if m.as_secs_f64() * 1000.0 <= t => format!("  (target <= {t} ms: met)"),
        Some(t) => format!("  (target <= {t} ms: MISSED)"),
        None => String::new(),
    };
    println!(
        "{label:<52} median {}  p90 {}  above spawn floor {}{verdict}",
        ms(m),
        ms(p90),
        ms(m.saturating_sub(floor))
    );
}

/// One row of the table: a binary fed one hook input.
struct Scenario {
    label: String,
    bin: PathBuf,
    stdin: String,
    /// The median to meet, in milliseconds.
    target: Option<f64>,
    /// The policy rewrites the command (the output has `updatedInput`).
    rewrites: bool,
}

/// The scenarios, /bin/true (the spawn floor) first.
fn scenarios(
    bin: &Path,
    none: &Project,
    with_policy: &Project,
    loop_policy: &Project,
) -> Vec<Scenario> {
    let chain = long_chain();
    println!(
        "(b)/(c): {} bytes, 24 commands chained; one is rewritten",
        chain.len()
    );
    let row = |label: &str, project: &Project, command: &str, target, rewrites| Scenario {
        label: label.to_string(),
        bin: bin.to_path_buf(),
        stdin: input(&project.0, command),
        target,
        rewrites,
    };
    vec![
        Scenario {
            label: "baseline: spawn /bin/true".to_string(),
            bin: PathBuf::from("/bin/true"),
            stdin: String::new(),
            target: None,
            rewrites: false,
        },
        row(
            "(a) no loop, no policy",
            none,
            "cargo test 2>&1 | tail -20",
            Some(1.0),
            false,
        ),
        row(
            "(b) 100-rule policy, long chained command",
            with_policy,
            &chain,
            Some(1.5),
            true,
        ),
        row(
            "(c) as (b), loop active (built-in protection too)",
            loop_policy,
            &chain,
            None,
            true,
        ),
    ]
}

/// With `RALPH_GUARD_BIN_B` set, each guard row runs both binaries ([A], [B]).
fn with_binary_b(scenarios: Vec<Scenario>, bin: &Path) -> Vec<Scenario> {
    let Some(b) = std::env::var_os("RALPH_GUARD_BIN_B") else {
        return scenarios;
    };
    let b = PathBuf::from(b);
    println!("[A] = {}, [B] = {}", bin.display(), b.display());
    let mut ab = Vec::new();
    for s in scenarios {
        if s.bin == bin {
            let b_row = Scenario {
                label: format!("{} [B]", s.label),
                bin: b.clone(),
                stdin: s.stdin.clone(),
                target: s.target,
                rewrites: s.rewrites,
            };
            ab.push(Scenario {
                label: format!("{} [A]", s.label),
                ..s
            });
            ab.push(b_row);
        } else {
            ab.push(s);
        }
    }
    ab
}

fn main() -> Result<(), String> {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500);
    let bin = guard_binary()?;
    println!(
        "ralph-guard whole-process timing: {} ({runs} runs each)",
        bin.display()
    );
    let none = project("none", false, None).map_err(|e| e.to_string())?;
    let policy_text = hundred_rule_policy();
    let with_policy = project("policy", false, Some(&policy_text)).map_err(|e| e.to_string())?;
    let loop_policy =
        project("loop-policy", true, Some(&policy_text)).map_err(|e| e.to_string())?;
    let scenarios = with_binary_b(scenarios(&bin, &none, &with_policy, &loop_policy), &bin);
    // The scenarios take turns, run by run, so that load from elsewhere on
    // the machine falls on all of them alike; /bin/true is the spawn floor.
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); scenarios.len()];
    for _ in 0..runs {
        for (i, s) in scenarios.iter().enumerate() {
            let (t, out) = spawn_once(&s.bin, &s.stdin)?;
            if i > 0 && out.contains("updatedInput") != s.rewrites {
                return Err(format!("{}: unexpected output: {out:?}", s.label));
            }
            times[i].push(t);
        }
    }
    let floor = median(&mut times[0]);
    for (s, t) in scenarios.iter().zip(times.iter_mut()) {
        report(&s.label, t, floor, s.target);
    }
    Ok(())
}
