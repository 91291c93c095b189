//! One case, black box: start a loop as the user would, let its first Stop
//! claim it, send the case's tool calls through the real guard (and run
//! what it allows), then judge the next Stop by what it says and what
//! `ralph-setup status --json` reports. Nothing here looks at where ralph
//! keeps its files.

use crate::actors;
use crate::cases::{Actor, Case, Mode, Tool};
use crate::sandbox::{
    CASE_DEADLINE, Fixture, GUARD, RALPH, SESSION, SETUP, STOP, Sandbox, WORKER_DEADLINE,
};
use crate::tools::{self, Applied};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The task of plain and verify loops; a feed must still carry it.
pub(crate) const PROMPT: &str = "Add an add(a, b) function to src/lib.rs with a test.";
/// US-1's check: fails until `fn add` exists.
pub(crate) const CHECK: &str = "grep -q 'fn add' src/lib.rs";
/// The same check as a script in the project (tests/check.sh runs CHECK):
/// the modes `verify-script` and `prd-script`.
pub(crate) const SCRIPT_CHECK: &str = "sh tests/check.sh";
/// What attacks write into a task or prompt: a feed must never carry it.
pub(crate) const INJECTED: &str = "HIJACK";
/// An agent command may run this long (then it is killed and the case goes on).
const COMMAND_LIMIT: Duration = Duration::from_secs(5);

/// Who a hook call comes from: a session, maybe one of its subagents, and
/// the environment its hooks and commands get beyond the client's own.
pub(crate) struct Who<'a> {
    pub session: &'a str,
    /// A subagent's `agent_id` and `agent_type`.
    pub agent: Option<(&'a str, &'a str)>,
    pub env: &'a [(String, String)],
    /// Its own placeholders for a case's text (a worker's `{tree}`).
    pub places: &'a [(&'a str, String)],
}

/// The loop's own session, its main thread.
pub(crate) const MAIN: Who<'static> = Who {
    session: SESSION,
    agent: None,
    env: &[],
    places: &[],
};

/// What the user's start and the first Stop left: the iteration and the
/// feed the agent is working on.
pub(crate) struct Started {
    pub iteration: u64,
    pub feed: String,
}

/// What became of the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The guard denied a tool call of the case.
    Denied(String),
    /// The next Stop fed the same task, one iteration on.
    Survived,
    /// The loop ended as complete.
    Completed,
    /// The loop ended otherwise (cancelled, deadlock, blocked, cap, gone...).
    Ended(String),
    /// The Stop let the session stop with the loop still active (what it said).
    Paused(String),
    /// The Stop fed the loop, but not the loop it was (iteration, task or
    /// story not what they should be).
    Tampered(String),
    /// The harness could not run the case (setup failed, deadline).
    Error(String),
}

impl Outcome {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Outcome::Denied(_) => "denied",
            Outcome::Survived => "survived",
            Outcome::Completed => "completed",
            Outcome::Ended(_) => "ended",
            Outcome::Paused(_) => "paused",
            Outcome::Tampered(_) => "tampered",
            Outcome::Error(_) => "error",
        }
    }

    pub(crate) fn detail(&self) -> &str {
        match self {
            Outcome::Denied(s)
            | Outcome::Ended(s)
            | Outcome::Paused(s)
            | Outcome::Tampered(s)
            | Outcome::Error(s) => s,
            Outcome::Survived | Outcome::Completed => "",
        }
    }
}

/// One case's result.
pub(crate) struct Record {
    pub outcome: Outcome,
    /// What else happened on the way (a tool refusal, a killed command).
    pub notes: Vec<String>,
    pub elapsed: Duration,
}

/// Run one case in a fresh sandbox; `dispose` gets the sandbox's folder
/// afterwards (deleting is slow on some disks, so it is done elsewhere).
pub(crate) fn run_case(fixture: &Fixture, case: &Case, dispose: &dyn Fn(PathBuf)) -> Record {
    let t0 = Instant::now();
    let mut notes = Vec::new();
    let deadline = if case.actor == Actor::Worker && case.mode == Mode::Parallel {
        WORKER_DEADLINE
    } else {
        CASE_DEADLINE
    };
    if case.actor == Actor::Runner {
        let outcome = match fixture.scratch() {
            Err(e) => Outcome::Error(e),
            Ok(dir) => {
                let o = crate::ci::runner(fixture.root(), &dir, case, &mut notes)
                    .unwrap_or_else(Outcome::Error);
                dispose(dir);
                o
            }
        };
        return Record {
            outcome,
            notes,
            elapsed: t0.elapsed(),
        };
    }
    let outcome = match fixture.sandbox(deadline) {
        Err(e) => Outcome::Error(e),
        Ok(sb) => {
            let outcome = steps(&sb, case, &mut notes).unwrap_or_else(Outcome::Error);
            dispose(sb.dir);
            outcome
        }
    };
    Record {
        outcome,
        notes,
        elapsed: t0.elapsed(),
    }
}

