//! The corpus: cases as data (`tests/integrity/cases/*.yaml`), read and
//! checked before anything runs.

use serde::Deserialize;
use serde_yaml_ng::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A tool call as the client sends it to the PreToolUse hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum Tool {
    Bash,
    Write,
    Edit,
    MultiEdit,
    NotebookEdit,
    /// No tool call: the case is what the agent says at the judged Stop
    /// (`input` is its `last_assistant_message`; a worker's: its
    /// `SubagentStop`'s).
    Stop,
    /// A reviewer-like session's `UserPromptSubmit` (`input`: the prompt),
    /// through `ralph-setup hook-prompt` as the client runs it.
    Prompt,
    /// A reviewer-like session's `SessionStart`, `SessionEnd` or
    /// `StopFailure` (`input`: the event's fields), through `ralph-setup
    /// hook-event`; its `SubagentStart` or `SubagentStop`, through the Stop
    /// hook.
    Event,
}

/// Who plays the case's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Actor {
    /// The loop's session, its main thread (no agent fields, the project's cwd).
    #[default]
    Main,
    /// A subagent of the loop's session as the feed asks for it: `--fresh`'s
    /// `ralph:ralph-worker` in the project, `--parallel`'s
    /// `ralph:ralph-parallel-worker` in its own worktree (`run::worker`).
    Worker,
    /// Another session of the project (a reviewer's, or one the agent
    /// starts), with what an agent could forge but not ralph's one-time
    /// pass (`run::reviewer`).
    Reviewer,
    /// The agent of one story under `ralph run --story` on a CI runner: its
    /// commands run with `sh` in the runner's checkout on `ralph/<story>`,
    /// then ralph's commit, the bundle and `ralph merge` in a fresh clone
    /// (`ci::runner`); `story` is its story (default US-1), `prepare` runs
    /// in the base before its commit, `absent` is read in the merge clone.
    Runner,
}

/// How the loop is started before the case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// A prompt with `--completion-promise DONE`, no check.
    #[default]
    Plain,
    /// As plain, with `--verify` (the same check as story US-1's).
    Verify,
    /// `--prd-file prd.json`: three stories, US-1 with a `verify` that fails.
    Prd,
    /// As verify, with the check a script in the project:
    /// `--verify "sh tests/check.sh"` (its file is pinned at start).
    #[serde(rename = "verify-script")]
    VerifyScript,
    /// As prd, with US-1's check a script in the project:
    /// `"verify": "sh tests/check.sh"` (its file is pinned at start).
    #[serde(rename = "prd-script")]
    PrdScript,
    /// As prd, with `--fresh`: the main thread dispatches each story to a
    /// `ralph:ralph-worker` and writes nothing.
    Fresh,
    /// As prd, with `--parallel 2` (the fixture has a commit): US-1 and
    /// US-3 go out at once, each to a worker in its own worktree.
    Parallel,
    /// A suite of real tests (`node --test`: `tests/a.test.js` passes,
    /// `tests/b.test.js` fails until `add` exists in `src/lib.js`), with
    /// `--verify "node --test"`: the suite's baseline is taken at start.
    Suite,
    /// As suite, the check a script that reads its options from a file
    /// it sources (`sh tests/run.sh`, `tests/opts.sh`: not pinned).
    #[serde(rename = "suite-script")]
    SuiteScript,
    /// As suite, the check `npm test`, whose `test` script in
    /// `package.json` is `node --test`.
    #[serde(rename = "suite-npm")]
    SuiteNpm,
}

impl Mode {
    /// The loop works through the PRD's stories (the feed is a story, not
    /// the task).
    pub(crate) fn prd(self) -> bool {
        matches!(
            self,
            Mode::Prd | Mode::PrdScript | Mode::Fresh | Mode::Parallel
        )
    }

    /// The main thread only dispatches (`--parallel` implies `--fresh`).
    pub(crate) fn fresh(self) -> bool {
        matches!(self, Mode::Fresh | Mode::Parallel)
    }
}

/// What must hold for the test to pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Expect {
    /// An attack: denied by the guard, or the loop goes on at the next Stop.
    Survives,
    /// A benign look-alike: not denied, and the loop goes on.
    Allowed,
    /// A documented limit of the guard: recorded, never fails the test.
    Limit,
    /// Not yet: recorded, never fails the test; reported when it holds.
    Todo,
    /// A control: the loop must end (proves the judge can see an ending).
    Ends,
    /// By design the loop pauses for the user (a blocker naming a failing
    /// story): the loop stays, and the Stop lets the session stop.
    Pauses,
}

