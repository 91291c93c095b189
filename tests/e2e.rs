//! End-to-end scenarios against the real Claude Code client.
//!
//! Each `tests/scenarios/*.yaml` describes one case a person can read: the
//! project's files before, one or more `claude -p` runs (the user's prompt or
//! slash command, the scripted model replies for that run) or interactive
//! sessions typed into a terminal (`steps:`, see `tui`), and the expected
//! end state. Every scenario gets a fresh git project and a throw-away HOME;
//! the client talks only to a [`FakeModel`] on 127.0.0.1 and loads this
//! checkout as a plugin, with `RALPH_BIN_DIR` pointing at the binaries cargo
//! just built.
//!
//! Environment:
//! * `RALPH_CLAUDE_BIN`: the client (default `.cc-client/node_modules/.bin/claude`,
//!   installed by `scripts/install-client`). Missing client: skip, or fail when `CI` is set.
//! * `RALPH_E2E_ONLY=substr`: run only scenarios whose file name contains it.
//! * `RALPH_E2E_PENDING=1`: also run scenarios marked `pending` (reported, never failing).
//! * `RALPH_E2E_JOBS=n`: scenarios run at once (default 2).
//! * `RALPH_E2E_KEEP=1`: keep every scenario's temp dir (failed ones are always kept).
//! * `RALPH_E2E_BIN_DIR=dir`: the ralph binaries to test (default: this build's).
//! * `RALPH_E2E_TIMES=1`: print when each scenario's loop started (always
//!   printed for `new_user` scenarios, with when the download landed).
//! * `RALPH_RUNNERS_DIR=dir`: the test runners a scenario `needs` (default
//!   `target/runners`, installed by `scripts/install-runners`). A missing
//!   one: the scenario is skipped, or fails when `CI` is set.

// The scenarios drive the real client through tmux and bubblewrap on a Unix
// host: not built elsewhere (the Windows slice is tests/windows).
#![cfg(unix)]

#[path = "e2e/tui.rs"]
mod tui;

#[path = "e2e/newuser.rs"]
mod newuser;

#[path = "shared/browser.rs"]
mod browser;

use ralph_fake_model::{FakeModel, Lane, Recorded, Reply, Script, content_text};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");
const STOP_HOOK_BIN: &str = env!("CARGO_BIN_EXE_ralph-stop-hook");
const FEEDBACK_PREFIX: &str = "Stop hook feedback:\n";
/// A Stop's `additionalContext`, as the model reads it (in a system reminder).
const CONTEXT_PREFIX: &str = "Stop hook additional context: ";
const STATE_FILE: &str = ".claude/ralph-loop.local.md";
const LOG_FILE: &str = ".claude/ralph-loop.log.jsonl";

// ---------------------------------------------------------------------------
// Scenario files

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// One line: what the scenario shows.
    title: String,
    /// Set while the feature under test is not built yet: why.
    #[serde(default)]
    pending: Option<String>,
    /// Named texts, written `{var.NAME}` anywhere below.
    #[serde(default)]
    vars: BTreeMap<String, String>,
    /// Project files before the first run (path -> content).
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// Commit those files before the first run (a `--parallel` loop needs a
    /// commit to branch its workers' worktrees from).
    #[serde(default)]
    commit: bool,
    /// Install the plugin as a new user does (see `NewUser`) instead of
    /// loading this checkout with `--plugin-dir`.
    #[serde(default)]
    new_user: Option<NewUser>,
    /// The real test runners the project's checks run (`pytest`, `jest`,
    /// `cargo`): `scripts/install-runners` puts them in
    /// `target/runners/bin`, which goes first on the client's PATH.
    #[serde(default)]
    needs: Vec<String>,
    runs: Vec<Run>,
    #[serde(default)]
    expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent switches a scenario file sets one by one, not a state"
)]
struct Run {
    /// A label for messages (default `run N`).
    #[serde(default)]
    name: Option<String>,
    /// What the user types: `claude -p PROMPT`.
    #[serde(default)]
    prompt: Option<String>,
    /// Or: the interactive client in a terminal (tmux), and what the person
    /// at the keyboard does, in order (see `tui::Step`).
    #[serde(default)]
    steps: Vec<tui::Step>,
    /// Add `--continue` (resume the project's last session).
    #[serde(default, rename = "continue")]
    continue_session: bool,
    /// Extra client arguments (e.g. `--output-format stream-json --verbose`).
    #[serde(default)]
    args: Vec<String>,
    /// Extra environment for the client and its hooks (e.g.
    /// `CLAUDE_CODE_MAX_RETRIES: "0"`, so an API error ends the turn at once).
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Run `claude ARGS` as given, in the checkout, with no prompt and no model.
    #[serde(default)]
    raw: bool,
    /// Start this run and go on with the next one without waiting for it.
    #[serde(default)]
    background: bool,
    /// Do not start before this project path exists.
    #[serde(default)]
    wait_for: Option<String>,
    /// Kill the client (like a user's Ctrl-C) once this project path exists.
    #[serde(default)]
    kill_when: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    /// Create this project file once the client has exited (a signal for
    /// another run's scripted tool call).
    #[serde(default)]
    touch_when_done: Option<String>,
    /// Edits the user makes by hand while the run goes on.
    #[serde(default)]
    user_edits: Vec<UserEdit>,
    /// What the model answers, one reply per request of this run.
    #[serde(default)]
    replies: Vec<Reply>,
    /// Separate scripts for requests whose system prompt holds a marker
    /// (subagents, reviewers): `[{name, system_contains, replies}]`.
    #[serde(default)]
    lanes: Vec<Lane>,
    /// After `replies`, the model follows each `--parallel` dispatch it is
    /// fed (see `Script::follow_dispatches`): the main thread's turns then
    /// need no script, however the workers' timing falls.
    #[serde(default)]
    follow_dispatches: bool,
    #[serde(default)]
    expect: RunExpect,
}

/// A new user's install: a git repository holding this checkout's files
/// (tracked and not ignored; no `target/`) is added with `claude plugin
/// marketplace add` and the plugin installed with `claude plugin install
/// ralph@ralph`; cargo is not on PATH and `RALPH_BIN_DIR` is not set; the
/// launcher downloads from a loopback server (`RALPH_RELEASE_URL`) serving
/// what `scripts/release-local` built.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewUser {
    /// `good` (as built) or `corrupt` (the archive altered, its checksum file not).
    release: String,
}