fn steps(sb: &Sandbox, case: &Case, notes: &mut Vec<String>) -> Result<Outcome, String> {
    let started = start(sb, case)?;
    match case.actor {
        Actor::Main => main_thread(sb, case, started.iteration, notes),
        Actor::Worker => actors::worker(sb, case, &started, notes),
        Actor::Reviewer => actors::reviewer(sb, case, started.iteration, notes),
        Actor::Runner => Err("a CI runner's case plays without a sandbox".into()),
    }
}

/// The main thread makes the calls, then its next Stop is judged.
fn main_thread(
    sb: &Sandbox,
    case: &Case,
    before: u64,
    notes: &mut Vec<String>,
) -> Result<Outcome, String> {
    let cwd = case
        .cwd
        .as_deref()
        .map_or_else(|| sb.project.clone(), |c| sb.project.join(c));
    // A `--fresh` main thread only dispatches: whatever it writes is a
    // write that landed, whatever the loop does next.
    let tree = case.mode.fresh().then(|| actors::snapshot(sb, &[]));
    for (n, step) in case.calls().iter().enumerate() {
        if let Some(denied) = play(sb, &MAIN, case, step, n, &cwd, notes)? {
            return Ok(denied);
        }
    }
    if let Some(tree) = tree
        && let Some(changed) = actors::changed(&tree, &actors::snapshot(sb, &[]), &sb.dir)
    {
        return Ok(Outcome::Tampered(format!(
            "the --fresh main thread wrote: {changed}"
        )));
    }
    let out = stop(sb, &case.final_message(), true, json!([]))?;
    let outcome = crate::judge::judge(sb, case, before, out.as_ref())?;
    match (&outcome, &case.next_start) {
        (Outcome::Survived | Outcome::Completed | Outcome::Paused(_), Some(want)) => {
            next_start(sb, case, want, outcome)
        }
        _ => Ok(outcome),
    }
}

/// The user cancels (a loop that ended: nothing to cancel) and starts
/// again: that start names each of `want` of the loop's configuration, or
/// none of it when `want` is empty.
fn next_start(
    sb: &Sandbox,
    case: &Case,
    want: &[String],
    outcome: Outcome,
) -> Result<Outcome, String> {
    let mut cmd = sb.user(RALPH);
    cmd.arg("cancel");
    sb.run(cmd, b"", "cancel", None)?;
    let said = run_start(sb, case)?;
    let named: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("the last loop"))
        .collect();
    let missing: Vec<&String> = want.iter().filter(|w| !said.contains(w.as_str())).collect();
    Ok(if want.is_empty() && !named.is_empty() {
        Outcome::Tampered(format!("the next start named: {}", named.join(" / ")))
    } else if !missing.is_empty() {
        Outcome::Tampered(format!(
            "the next start did not name {missing:?}: {}",
            named.join(" / ")
        ))
    } else {
        outcome
    })
}

/// One tool call of `who` through the guard, run when allowed; `Some` when
/// denied.
pub(crate) fn play(
    sb: &Sandbox,
    who: &Who,
    case: &Case,
    step: &crate::cases::Step,
    n: usize,
    cwd: &Path,
    notes: &mut Vec<String>,
) -> Result<Option<Outcome>, String> {
    let input = tool_input(sb, step.tool, &step.input, cwd, who.places)?;
    match guard(sb, who, step.tool, &input, cwd, n)? {
        Verdict::Deny(why) => Ok(Some(Outcome::Denied(why))),
        Verdict::Allow(input) => {
            perform(sb, who, case, step.tool, &input, cwd, notes)?;
            Ok(None)
        }
    }
}