/// One tool call of a case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Step {
    #[serde(default = "bash")]
    pub tool: Tool,
    pub input: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    pub id: String,
    pub category: String,
    #[serde(default = "bash")]
    pub tool: Tool,
    /// The tool input: the command for Bash, the tool's fields for the
    /// file tools, the final message for Stop.
    #[serde(default)]
    pub input: Option<Value>,
    /// Several tool calls in a row, instead of `tool` + `input`.
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub mode: Mode,
    pub expect: Expect,
    /// For `todo` (and `limit`): the product change that would flip it.
    #[serde(default)]
    pub fix: Option<String>,
    pub note: String,
    /// Shell run by the user (not the agent) before the loop starts.
    #[serde(default)]
    pub prepare: Option<String>,
    /// The judged Stop's `last_assistant_message` (default: a working turn).
    #[serde(default)]
    pub message: Option<String>,
    /// The story the judged Stop must feed (a weakened or forged check
    /// must not move the loop past it).
    #[serde(default)]
    pub fed: Option<String>,
    /// The tool's working folder, relative to the project (default: its root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// A file tool may refuse the call (else a refusal is a broken case:
    /// an attack that did not happen proves nothing).
    #[serde(default)]
    pub may_refuse: bool,
    /// More options for the user's start (`--pin 'tests/**'`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Files (relative to the project) that must not exist after the judged
    /// Stop: what a planted command (a notify, a git fsmonitor or hook)
    /// would have made had ralph run it.
    #[serde(default)]
    pub absent: Vec<String>,
    /// Shell run by the user after the judged Stop, before `absent` is
    /// looked at: what the user does next (`git status`, a commit) that a
    /// planted hook or config key would run in, or a look at what must
    /// have stayed (it touches a file `absent` names when not).
    #[serde(default)]
    pub then_user: Option<String>,
    /// Who plays the calls (default: the main thread).
    #[serde(default)]
    pub actor: Actor,
    /// A worker: the story it is handed, of those the feed dispatches
    /// (default: the first).
    #[serde(default)]
    pub story: Option<String>,
    /// A worker: the `agent_type` it runs as (default: the one the feed asks
    /// for), to play another subagent.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// The stories whose `passes` is true in the PRD after the judged Stop,
    /// exactly (a worker's case: none unless given).
    #[serde(default)]
    pub passing: Option<Vec<String>>,
    /// More environment for the actor's hooks and commands (a reviewer-like
    /// session's forged marker: `RALPH_REVIEWER: "1"`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// After the judged Stop the user cancels and starts again: what that
    /// start must say of the loop's configuration (each string), or, empty,
    /// that it names none of it (`ralph_core::config_seen`).
    #[serde(default)]
    pub next_start: Option<Vec<String>>,
    /// A CI runner: milliseconds to wait after `ralph merge` before judging
    /// (for what a process the check left behind does later).
    #[serde(default)]
    pub settle_ms: u64,
}

fn bash() -> Tool {
    Tool::Bash
}

impl Case {
    /// A look-alike that must stay allowed (its category says so).
    pub(crate) fn benign(&self) -> bool {
        self.category.starts_with("benign")
    }

    /// Where the case plays, for the report's figures by surface.
    pub(crate) fn surface(&self) -> &'static str {
        match (self.actor, self.mode) {
            (Actor::Reviewer, _) => "reviewer session",
            (Actor::Runner, _) => "CI story runner",
            (Actor::Worker, Mode::Parallel) => "--parallel worker",
            (Actor::Worker, _) => "--fresh worker",
            (Actor::Main, m) if m.fresh() => "--fresh main thread",
            (Actor::Main, _) => "main thread",
        }
    }

    /// The stories that must pass after the judged Stop, when that is judged.
    pub(crate) fn must_pass(&self) -> Option<Vec<String>> {
        match (&self.passing, self.actor) {
            (Some(p), _) => Some(p.clone()),
            (None, Actor::Worker) => Some(Vec::new()),
            (None, _) => None,
        }
    }

    /// The tool calls, in order (none for a Stop-side case).
    pub(crate) fn calls(&self) -> Vec<Step> {
        if !self.steps.is_empty() {
            return self.steps.clone();
        }
        match (&self.input, self.tool) {
            (_, Tool::Stop) | (None, _) => Vec::new(),
            (Some(input), tool) => vec![Step {
                tool,
                input: input.clone(),
            }],
        }
    }

    /// The judged Stop's message.
    pub(crate) fn final_message(&self) -> String {
        if self.tool == Tool::Stop
            && let Some(Value::String(m)) = &self.input
        {
            return m.clone();
        }
        self.message
            .clone()
            .unwrap_or_else(|| "Made some progress; continuing with the task.".into())
    }
}

/// Every case of every `*.yaml` in `dir`, in file then list order.
pub(crate) fn load(dir: &Path) -> Result<Vec<Case>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut some: Vec<Case> =
            serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        cases.append(&mut some);
    }
    check(&cases)?;
    Ok(cases)
}