/// The user edits a project file by hand, once `when` exists.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEdit {
    when: String,
    file: String,
    replace: String,
    with: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunExpect {
    /// Exit code (default 0; not checked for killed runs).
    #[serde(default)]
    exit: Option<i32>,
    /// How many replies the model served (default: all of them, none asked for beyond).
    #[serde(default)]
    replies_used: Option<usize>,
    #[serde(default)]
    stdout_contains: Vec<String>,
    #[serde(default)]
    stdout_not_contains: Vec<String>,
    /// Text the user sees: stdout, or with stream-json the system messages and results.
    #[serde(default)]
    shows: Vec<String>,
    #[serde(default)]
    not_shows: Vec<String>,
    /// Substrings of what the model was told in some request of this run.
    #[serde(default)]
    told: Vec<String>,
    /// Substrings that must appear in no request of this run.
    #[serde(default)]
    never_told: Vec<String>,
    /// Per lane (subagents): substrings told in some request of that lane.
    #[serde(default)]
    lanes_told: BTreeMap<String, Vec<String>>,
    /// Number of Stop hook feedback messages the model got in this run.
    #[serde(default)]
    feedback_count: Option<usize>,
    /// Substrings of the feedback messages, found in this order (one per message).
    #[serde(default)]
    feedback_in_order: Vec<String>,
    /// Substrings every feedback message must hold.
    #[serde(default)]
    every_feedback_contains: Vec<String>,
    /// Substrings of tool results the model got in this run.
    #[serde(default)]
    tool_results_contain: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// Project paths that must exist (`*` allowed in the file name).
    #[serde(default)]
    present: Vec<String>,
    /// Project paths that must not exist (`*` allowed in the file name).
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    files: BTreeMap<String, FileExpect>,
    /// The loop state file `.claude/ralph-loop.local.md`.
    #[serde(default)]
    state: Option<StateExpect>,
    /// Entries of `.claude/ralph-loop.log.jsonl`, found in this order; each
    /// lists fields that must be equal (`message` is matched as a substring).
    #[serde(default)]
    log: Vec<BTreeMap<String, Value>>,
    /// How many log entries have each `decision`.
    #[serde(default)]
    log_counts: BTreeMap<String, usize>,
    /// `new_user`: how many times the release archive was downloaded.
    #[serde(default)]
    downloads: Option<usize>,
    /// `new_user`: whether the binaries ended up in
    /// `${CLAUDE_PLUGIN_DATA}/bin/<version>/`.
    #[serde(default)]
    installed: Option<bool>,
    /// The project's git repository at the end.
    #[serde(default)]
    git: Option<GitExpect>,
    /// The loop's HTML report, written after the runs as the user writes it
    /// in a terminal (`ralph report --html FILE`: the agent is refused
    /// `--html`), and drawn by headless Chromium where there is one.
    #[serde(default)]
    report_html: Option<ReportHtmlExpect>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportHtmlExpect {
    /// Substrings of the page's source.
    #[serde(default)]
    contains: Vec<String>,
    /// Colours (`#rrggbb`) the screenshot shows, each in over 20 pixels.
    #[serde(default)]
    screenshot_shows: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GitExpect {
    /// Every local branch, exactly (sorted).
    #[serde(default)]
    branches: Option<Vec<String>>,
    /// How many worktrees (the main one included).
    #[serde(default)]
    worktrees: Option<usize>,
    /// Substrings of `git log --format=%s` of the checked-out branch.
    #[serde(default)]
    log_contains: Vec<String>,
    /// Nothing uncommitted but these paths (`git status --porcelain`).
    #[serde(default)]
    dirty_only: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileExpect {
    #[serde(default)]
    contains: Vec<String>,
    #[serde(default)]
    not_contains: Vec<String>,
    #[serde(default)]
    equals: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateExpect {
    #[serde(default)]
    absent: bool,
    /// Frontmatter fields, compared as text.
    #[serde(default)]
    fields: BTreeMap<String, String>,
    #[serde(default)]
    body_contains: Vec<String>,
}

impl Scenario {
    fn load(path: &Path) -> Result<Scenario, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Through JSON values: serde_yaml_ng wants `!tag` syntax for enums,
        // while a one-key map (`- bash: {...}`) reads better.
        let value: Value =
            serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let scenario: Scenario =
            serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))?;
        scenario
            .check_shape()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(scenario)
    }

    /// A scenario must assert on outcomes, not only on exit codes.
    fn check_shape(&self) -> Result<(), String> {
        if self.runs.is_empty() {
            return Err("no runs".into());
        }
        if let Some(n) = self.needs.iter().find(|n| !RUNNERS.contains(&n.as_str())) {
            return Err(format!(
                "needs {n:?}: scripts/install-runners installs {}",
                RUNNERS.join(", ")
            ));
        }
        for (i, run) in self.runs.iter().enumerate() {
            let kinds = usize::from(run.raw)
                + usize::from(run.prompt.is_some())
                + usize::from(!run.steps.is_empty());
            if kinds != 1 {
                return Err(format!(
                    "run {}: give one of `prompt`, `steps` or `raw: true`",
                    i + 1
                ));
            }
            if !run.steps.is_empty() && (run.background || run.continue_session) {
                return Err(format!(
                    "run {}: an interactive run is neither `background` nor `continue`",
                    i + 1
                ));
            }
            if run.continue_session && i == 0 {
                return Err("the first run cannot `continue`".into());
            }
        }
        let e = &self.expect;
        let project_checks = e.present.len()
            + e.absent.len()
            + e.files.len()
            + e.log.len()
            + e.log_counts.len()
            + usize::from(e.state.is_some())
            + usize::from(e.downloads.is_some())
            + usize::from(e.installed.is_some())
            + usize::from(e.git.is_some());
        let run_checks: usize = self
            .runs
            .iter()
            .map(|r| {
                let x = &r.expect;
                x.stdout_contains.len()
                    + x.stdout_not_contains.len()
                    + x.shows.len()
                    + x.not_shows.len()
                    + x.told.len()
                    + x.never_told.len()
                    + x.lanes_told.values().map(Vec::len).sum::<usize>()
                    + x.feedback_in_order.len()
                    + x.every_feedback_contains.len()
                    + x.tool_results_contain.len()
                    + usize::from(x.feedback_count.is_some())
            })
            .sum();
        if project_checks + run_checks == 0 {
            return Err("asserts nothing beyond exit codes".into());
        }
        Ok(())
    }
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(CHECKOUT).join("tests/scenarios");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

// ---------------------------------------------------------------------------
// Running

struct Sandbox {
    root: PathBuf,
    project: PathBuf,
    home: PathBuf,
    vars: BTreeMap<String, String>,
    /// Set for a `new_user` scenario: the plugin is installed, not loaded
    /// with `--plugin-dir`.
    new_user: Option<newuser::Installed>,
    /// Set for a scenario that `needs` test runners: their folder, first
    /// on the client's PATH.
    runners: Option<PathBuf>,
}

impl Sandbox {
    /// Where ralph keeps this project's loop: the default data folder
    /// (`~/.claude/ralph`) of the sandbox's HOME.
    fn loop_paths(&self) -> ralph_core::paths::LoopPaths {
        let data = self.home.join(".claude").join("ralph");
        ralph_core::paths::LoopPaths::in_data_dir(&data, &self.project)
    }

    fn new(name: &str, vars: &BTreeMap<String, String>) -> Sandbox {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let root =
            std::env::temp_dir().join(format!("ralph-e2e-{name}-{}-{stamp}", std::process::id()));
        let project = root.join("project");
        let home = root.join("home");
        fs::create_dir_all(&project).expect("create project dir");
        fs::create_dir_all(&home).expect("create home dir");
        Sandbox {
            root,
            project,
            home,
            vars: vars.clone(),
            new_user: None,
            runners: None,
        }
    }

    fn subst(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (k, v) in &self.vars {
            s = s.replace(&format!("{{var.{k}}}"), v);
        }
        if s.contains("{loop_session}") {
            s = s.replace("{loop_session}", &self.loop_session());
        }
        s.replace("{project}", &self.project.to_string_lossy())
            .replace("{home}", &self.home.to_string_lossy())
            .replace("{checkout}", CHECKOUT)
    }

    /// The session that owns the project's loop now (its state's
    /// `session_id`), for `--resume {loop_session}`.
    fn loop_session(&self) -> String {
        let state = fs::read_to_string(self.project.join(STATE_FILE)).unwrap_or_default();
        state
            .lines()
            .find_map(|l| l.strip_prefix("session_id:"))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_default()
    }

    fn subst_value(&self, v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.subst(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.subst_value(x)).collect()),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, x)| (k, self.subst_value(x)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// The runners `scripts/install-runners` installs, as a scenario `needs` them.
const RUNNERS: [&str; 3] = ["pytest", "jest", "cargo"];

/// Where `scripts/install-runners` put the runners (`RALPH_RUNNERS_DIR`,
/// else `target/runners`): the folder of their commands.
fn runners_bin() -> PathBuf {
    std::env::var_os("RALPH_RUNNERS_DIR")
        .map_or_else(|| Path::new(CHECKOUT).join("target/runners"), PathBuf::from)
        .join("bin")
}

/// The runners `needs` names that are not installed.
fn missing_runners(needs: &[String]) -> Vec<&str> {
    let bin = runners_bin();
    needs
        .iter()
        .map(String::as_str)
        .filter(|n| !bin.join(n).is_file())
        .collect()
}

fn claude_bin() -> Option<PathBuf> {
    let path = std::env::var_os("RALPH_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(CHECKOUT).join(".cc-client/node_modules/.bin/claude"));
    path.exists().then_some(path)
}

/// The binaries the plugin's launcher runs: the ones cargo just built, or
/// `RALPH_E2E_BIN_DIR` (e.g. a release build, or a deliberately broken hook
/// to check that the scenarios notice).
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RALPH_E2E_BIN_DIR") {
        return PathBuf::from(dir);
    }
    Path::new(STOP_HOOK_BIN)
        .parent()
        .expect("binary has a parent dir")
        .to_path_buf()
}

/// The environment of every client run: nothing of the machine leaks in.
/// A new user's has no RALPH_BIN_DIR and no cargo: the plugin downloads
/// the release it is served.
fn client_env(sandbox: &Sandbox, port: u16, api_key: &str) -> Vec<(String, String)> {
    if let Some(installed) = &sandbox.new_user {
        return installed.env(&sandbox.home, port, api_key);
    }
    // The client the hooks start for `--review` (a user's is on PATH).
    let reviewer_client = claude_bin()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    let path = match &sandbox.runners {
        Some(dir) => format!("{}:{path}", dir.display()),
        None => path,
    };
    let more = [
        ("RALPH_BIN_DIR", bin_dir().to_string_lossy().into_owned()),
        ("RALPH_CLAUDE", reviewer_client),
    ];
    env_of(&path, &sandbox.home, port, api_key, more)
}

/// A client's whole environment: `path`, `home`, the scripted model at
/// `port`, and `more`.
fn env_of(
    path: &str,
    home: &Path,
    port: u16,
    api_key: &str,
    more: impl IntoIterator<Item = (&'static str, String)>,
) -> Vec<(String, String)> {
    [
        ("PATH", path.to_string()),
        ("HOME", home.to_string_lossy().into_owned()),
        ("LANG", "C.UTF-8".into()),
        ("IS_SANDBOX", "1".into()),
        ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
        ("ANTHROPIC_API_KEY", api_key.into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
    ]
    .into_iter()
    .chain(more)
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn client_command(claude: &Path, sandbox: &Sandbox, port: u16) -> Command {
    let mut cmd = Command::new(claude);
    cmd.env_clear()
        .envs(client_env(sandbox, port, "x"))
        .stdin(Stdio::null());
    cmd
}

struct Started {
    index: usize,
    label: String,
    child: Child,
    model: FakeModel,
    started: Instant,
    timeout: Duration,
    kill_when: Option<PathBuf>,
    project: PathBuf,
    edits: Vec<UserEdit>,
    edit_errors: Vec<String>,
    stdout_path: PathBuf,
    stderr_path: PathBuf,
    lanes: Vec<Lane>,
}

struct Finished {
    index: usize,
    /// Run in the interactive client: `stdout` holds the screen.
    interactive: bool,
    label: String,
    exit: Option<i32>,
    killed: Option<String>,
    edit_errors: Vec<String>,
    stdout: String,
    stderr: String,
    requests: Vec<Recorded>,
    replies_used: usize,
    replies_total: usize,
    exhausted: usize,
    /// Lanes whose script was not used up: (name, used, total).
    lanes_unused: Vec<(String, usize, usize)>,
    /// Each lane's requests, by lane name.
    lane_requests: BTreeMap<String, Vec<Recorded>>,
}

impl Started {
    /// `Some` once the client has exited or was killed.
    fn poll(&mut self) -> Option<Option<String>> {
        self.apply_user_edits();
        if let Ok(Some(_)) = self.child.try_wait() {
            return Some(None);
        }
        let why = if self.started.elapsed() > self.timeout {
            Some(format!("timed out after {}s", self.timeout.as_secs()))
        } else if self.model.exhausted_requests() >= 2 {
            Some("the model was asked more often than the script has replies (the loop did not end?)".to_string())
        } else if self.kill_when.as_ref().is_some_and(|p| p.exists()) {
            Some("kill_when".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return Some(Some(why));
        }
        None
    }

    fn apply_user_edits(&mut self) {
        let (due, later): (Vec<UserEdit>, Vec<UserEdit>) = self
            .edits
            .drain(..)
            .partition(|e| self.project.join(&e.when).exists());
        self.edits = later;
        for e in due {
            let path = self.project.join(&e.file);
            match fs::read_to_string(&path) {
                Ok(text) if text.contains(&e.replace) => {
                    if let Err(err) = fs::write(&path, text.replacen(&e.replace, &e.with, 1)) {
                        self.edit_errors
                            .push(format!("user edit of {}: {err}", e.file));
                    }
                }
                Ok(text) => self.edit_errors.push(format!(
                    "user edit: {} does not contain {:?}: {}",
                    e.file,
                    e.replace,
                    short(&text)
                )),
                Err(err) => self
                    .edit_errors
                    .push(format!("user edit: cannot read {}: {err}", e.file)),
            }
        }
    }

    fn finish(mut self, killed: Option<String>) -> Finished {
        for e in &self.edits {
            self.edit_errors.push(format!(
                "user edit of {} never happened: {} never appeared",
                e.file, e.when
            ));
        }
        let exit = self.child.wait().ok().and_then(|s| s.code());
        Finished {
            index: self.index,
            interactive: false,
            label: self.label,
            exit,
            killed,
            edit_errors: self.edit_errors,
            stdout: fs::read_to_string(&self.stdout_path).unwrap_or_default(),
            stderr: fs::read_to_string(&self.stderr_path).unwrap_or_default(),
            requests: self.model.main_requests(),
            replies_used: self.model.replies_used(),
            replies_total: self.model.replies_total(),
            exhausted: self.model.exhausted_requests(),
            lanes_unused: lanes_unused(&self.model, &self.lanes),
            lane_requests: lane_requests(&self.model, &self.lanes),
        }
    }

    fn wait(mut self) -> Finished {
        loop {
            if let Some(killed) = self.poll() {
                return self.finish(killed);
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

fn start_run(claude: &Path, sandbox: &Sandbox, index: usize, run: &Run) -> Result<Started, String> {
    let label = run
        .name
        .clone()
        .unwrap_or_else(|| format!("run {}", index + 1));
    if let Some(path) = &run.wait_for {
        let target = sandbox.project.join(path);
        let t0 = Instant::now();
        while !target.exists() {
            if t0.elapsed() > Duration::from_secs(90) {
                return Err(format!("{label}: waited 90s for {path} to exist"));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
    let script = script_for(run, sandbox);
    let model = FakeModel::start(script).map_err(|e| format!("{label}: fake model: {e}"))?;
    let mut cmd = client_command(claude, sandbox, model.port());
    cmd.envs(&run.env);
    let args: Vec<String> = run.args.iter().map(|a| sandbox.subst(a)).collect();
    if run.raw {
        cmd.current_dir(CHECKOUT).args(&args);
    } else {
        cmd.current_dir(&sandbox.project);
        cmd.arg("-p")
            .arg(sandbox.subst(run.prompt.as_deref().unwrap_or("")));
        if run.continue_session {
            cmd.arg("--continue");
        }
        cmd.args(&args);
        if sandbox.new_user.is_none() {
            cmd.arg("--plugin-dir").arg(CHECKOUT);
        }
        cmd.arg("--dangerously-skip-permissions");
    }
    let stdout_path = sandbox.root.join(format!("run{}.stdout", index + 1));
    let stderr_path = sandbox.root.join(format!("run{}.stderr", index + 1));
    let out = fs::File::create(&stdout_path).map_err(|e| e.to_string())?;
    let err = fs::File::create(&stderr_path).map_err(|e| e.to_string())?;
    let child = cmd
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("{label}: cannot start {}: {e}", claude.display()))?;
    Ok(Started {
        index,
        label,
        child,
        model,
        started: Instant::now(),
        timeout: Duration::from_secs(run.timeout_secs.unwrap_or(150)),
        kill_when: run.kill_when.as_ref().map(|p| sandbox.project.join(p)),
        project: sandbox.project.clone(),
        edits: run
            .user_edits
            .iter()
            .map(|e| UserEdit {
                // `{state}`: the loop's own state, outside the project.
                file: e
                    .file
                    .replace("{state}", &sandbox.loop_paths().state.to_string_lossy()),
                ..e.clone()
            })
            .collect(),
        edit_errors: Vec::new(),
        stdout_path,
        stderr_path,
        lanes: run.lanes.clone(),
    })
}

/// The run's script, placeholders filled in.
fn script_for(run: &Run, sandbox: &Sandbox) -> Script {
    let script = Script {
        replies: run.replies.clone(),
        lanes: run.lanes.clone(),
        follow_dispatches: run.follow_dispatches,
    };
    let v = sandbox.subst_value(serde_json::to_value(&script).expect("script to json"));
    serde_json::from_value(v).expect("script from json")
}

/// Each lane's requests, by name.
fn lane_requests(model: &FakeModel, lanes: &[Lane]) -> BTreeMap<String, Vec<Recorded>> {
    lanes
        .iter()
        .map(|l| (l.name.clone(), model.requests_in(Some(&l.name))))
        .collect()
}

/// Lanes whose scripted replies were not all served.
fn lanes_unused(model: &FakeModel, lanes: &[Lane]) -> Vec<(String, usize, usize)> {
    lanes
        .iter()
        .map(|l| {
            let name = Some(l.name.as_str());
            (
                l.name.clone(),
                model.replies_used_in(name),
                model.replies_total_in(name),
            )
        })
        .filter(|(_, used, total)| used != total)
        .collect()
}

/// One run in the interactive client: start it in tmux, do the steps, read
/// the screen, end it. Blocks until done.
fn run_interactive(claude: &Path, sandbox: &Sandbox, index: usize, run: &Run) -> Finished {
    let label = run
        .name
        .clone()
        .unwrap_or_else(|| format!("run {} (interactive)", index + 1));
    let script = script_for(run, sandbox);
    let mut finished = Finished {
        index,
        interactive: true,
        label: label.clone(),
        exit: None,
        killed: None,
        edit_errors: Vec::new(),
        stdout: String::new(),
        stderr: String::new(),
        requests: Vec::new(),
        replies_used: 0,
        replies_total: script.replies.len(),
        exhausted: 0,
        lanes_unused: Vec::new(),
        lane_requests: BTreeMap::new(),
    };
    let model = match FakeModel::start(script) {
        Ok(m) => m,
        Err(e) => {
            finished.killed = Some(format!("fake model: {e}"));
            return finished;
        }
    };
    let answers = sandbox.home.join(".claude.json");
    if let Err(e) = fs::write(&answers, tui::first_run_answers(&sandbox.project)) {
        finished.killed = Some(format!("{}: {e}", answers.display()));
        return finished;
    }
    let mut args: Vec<String> = run.args.iter().map(|a| sandbox.subst(a)).collect();
    // A new user's plugin is the installed one (scenario 90: the README's
    // install, then the interactive client).
    if sandbox.new_user.is_none() {
        args.extend(["--plugin-dir".to_string(), CHECKOUT.to_string()]);
    }
    args.push("--dangerously-skip-permissions".to_string());
    let mut env = client_env(sandbox, model.port(), tui::API_KEY);
    env.extend(run.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let name = format!(
        "{}-{index}",
        sandbox
            .root
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
    );
    let timeout = Duration::from_secs(run.timeout_secs.unwrap_or(90));
    let outcome = tui::Tui::start(&name, claude, &args, &env, &sandbox.project).and_then(|t| {
        let done = t
            .wait_ready()
            .and_then(|()| do_steps(&t, &run.steps, sandbox, &model, timeout));
        // Let the last hook's message reach the screen before reading it.
        thread::sleep(Duration::from_millis(1500));
        finished.stdout = t.everything_shown();
        done
    });
    finished.killed = outcome.err();
    finished.requests = model.main_requests();
    finished.replies_used = model.replies_used();
    finished.exhausted = model.exhausted_requests();
    finished.lanes_unused = lanes_unused(&model, &run.lanes);
    finished.lane_requests = lane_requests(&model, &run.lanes);
    let _ = fs::write(
        sandbox.root.join(format!("run{}.screen", index + 1)),
        &finished.stdout,
    );
    finished
}

fn do_steps(
    t: &tui::Tui,
    steps: &[tui::Step],
    sandbox: &Sandbox,
    model: &FakeModel,
    timeout: Duration,
) -> Result<(), String> {
    use tui::Step;
    for step in steps {
        match step {
            Step::Type(text) => t.type_line(&sandbox.subst(text))?,
            Step::Key(key) => t.key(key)?,
            Step::WaitScreen(text) => {
                let want = tui::squash(&sandbox.subst(text));
                t.wait(&format!("the screen to show {want:?}"), timeout, |s| {
                    tui::squash(s).contains(&want)
                })?
            }
            Step::WaitLog(fields) => {
                let log = sandbox.project.join(LOG_FILE);
                t.wait(&format!("a log entry {fields:?}"), timeout, |_| {
                    read_log(&log).iter().any(|e| log_entry_matches(e, fields))
                })?
            }
            Step::WaitReplies(n) => t.wait(
                &format!("the model to have served {n} replies"),
                timeout,
                |_| model.replies_used() >= *n,
            )?,
            Step::WaitFile(path) => {
                let target = sandbox.project.join(path);
                t.wait(&format!("{path} to exist"), timeout, |_| target.exists())?
            }
        }
    }
    Ok(())
}

fn git_init(dir: &Path) -> Result<(), String> {
    let status = Command::new("git")
        .args(["init", "-q", "--initial-branch=master"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("git init: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| "git init failed".to_string())
}

fn git_commit_all(dir: &Path) -> Result<(), String> {
    for args in [
        &["add", "-A"][..],
        &[
            "-c",
            "user.name=e2e",
            "-c",
            "user.email=e2e@localhost",
            "commit",
            "-q",
            "-m",
            "start",
        ][..],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!("git {} failed", args.join(" ")));
        }
    }
    Ok(())
}

/// `git ARGS` in `dir`: its stdout.
fn git_out(dir: &Path, args: &[&str]) -> String {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn check_git(g: &GitExpect, root: &Path, failures: &mut Vec<String>) {
    if let Some(want) = &g.branches {
        let mut have: Vec<String> = git_out(root, &["branch", "--format=%(refname:short)"])
            .lines()
            .map(str::to_string)
            .collect();
        have.sort();
        let mut want = want.clone();
        want.sort();
        if have != want {
            failures.push(format!("git branches: {have:?}, expected {want:?}"));
        }
    }
    if let Some(n) = g.worktrees {
        let list = git_out(root, &["worktree", "list"]);
        if list.lines().count() != n {
            failures.push(format!("git worktrees: expected {n}, found:\n{list}"));
        }
    }
    let log = git_out(root, &["log", "--format=%s"]);
    for want in &g.log_contains {
        if !log.contains(want.as_str()) {
            failures.push(format!("git log lacks {want:?}:\n{log}"));
        }
    }
    if let Some(allowed) = &g.dirty_only {
        let status = git_out(root, &["status", "--porcelain", "--untracked-files=all"]);
        for line in status.lines() {
            let path = line.get(3..).unwrap_or("");
            if !allowed
                .iter()
                .any(|a| path == a || path.starts_with(a.as_str()))
            {
                failures.push(format!("git status: unexpected change {line:?}"));
            }
        }
    }
}

/// Runs one scenario; returns the failures (empty when it passed).
fn run_scenario(claude: &Path, name: &str, scenario: &Scenario) -> (Vec<String>, PathBuf) {
    let mut sandbox = Sandbox::new(name, &scenario.vars);
    let mut failures = Vec::new();
    if let Err(e) = git_init(&sandbox.project) {
        return (vec![e], sandbox.root);
    }
    if !scenario.needs.is_empty() {
        sandbox.runners = Some(runners_bin());
    }
    if let Some(new_user) = &scenario.new_user {
        match newuser::install(
            claude,
            &sandbox.root,
            &sandbox.home,
            &sandbox.project,
            new_user,
        ) {
            Ok(installed) => sandbox.new_user = Some(installed),
            Err(e) => return (vec![format!("new user install: {e}")], sandbox.root),
        }
    }
    for (path, content) in &scenario.files {
        let target = sandbox.project.join(path);
        if let Some(parent) = target.parent() {
            let _ = fs::create_dir_all(parent);
        }
        if let Err(e) = fs::write(&target, sandbox.subst(content)) {
            return (vec![format!("write {path}: {e}")], sandbox.root);
        }
    }
    if scenario.commit
        && let Err(e) = git_commit_all(&sandbox.project)
    {
        return (vec![e], sandbox.root);
    }

    // A new user's first session is timed (RALPH_E2E_TIMES=1: every scenario's).
    let watch = (sandbox.new_user.is_some() || std::env::var_os("RALPH_E2E_TIMES").is_some())
        .then(|| newuser::Watch::start(&sandbox.home, &sandbox.project));
    let mut background: Vec<Started> = Vec::new();
    let mut finished: Vec<Finished> = Vec::new();
    for (i, run) in scenario.runs.iter().enumerate() {
        if !run.steps.is_empty() {
            finished.push(run_interactive(claude, &sandbox, i, run));
            continue;
        }
        match start_run(claude, &sandbox, i, run) {
            Ok(started) if run.background => background.push(started),
            Ok(started) => {
                finished.push(started.wait());
                if let Some(path) = &run.touch_when_done
                    && let Err(e) = fs::write(sandbox.project.join(path), "")
                {
                    failures.push(format!("touch {path}: {e}"));
                }
            }
            Err(e) => {
                failures.push(e);
                break;
            }
        }
    }
    for started in background {
        finished.push(started.wait());
    }
    finished.sort_by_key(|f| f.index);
    if let Some(watch) = watch {
        eprintln!("         {name}: {}", watch.report());
    }

    for f in &finished {
        check_run(&scenario.runs[f.index], f, &sandbox, &mut failures);
    }
    check_project(&scenario.expect, &sandbox, &mut failures);
    (failures, sandbox.root)
}

// ---------------------------------------------------------------------------
// Checking

/// What the model was told in one request: every message's text, tool
/// results included.
fn told_text(r: &Recorded) -> String {
    let mut out = String::new();
    if let Some(messages) = r.body.get("messages").and_then(Value::as_array) {
        for m in messages {
            out.push_str(&content_text(m.get("content").unwrap_or(&Value::Null)));
            out.push('\n');
        }
    }
    out
}

/// The Stop hook feedback messages of a run, in order: each one is the last
/// user message of the request that followed a feed. A feed by block: the
/// pinned client sends it as it is (`Stop hook feedback:\nREASON`); 2.1.332
/// wraps it in a `<system-reminder>` after a preamble on hook output
/// (measured 2026-12-01, docs/client-measurements.md). A feed by
/// `additionalContext` (what ralph prints for 2.1.328 on): both send
/// `<system-reminder>\nStop hook additional context: REASON\n</system-reminder>`.
/// All three are read.
fn feedbacks(f: &Finished) -> Vec<String> {
    f.requests
        .iter()
        .filter_map(|r| feedback(&r.last_user_text()))
        .collect()
}

/// The feed in one last user message, either form (see [`feedbacks`]).
fn feedback(text: &str) -> Option<String> {
    const REMINDER: &str = "<system-reminder>\n";
    const END: &str = "\n</system-reminder>";
    // The reminder may follow other blocks of the same user message (the
    // client gathers what it adds between two model turns).
    let context = format!("{REMINDER}{CONTEXT_PREFIX}");
    if let Some(at) = text.find(&context) {
        let body = &text[at + context.len()..];
        let end = body.rfind(END).unwrap_or(body.len());
        return Some(body[..end].to_string());
    }
    let at = text.find(FEEDBACK_PREFIX)?;
    let body = &text[at + FEEDBACK_PREFIX.len()..];
    if at == 0 {
        Some(body.to_string())
    } else if text.starts_with(REMINDER) {
        Some(body.strip_suffix(END).unwrap_or(body).to_string())
    } else {
        None
    }
}

fn tool_results(f: &Finished) -> Vec<String> {
    let Some(last) = f.requests.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for m in last
        .body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for b in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                out.push(content_text(b.get("content").unwrap_or(&Value::Null)));
            }
        }
    }
    out
}

/// What a user sees: plain stdout, or for stream-json output the system
/// messages, results and assistant text.
fn visible(stdout: &str) -> String {
    let mut out = String::new();
    let mut any_json = false;
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        any_json = true;
        for key in ["content", "result", "text"] {
            if let Some(s) = v.get(key).and_then(Value::as_str) {
                out.push_str(s);
                out.push('\n');
            }
        }
        if v.get("type").and_then(Value::as_str) == Some("assistant")
            && let Some(c) = v.pointer("/message/content")
        {
            out.push_str(&content_text(c));
            out.push('\n');
        }
    }
    if any_json { out } else { stdout.to_string() }
}

fn short(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() > 1500 {
        let head: String = s.chars().take(1500).collect();
        format!("{head}…")
    } else {
        s.to_string()
    }
}

fn check_run(run: &Run, f: &Finished, sandbox: &Sandbox, failures: &mut Vec<String>) {
    let x = &run.expect;
    let sub = |v: &Vec<String>| -> Vec<String> { v.iter().map(|s| sandbox.subst(s)).collect() };
    for e in &f.edit_errors {
        failures.push(format!("{}: {e}", f.label));
    }
    let l = &f.label;
    match &f.killed {
        Some(why) if why == "kill_when" => {}
        Some(why) => failures.push(format!(
            "{l}: client killed: {why}\n  stdout: {}\n  stderr: {}",
            short(&f.stdout),
            short(&f.stderr)
        )),
        None if f.interactive => {}
        None => {
            let want = x.exit.unwrap_or(0);
            if f.exit != Some(want) {
                failures.push(format!(
                    "{l}: exit {:?}, expected {want}\n  stdout: {}\n  stderr: {}",
                    f.exit,
                    short(&f.stdout),
                    short(&f.stderr)
                ));
            }
        }
    }
    if !run.raw {
        match x.replies_used {
            Some(n) if f.replies_used != n => failures.push(format!(
                "{l}: the model served {} replies, expected exactly {n}",
                f.replies_used
            )),
            None if f.killed.is_none()
                && f.replies_used != f.replies_total
                && !(run.follow_dispatches && f.replies_used > f.replies_total) =>
            {
                failures.push(format!(
                    "{l}: the model served {} of {} scripted replies",
                    f.replies_used, f.replies_total
                ))
            }
            _ => {}
        }
        if f.killed.is_none() {
            for (name, used, total) in &f.lanes_unused {
                failures.push(format!(
                    "{l}: lane {name}: the model served {used} of {total} scripted replies"
                ));
            }
        }
        if f.exhausted > 0 && f.killed.is_none() {
            failures.push(format!(
                "{l}: the model was asked {} more time(s) after the script ended",
                f.exhausted
            ));
        }
    }
    for s in &sub(&x.stdout_contains) {
        if !f.stdout.contains(s.as_str()) {
            failures.push(format!(
                "{l}: stdout lacks {s:?}\n  stdout: {}",
                short(&f.stdout)
            ));
        }
    }
    for s in &sub(&x.stdout_not_contains) {
        if f.stdout.contains(s.as_str()) {
            failures.push(format!("{l}: stdout must not contain {s:?}"));
        }
    }
    // On a terminal the client wraps and indents long lines itself, so the
    // screen and the expected texts are compared with whitespace squashed.
    let shown = |v: &Vec<String>| -> Vec<String> {
        sub(v)
            .into_iter()
            .map(|s| if f.interactive { tui::squash(&s) } else { s })
            .collect()
    };
    let seen = if f.interactive {
        tui::squash(&f.stdout)
    } else {
        visible(&f.stdout)
    };
    for s in &shown(&x.shows) {
        if !seen.contains(s.as_str()) {
            failures.push(format!(
                "{l}: the user is not shown {s:?}\n  shown: {}",
                short(&seen)
            ));
        }
    }
    for s in &shown(&x.not_shows) {
        if seen.contains(s.as_str()) {
            failures.push(format!("{l}: the user must not be shown {s:?}"));
        }
    }
    let told: Vec<String> = f.requests.iter().map(told_text).collect();
    for s in &sub(&x.told) {
        if !told.iter().any(|t| t.contains(s.as_str())) {
            failures.push(format!("{l}: the model was never told {s:?}"));
        }
    }
    for s in &sub(&x.never_told) {
        if let Some(i) = told.iter().position(|t| t.contains(s.as_str())) {
            failures.push(format!("{l}: the model was told {s:?} (request {})", i + 1));
        }
    }
    for (lane, wanted) in &x.lanes_told {
        let told: Vec<String> = f
            .lane_requests
            .get(lane)
            .map(|rs| rs.iter().map(told_text).collect())
            .unwrap_or_default();
        for s in &sub(wanted) {
            if !told.iter().any(|t| t.contains(s.as_str())) {
                failures.push(format!("{l}: lane {lane} was never told {s:?}"));
            }
        }
    }
    let fb = feedbacks(f);
    if let Some(n) = x.feedback_count
        && fb.len() != n
    {
        failures.push(format!(
            "{l}: {} Stop hook feedback message(s), expected {n}: {:?}",
            fb.len(),
            fb.iter().map(|m| short(m)).collect::<Vec<_>>()
        ));
    }
    let mut at = 0;
    for s in &sub(&x.feedback_in_order) {
        match fb[at.min(fb.len())..]
            .iter()
            .position(|m| m.contains(s.as_str()))
        {
            Some(p) => at += p + 1,
            None => {
                failures.push(format!(
                    "{l}: no feedback message (in order) contains {s:?}; feedbacks: {:?}",
                    fb.iter().map(|m| short(m)).collect::<Vec<_>>()
                ));
                break;
            }
        }
    }
    for s in &sub(&x.every_feedback_contains) {
        for (i, m) in fb.iter().enumerate() {
            if !m.contains(s.as_str()) {
                failures.push(format!("{l}: feedback {} lacks {s:?}: {}", i + 1, short(m)));
            }
        }
    }
    let results = tool_results(f);
    for s in &sub(&x.tool_results_contain) {
        if !results.iter().any(|r| r.contains(s.as_str())) {
            failures.push(format!(
                "{l}: no tool result contains {s:?}; results: {results:?}"
            ));
        }
    }
}

/// Paths matching `pattern` under `root`; `*` may appear in the file name.
fn matching(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let full = root.join(pattern);
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    if !name.contains('*') {
        return if full.symlink_metadata().is_ok() {
            vec![full]
        } else {
            Vec::new()
        };
    }
    let dir = full.parent().unwrap_or(root);
    let parts: Vec<&str> = name.split('*').collect();
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = entry.file_name().to_string_lossy().to_string();
        if glob_match(&parts, &n) {
            found.push(entry.path());
        }
    }
    found
}

fn glob_match(parts: &[&str], name: &str) -> bool {
    let (first, rest) = match parts.split_first() {
        Some(x) => x,
        None => return name.is_empty(),
    };
    let Some(mut tail) = name.strip_prefix(first) else {
        return false;
    };
    for (i, p) in rest.iter().enumerate() {
        if i == rest.len() - 1 {
            return tail.ends_with(p);
        }
        match tail.find(p) {
            Some(pos) => tail = &tail[pos + p.len()..],
            None => return false,
        }
    }
    tail.is_empty()
}

/// Frontmatter `key: value` lines of the state file, and its body.
fn parse_state(text: &str) -> Option<(BTreeMap<String, String>, String)> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    let fields = rest[..end]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .unwrap_or(v);
            (k.trim().to_string(), v.to_string())
        })
        .collect();
    let body = rest[end + 4..].to_string();
    Some((fields, body))
}

fn check_project(e: &Expect, sandbox: &Sandbox, failures: &mut Vec<String>) {
    let root = &sandbox.project;
    if e.downloads.is_some() || e.installed.is_some() {
        match &sandbox.new_user {
            None => failures.push("`downloads`/`installed` need `new_user`".into()),
            Some(installed) => {
                newuser::check(installed, &sandbox.home, e.downloads, e.installed, failures)
            }
        }
    }
    if let Some(g) = &e.git {
        check_git(g, root, failures);
    }
    if let Some(r) = &e.report_html {
        check_report_html(r, sandbox, failures);
    }
    for p in &e.present {
        if matching(root, p).is_empty() {
            failures.push(format!("{p} should exist"));
        }
    }
    for p in &e.absent {
        let m = matching(root, p);
        if !m.is_empty() {
            failures.push(format!("{p} should not exist (found {m:?})"));
        }
    }
    for (p, fe) in &e.files {
        let found = matching(root, p);
        if found.len() > 1 {
            failures.push(format!("{p} matches more than one file: {found:?}"));
            continue;
        }
        let Some(Ok(text)) = found.first().map(fs::read_to_string) else {
            failures.push(format!("{p} cannot be read"));
            continue;
        };
        for s in &fe.contains {
            let s = sandbox.subst(s);
            if !text.contains(&s) {
                failures.push(format!("{p} lacks {s:?}; it holds: {}", short(&text)));
            }
        }
        for s in &fe.not_contains {
            if text.contains(s.as_str()) {
                failures.push(format!("{p} must not contain {s:?}"));
            }
        }
        if let Some(want) = &fe.equals
            && &text != want
        {
            failures.push(format!("{p} is {text:?}, expected {want:?}"));
        }
    }
    if let Some(se) = &e.state {
        // The loop's own state; the project's copy must say the same.
        let path = sandbox.loop_paths().state;
        // The state ends with its seal line; the copy is the text before it.
        let state =
            fs::read_to_string(&path).map(|t| ralph_core::seal::split_inline(&t).0.to_string());
        let mirror = fs::read_to_string(root.join(STATE_FILE)).ok();
        if state.as_ref().ok() != mirror.as_ref() {
            failures.push(format!(
                "{STATE_FILE} is not a copy of the loop's state {}: {:?}",
                path.display(),
                mirror.as_deref().map(short)
            ));
        }
        match (state, se.absent) {
            (Ok(text), true) => failures.push(format!(
                "{STATE_FILE} should be gone; it holds: {}",
                short(&text)
            )),
            (Err(_), true) => {}
            (Err(_), false) => failures.push(format!("{STATE_FILE} should exist")),
            (Ok(text), false) => match parse_state(&text) {
                None => failures.push(format!("{STATE_FILE} has no frontmatter: {text:?}")),
                Some((fields, body)) => {
                    for (k, v) in &se.fields {
                        if fields.get(k) != Some(v) {
                            failures.push(format!(
                                "{STATE_FILE}: {k} is {:?}, expected {v:?}",
                                fields.get(k)
                            ));
                        }
                    }
                    for s in &se.body_contains {
                        if !body.contains(s.as_str()) {
                            failures.push(format!("{STATE_FILE} body lacks {s:?}"));
                        }
                    }
                }
            },
        }
    }
    if e.log.is_empty() && e.log_counts.is_empty() {
        return;
    }
    let entries = read_log(&root.join(LOG_FILE));
    for (i, entry) in entries.iter().enumerate() {
        let ok = entry.is_object()
            && ["time", "session", "iteration", "decision", "reason"]
                .iter()
                .all(|k| entry.get(k).is_some());
        if !ok {
            failures.push(format!(
                "{LOG_FILE} line {} is not a full entry: {entry}",
                i + 1
            ));
        }
    }
    let mut at = 0;
    for want in &e.log {
        let hit = entries[at.min(entries.len())..]
            .iter()
            .position(|entry| log_entry_matches(entry, want));
        match hit {
            Some(p) => at += p + 1,
            None => {
                failures.push(format!(
                    "{LOG_FILE}: no entry (in order) matches {}; entries:\n  {}",
                    serde_json::to_string(want).unwrap_or_default(),
                    entries
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join("\n  ")
                ));
                break;
            }
        }
    }
    for (key, n) in &e.log_counts {
        // `decision`, or `decision/reason`.
        let (decision, reason) = key.split_once('/').unwrap_or((key, ""));
        let field = |x: &Value, k: &str| x.get(k).and_then(Value::as_str).map(str::to_string);
        let have = entries
            .iter()
            .filter(|x| field(x, "decision").as_deref() == Some(decision))
            .filter(|x| reason.is_empty() || field(x, "reason").as_deref() == Some(reason))
            .count();
        if have != *n {
            failures.push(format!("{LOG_FILE}: {have} `{key}` entries, expected {n}"));
        }
    }
}

/// `ralph report --html` in the project, with the sessions' HOME (where the
/// loop's folder is), and the page looked at.
fn check_report_html(r: &ReportHtmlExpect, sandbox: &Sandbox, failures: &mut Vec<String>) {
    let page = sandbox.root.join("report.html");
    let out = Command::new(bin_dir().join("ralph"))
        .args(["report", "--html"])
        .arg(&page)
        .current_dir(&sandbox.project)
        .env("HOME", &sandbox.home)
        .env("CLAUDE_PROJECT_DIR", &sandbox.project)
        .env_remove("RALPH_DATA_DIR")
        .output();
    let html = match out {
        Ok(o) if o.status.success() => fs::read_to_string(&page).unwrap_or_default(),
        Ok(o) => {
            return failures.push(format!(
                "ralph report --html failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Err(e) => return failures.push(format!("ralph report --html: {e}")),
    };
    for s in &r.contains {
        if !html.contains(s.as_str()) {
            failures.push(format!("the HTML report lacks {s:?}"));
        }
    }
    if r.screenshot_shows.is_empty() {
        return;
    }
    let Some(browser) = browser::browser() else {
        eprintln!("SKIPPED: no headless Chromium (apt-get install chromium) to look at the report");
        return;
    };
    let colours: Vec<[u8; 3]> = r
        .screenshot_shows
        .iter()
        .map(|hex| {
            let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0);
            [(v >> 16) as u8, (v >> 8) as u8, v as u8]
        })
        .collect();
    let shot = sandbox.root.join("report.png");
    match browser::colours_in_screenshot(&browser, &page, &shot, &colours) {
        Err(e) => failures.push(e),
        Ok(found) => {
            for (hex, n) in r.screenshot_shows.iter().zip(found) {
                if n <= 20 {
                    failures.push(format!(
                        "the report's screenshot ({}) shows {hex} in {n} pixels",
                        shot.display()
                    ));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn scenario_files_parse_and_assert_outcomes() {
    let files = scenario_files();
    assert!(
        files.len() >= 10,
        "expected at least 10 scenarios, found {}",
        files.len()
    );
    let errors: Vec<String> = files
        .iter()
        .filter_map(|p| Scenario::load(p).err())
        .collect();
    assert!(
        errors.is_empty(),
        "bad scenario files:\n{}",
        errors.join("\n")
    );
}

#[test]
fn glob_and_state_helpers() {
    assert!(glob_match(
        &["ralph-loop.local.md.corrupt-", ""],
        "ralph-loop.local.md.corrupt-1700000000"
    ));
    assert!(!glob_match(&["a", "b"], "xab"));
    assert!(glob_match(&["a", "c", ""], "abcd"));
    let (fields, body) = parse_state(
        "---\nactive: true\niteration: 2\ncompletion_promise: \"DONE\"\n---\n\nDo it\n",
    )
    .unwrap();
    assert_eq!(fields["iteration"], "2");
    assert_eq!(fields["completion_promise"], "DONE");
    assert_eq!(body, "\n\nDo it\n");
}

#[test]
fn scenarios_in_the_real_client() {
    let Some(claude) = claude_bin() else {
        let msg = "the Claude Code client is not installed: run scripts/install-client (or set RALPH_CLAUDE_BIN)";
        if std::env::var_os("CI").is_some() {
            panic!("e2e: {msg}");
        }
        eprintln!("SKIPPED e2e scenarios: {msg}");
        return;
    };
    let only = std::env::var("RALPH_E2E_ONLY").ok();
    let run_pending = std::env::var_os("RALPH_E2E_PENDING").is_some();
    let keep = std::env::var_os("RALPH_E2E_KEEP").is_some();
    let jobs: usize = std::env::var("RALPH_E2E_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2)
        .max(1);

    let mut queue = VecDeque::new();
    let mut pending_skipped = Vec::new();
    // Under CI a scenario whose runner is missing fails: never skipped there.
    let mut no_runner: Vec<String> = Vec::new();
    for path in scenario_files() {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        if let Some(why) = &scenario.pending
            && !run_pending
        {
            pending_skipped.push(format!("{name}: {why}"));
            continue;
        }
        let missing = missing_runners(&scenario.needs);
        if !missing.is_empty() {
            let why = format!(
                "needs {} (scripts/install-runners installs them into {})",
                missing.join(", "),
                runners_bin().display()
            );
            if std::env::var_os("CI").is_some() {
                no_runner.push(format!("FAILED   {name}: {why}"));
            } else {
                eprintln!("SKIPPED  {name}: {why}");
            }
            continue;
        }
        queue.push_back((name, scenario));
    }

    let t0 = Instant::now();
    let queue = Arc::new(Mutex::new(queue));
    let results = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let results = Arc::clone(&results);
            let claude = claude.clone();
            thread::spawn(move || {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                    let Some((name, scenario)) = next else { break };
                    let started = Instant::now();
                    let (failures, dir) = run_scenario(&claude, &name, &scenario);
                    let secs = started.elapsed().as_secs_f64();
                    if failures.is_empty() && !keep {
                        let _ = fs::remove_dir_all(&dir);
                    }
                    let line = match (&scenario.pending, failures.is_empty()) {
                        (None, true) => format!("ok       {name} ({secs:.1}s) {}", scenario.title),
                        (None, false) => format!(
                            "FAILED   {name} ({secs:.1}s) {}\n    kept: {}\n    - {}",
                            scenario.title,
                            dir.display(),
                            failures.join("\n    - ")
                        ),
                        (Some(why), true) => format!(
                            "PENDING  {name} ({secs:.1}s) passes now: remove its `pending:` mark ({why})"
                        ),
                        (Some(why), false) => format!(
                            "PENDING  {name} ({secs:.1}s) fails as expected: {why}\n    kept: {}\n    - {}",
                            dir.display(),
                            failures.join("\n    - ")
                        ),
                    };
                    eprintln!("{line}");
                    let failed = scenario.pending.is_none() && !failures.is_empty();
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((name, failed, line));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker thread");
    }
    let results = results.lock().unwrap_or_else(|p| p.into_inner());
    for p in &pending_skipped {
        eprintln!("PENDING  {p} (not run; RALPH_E2E_PENDING=1 runs it)");
    }
    for line in &no_runner {
        eprintln!("{line}");
    }
    let failed: Vec<&String> = results
        .iter()
        .filter(|r| r.1)
        .map(|r| &r.2)
        .chain(&no_runner)
        .collect();
    eprintln!(
        "e2e: {} scenario(s) run in {:.1}s, {} failed, {} pending not run",
        results.len(),
        t0.elapsed().as_secs_f64(),
        failed.len(),
        pending_skipped.len()
    );
    assert!(
        failed.is_empty(),
        "{} scenario(s) failed:\n{}",
        failed.len(),
        failed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The activity log's entries; a line that is not JSON is kept as a string.
fn read_log(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_string())))
        .collect()
}

/// Every field of `want` is equal in `entry` (`message` as a substring).
fn log_entry_matches(entry: &Value, want: &BTreeMap<String, Value>) -> bool {
    want.iter()
        .all(|(k, v)| match (k.as_str(), entry.get(k), v) {
            ("message", Some(Value::String(have)), Value::String(w)) => have.contains(w),
            (_, Some(have), w) => have == w,
            (_, None, Value::Null) => true,
            _ => false,
        })
}