/// The suite modes' check: node's own test runner (no install).
const SUITE_CHECK: &str = "node --test";
/// `suite-npm`: the check the `test` script of `package.json`.
const SUITE_NPM_CHECK: &str = "npm test";
/// `suite-script`: the check a script that sources its options.
const SUITE_SCRIPT_CHECK: &str = "sh tests/run.sh";

/// The suite modes' tests, written by the user before the start.
fn write_suite(sb: &Sandbox, mode: Mode) -> Result<(), String> {
    let head = "const test = require('node:test');\nconst assert = require('node:assert');\nconst lib = require('../src/lib.js');\n";
    let mut files = vec![
        (
            "src/lib.js".to_string(),
            "exports.sub = (a, b) => a - b;\n".to_string(),
        ),
        (
            "tests/a.test.js".into(),
            format!(
                "{head}test('subtracts', () => {{ assert.strictEqual(lib.sub(3, 1), 2); }});\n"
            ),
        ),
        (
            "tests/b.test.js".into(),
            format!(
                "{head}test('adds', () => {{ assert.strictEqual(lib.add && lib.add(1, 2), 3); }});\n"
            ),
        ),
    ];
    if mode == Mode::SuiteNpm {
        files.push((
            "package.json".into(),
            "{\"name\": \"lib\", \"private\": true, \"scripts\": {\"test\": \"node --test\"}}\n"
                .into(),
        ));
    }
    if mode == Mode::SuiteScript {
        files.push((
            "tests/run.sh".into(),
            "[ -f tests/opts.sh ] && . tests/opts.sh\nnode --test $NODE_TEST_ARGS\n".into(),
        ));
    }
    for (rel, text) in files {
        let path = sb.project.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{rel}: {e}"))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{rel}: {e}"))?;
    }
    Ok(())
}

/// `ralph start` as the user, with the case's mode and options: what it printed.
fn run_start(sb: &Sandbox, case: &Case) -> Result<String, String> {
    let mut args = vec![
        "start",
        "--session",
        SESSION,
        "--max-iterations",
        "20",
        "--max-stalls",
        "0",
    ];
    match case.mode {
        Mode::Plain => args.extend(["--completion-promise", "DONE", "--", PROMPT]),
        Mode::Verify => args.extend([
            "--completion-promise",
            "DONE",
            "--verify",
            CHECK,
            "--",
            PROMPT,
        ]),
        Mode::VerifyScript => args.extend([
            "--completion-promise",
            "DONE",
            "--verify",
            SCRIPT_CHECK,
            "--",
            PROMPT,
        ]),
        Mode::Suite | Mode::SuiteScript | Mode::SuiteNpm => {
            write_suite(sb, case.mode)?;
            let check = match case.mode {
                Mode::SuiteScript => SUITE_SCRIPT_CHECK,
                Mode::SuiteNpm => SUITE_NPM_CHECK,
                _ => SUITE_CHECK,
            };
            args.extend([
                "--completion-promise",
                "DONE",
                "--verify",
                check,
                "--",
                PROMPT,
            ]);
        }
        Mode::Prd | Mode::PrdScript => args.extend(["--prd-file", "prd.json"]),
        Mode::Fresh => args.extend(["--prd-file", "prd.json", "--fresh"]),
        Mode::Parallel => args.extend(["--prd-file", "prd.json", "--parallel", "2"]),
    }
    if case.mode == Mode::PrdScript {
        let prd = sb.project.join("prd.json");
        let text = std::fs::read_to_string(&prd).map_err(|e| format!("prd.json: {e}"))?;
        std::fs::write(&prd, text.replace(CHECK, SCRIPT_CHECK))
            .map_err(|e| format!("prd.json: {e}"))?;
    }
    // Options go before the `--` that ends them.
    let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    for (i, extra) in case.args.iter().enumerate() {
        args.insert(at + i, extra.as_str());
    }
    let mut cmd = sb.user(RALPH);
    cmd.args(&args);
    let out = sb.run(cmd, b"", "start", None)?;
    if out.code != Some(0) {
        return Err(format!("ralph start failed: {}", out.stderr.trim()));
    }
    Ok(out.stdout)
}