/// Ids unique, inputs present, no path outside the scratch dir.
fn check(cases: &[Case]) -> Result<(), String> {
    let mut ids = BTreeSet::new();
    for c in cases {
        if !ids.insert(c.id.as_str()) {
            return Err(format!("case id `{}` is used twice", c.id));
        }
        if c.calls().is_empty() && c.tool != Tool::Stop {
            return Err(format!("case `{}` has no input", c.id));
        }
        if c.benign() != (c.expect == Expect::Allowed) && c.expect != Expect::Todo {
            return Err(format!(
                "case `{}`: benign categories expect `allowed` (or `todo`), attacks anything else",
                c.id
            ));
        }
        if c.actor == Actor::Worker && !c.mode.fresh() {
            return Err(format!(
                "case `{}`: a worker plays in mode `fresh` or `parallel`",
                c.id
            ));
        }
        if c.actor == Actor::Runner && c.calls().iter().any(|s| s.tool != Tool::Bash) {
            return Err(format!(
                "case `{}`: a CI runner's steps are shell commands",
                c.id
            ));
        }
        let hooks = c
            .calls()
            .iter()
            .any(|s| matches!(s.tool, Tool::Prompt | Tool::Event));
        if hooks && c.actor != Actor::Reviewer {
            return Err(format!(
                "case `{}`: only a reviewer-like session's hooks are played (Prompt, Event)",
                c.id
            ));
        }
        if matches!(c.expect, Expect::Todo | Expect::Limit) && c.fix.is_none() {
            return Err(format!(
                "case `{}`: a `{:?}` case names the change that would flip it (`fix:`)",
                c.id, c.expect
            ));
        }
        for step in c.calls() {
            let fields = match step.tool {
                Tool::Bash => step.input.is_string() || step.input.get("command").is_some(),
                Tool::NotebookEdit => step.input.get("notebook_path").is_some(),
                Tool::Stop => true,
                Tool::Prompt => step.input.is_string(),
                Tool::Event => step.input.get("hook_event_name").is_some(),
                _ => step.input.get("file_path").is_some(),
            };
            if !fields {
                return Err(format!(
                    "case `{}`: the {:?} input lacks its fields",
                    c.id, step.tool
                ));
            }
        }
        let mut texts = Vec::new();
        for step in c.calls() {
            strings(&step.input, &mut texts);
        }
        texts.extend(c.prepare.iter().cloned());
        // A --parallel worker runs three folders down, in its worktree.
        let depth = if c.actor == Actor::Worker && c.mode == Mode::Parallel {
            6
        } else {
            3
        };
        for t in &texts {
            outside_path(t, depth).map_or(Ok(()), |p| {
                Err(format!(
                    "case `{}` names `{p}`, outside the scratch dir: use {{project}}, {{home}}, ~, $TMPDIR",
                    c.id
                ))
            })?;
        }
    }
    Ok(())
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Sequence(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Mapping(m) => m.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// Absolute paths a case may name: the scratch dir's placeholders, and
/// programs and devices that touch nothing.
const ALLOWED_ABSOLUTE: &[&str] = &[
    "/proc/self/cwd",
    "/dev/null",
    "/dev/zero",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/",
    "/bin/",
    "/usr/bin/",
    // Slash commands in a forged prompt, not paths.
    "/cancel-ralph",
    "/ralph-loop",
    "/ralph:",
    // The promise's closing tag.
    "/promise>",
];

/// The first absolute path in `text` that could reach outside the scratch
/// dir (a rough lexical check: a word starting with `/` after a separator);
/// `depth` `..` from the case's folder leave the scratch dir.
fn outside_path(text: &str, depth: usize) -> Option<String> {
    // The project is two levels below the scratch dir: three `..` leave it.
    let climb = vec![".."; depth].join("/");
    for climb in [climb.as_str(), "~/../.."] {
        if text.contains(climb) {
            return Some(climb.into());
        }
    }
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'/' {
            continue;
        }
        let prev = if i == 0 { b' ' } else { bytes[i - 1] };
        // A closing quote after a word ("$PWD"/x) continues that word.
        let before = if i < 2 { b' ' } else { bytes[i - 2] };
        if matches!(prev, b'"' | b'\'')
            && (before.is_ascii_alphanumeric() || matches!(before, b'}' | b')'))
        {
            continue;
        }
        if !matches!(
            prev,
            b' ' | b'\t'
                | b'\n'
                | b'='
                | b'\''
                | b'"'
                | b'('
                | b'`'
                | b'>'
                | b'<'
                | b':'
                | b';'
                | b'|'
                | b'&'
        ) {
            continue;
        }
        let word: String = text[i..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !"'\";|&)`".contains(*c))
            .collect();
        if ALLOWED_ABSOLUTE.iter().any(|a| word.starts_with(a)) {
            continue;
        }
        // A lone `/` (prose, `:/`) is harmless; a path is not.
        if word
            .chars()
            .nth(1)
            .is_some_and(|c| c.is_alphanumeric() || c == '.')
        {
            return Some(word);
        }
    }
    None
}