/// Start the loop as the user, then one Stop claims it (iteration 2).
fn start(sb: &Sandbox, case: &Case) -> Result<Started, String> {
    if let Some(script) = &case.prepare {
        let out = sb.run(sb.user_shell(&sb.expand(script)), b"", "prepare", None)?;
        if out.code != Some(0) {
            return Err(format!("prepare failed: {}", out.stderr.trim()));
        }
    }
    run_start(sb, case)?;
    let first = stop(sb, "Read the task; starting now.", false, json!([]))?;
    let st = status(sb)?;
    match (
        is_block(first.as_ref()),
        st["active"].as_bool(),
        st["iteration"].as_u64(),
    ) {
        (true, Some(true), Some(iteration)) => Ok(Started {
            iteration,
            feed: reason_of(first.as_ref()).to_string(),
        }),
        _ => Err(format!(
            "the first Stop did not feed the loop: {first:?} / {st}"
        )),
    }
}

/// The tool input as the client sends it: placeholders expanded, file paths absolute.
fn tool_input(
    sb: &Sandbox,
    tool: Tool,
    yaml: &serde_yaml_ng::Value,
    cwd: &Path,
    places: &[(&str, String)],
) -> Result<Value, String> {
    let mut v = serde_json::to_value(yaml).map_err(|e| e.to_string())?;
    expand(sb, &mut v, places);
    if tool == Tool::Bash && v.is_string() {
        v = json!({"command": v, "description": "Run a command"});
    }
    for key in ["file_path", "notebook_path"] {
        if let Some(p) = v[key].as_str().filter(|p| !p.starts_with(['/', '~'])) {
            v[key] = Value::String(cwd.join(p).to_string_lossy().into_owned());
        }
    }
    Ok(v)
}

pub(crate) fn expand(sb: &Sandbox, v: &mut Value, places: &[(&str, String)]) {
    match v {
        Value::String(s) => {
            for (name, value) in places {
                *s = s.replace(name, value);
            }
            *s = sb.expand(s);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| expand(sb, i, places)),
        Value::Object(m) => m.values_mut().for_each(|i| expand(sb, i, places)),
        _ => {}
    }
}

enum Verdict {
    Deny(String),
    /// Allowed, possibly rewritten (`updatedInput`).
    Allow(Value),
}

fn tool_name(tool: Tool) -> &'static str {
    match tool {
        Tool::Bash => "Bash",
        Tool::Write => "Write",
        Tool::Edit => "Edit",
        Tool::MultiEdit => "MultiEdit",
        Tool::NotebookEdit => "NotebookEdit",
        Tool::Stop => "Stop",
        Tool::Prompt => "UserPromptSubmit",
        Tool::Event => "Event",
    }
}

fn guard(
    sb: &Sandbox,
    who: &Who,
    tool: Tool,
    input: &Value,
    cwd: &Path,
    n: usize,
) -> Result<Verdict, String> {
    let mut hook = json!({
        "session_id": who.session,
        "transcript_path": transcript_of(sb, who.session),
        "cwd": cwd,
        "permission_mode": "bypassPermissions",
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name(tool),
        "tool_input": input,
        "tool_use_id": format!("toolu_{n:02}"),
    });
    if let Some((id, kind)) = who.agent {
        hook["agent_id"] = json!(id);
        hook["agent_type"] = json!(kind);
    }
    let Some(v) = hook_json(sb, GUARD, who, &hook, "guard")? else {
        return Ok(Verdict::Allow(input.clone()));
    };
    let hso = &v["hookSpecificOutput"];
    Ok(match hso["permissionDecision"].as_str() {
        Some("deny") => Verdict::Deny(
            hso["permissionDecisionReason"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ),
        _ if hso["updatedInput"].is_object() => Verdict::Allow(hso["updatedInput"].clone()),
        _ => Verdict::Allow(input.clone()),
    })
}

/// Run an allowed call: Bash for real in `cwd`, file tools applied.
fn perform(
    sb: &Sandbox,
    who: &Who,
    case: &Case,
    tool: Tool,
    input: &Value,
    cwd: &Path,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    if tool == Tool::Bash {
        let command = input["command"]
            .as_str()
            .ok_or("Bash input without command")?;
        let out = sb.run(
            sb.agent_bash(command, cwd, who.session, who.env),
            b"",
            "bash",
            Some(COMMAND_LIMIT),
        )?;
        if out.timed_out {
            notes.push(format!(
                "the command was killed after {} s",
                COMMAND_LIMIT.as_secs()
            ));
        } else if out.code != Some(0) {
            let code = out
                .code
                .map_or_else(|| "by a signal".into(), |c| c.to_string());
            notes.push(format!(
                "the command exited {code}: {}",
                first_line(&out.stderr)
            ));
        }
        return Ok(());
    }
    match tools::apply(tool_name(tool), input, cwd, sb) {
        Applied::Done => Ok(()),
        Applied::Refused(why) if case.may_refuse => {
            notes.push(format!("{} refused: {why}", tool_name(tool)));
            Ok(())
        }
        Applied::Refused(why) => Err(format!(
            "the {} tool refused the call: {why}",
            tool_name(tool)
        )),
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(120)
        .collect()
}

/// A session's transcript, where the client keeps it.
pub(crate) fn transcript_of(sb: &Sandbox, session: &str) -> PathBuf {
    sb.home
        .join(format!(".claude/projects/-proj/{session}.jsonl"))
}

/// What the client writes to the session's transcript before its Stop hook
/// reads it (ralph's Stop waits for it: `ralph_core::transcript::written`): the
/// turn, a feed and then the words the Stop is handed.
fn client_writes_turn(stop: &Value) -> Result<(), String> {
    use std::io::Write as _;
    let (Some(path), Some(said)) = (
        stop["transcript_path"].as_str(),
        stop["last_assistant_message"].as_str(),
    ) else {
        return Ok(());
    };
    let path = Path::new(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let feed = json!({"type": "user", "message": {"role": "user", "content": "Stop hook feedback: go on"}});
    let words = json!({"type": "assistant", "message": {"role": "assistant",
        "content": [{"type": "text", "text": said}]}});
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{feed}\n{words}\n").as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Run hook `program` for `who` with `body` on stdin: its JSON answer, or
/// `None` when it printed nothing.
pub(crate) fn hook_json(
    sb: &Sandbox,
    program: &str,
    who: &Who,
    body: &Value,
    label: &str,
) -> Result<Option<Value>, String> {
    if body["hook_event_name"] == "Stop" {
        client_writes_turn(body)?;
    }
    let mut cmd = sb.hook_as(program, who.session, who.env);
    if program == SETUP {
        cmd.arg(label);
    }
    let out = sb.run(cmd, body.to_string().as_bytes(), label, None)?;
    if out.code != Some(0) {
        return Err(format!(
            "{label} exited {:?}: {}",
            out.code,
            out.stderr.trim()
        ));
    }
    let text = out.stdout.trim();
    if text.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| format!("{label} output not JSON ({e}): {text}"))
}

/// One Stop of the loop's session, as the client sends it; `tasks` are its
/// `background_tasks` (the workers still running).
pub(crate) fn stop(
    sb: &Sandbox,
    message: &str,
    after_block: bool,
    tasks: Value,
) -> Result<Option<Value>, String> {
    let hook = json!({
        "session_id": SESSION,
        "transcript_path": transcript_of(sb, SESSION),
        "cwd": sb.project,
        "permission_mode": "bypassPermissions",
        "hook_event_name": "Stop",
        "stop_hook_active": after_block,
        "last_assistant_message": message,
        "background_tasks": tasks,
        "session_crons": [],
    });
    hook_json(sb, STOP, &MAIN, &hook, "stop")
}

pub(crate) fn status(sb: &Sandbox) -> Result<Value, String> {
    let mut cmd = sb.user(SETUP);
    cmd.args(["status", "--json"]);
    let out = sb.run(cmd, b"", "status", None)?;
    serde_json::from_str(out.stdout.trim())
        .map_err(|e| format!("status --json ({e}): {}", out.stdout))
}

/// A feed, either form: the hooks run as under 2.1.328 here, which is fed
/// by `additionalContext` (`ralph_core::hook_output::FeedForm`); an older
/// client gets a block.
pub(crate) fn is_block(out: Option<&Value>) -> bool {
    out.is_some_and(|v| v["decision"] == "block" || fed_context(v).is_some())
}

pub(crate) fn reason_of(out: Option<&Value>) -> &str {
    out.and_then(|v| v["reason"].as_str().or_else(|| fed_context(v)))
        .unwrap_or_default()
}

/// A Stop's or SubagentStop's `additionalContext`.
fn fed_context(v: &Value) -> Option<&str> {
    let specific = &v["hookSpecificOutput"];
    matches!(
        specific["hookEventName"].as_str(),
        Some("Stop" | "SubagentStop")
    )
    .then(|| specific["additionalContext"].as_str())
    .flatten()
}
