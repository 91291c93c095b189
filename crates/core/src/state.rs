//! The loop state: `.claude/ralph-loop.local.md`, YAML frontmatter and prompt body.
//!
//! Drop-in compatible with the official ralph-loop plugin: its files (with an
//! empty or missing `session_id`, no `prd_file`) read as they are, and our
//! writes keep its keys and layout. Updates edit single frontmatter lines
//! (`frontmatter::set_field`) so unknown keys, comments and the body survive.
//! Pure.

use crate::budget::{Budgets, Usd};
use crate::frontmatter;
use crate::pause::{Pause, PauseReason};
use crate::records::RecordGens;
use crate::reinject::Injected;
use crate::review_settings::ReviewConfig;
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use thiserror::Error;

/// A parsed, valid loop state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopState {
    /// `false` means the loop was cancelled (the official plugin never writes it).
    pub active: bool,
    /// The number of the turn in progress, starting at 1.
    pub iteration: u64,
    /// The session that owns the loop; empty until the first Stop claims it.
    pub session_id: String,
    /// Turns allowed in all; 0 means unlimited.
    pub max_iterations: u64,
    /// The promise text that ends the loop, if any.
    pub completion_promise: Option<String>,
    pub started_at: Option<String>,
    /// PRD mode: the PRD path, relative to the project root.
    pub prd_file: Option<String>,
    /// PRD mode: the story ids present at start (a story that vanishes later
    /// counts as failing).
    pub story_ids: Vec<String>,
    /// PRD mode: each story's `verify` command as first seen (at start, or
    /// when the story first appears), story id -> command. The recorded
    /// check is what runs: an edit of the PRD cannot weaken it.
    pub story_checks: BTreeMap<String, String>,
    /// Pinned checks: each pinned file (relative) and what pinned it (the
    /// check's command, or `--pin GLOB`). The guard refuses writes to them;
    /// their content at start is in the loop's folder (see `pins`).
    pub pins: BTreeMap<String, String>,
    /// How many times in a row one story may be fed before the loop stops.
    pub max_story_attempts: u32,
    /// Run when completion is claimed; the loop completes only if it exits 0.
    pub verify: Option<String>,
    /// `--notify`: a command (or `desktop`) run when the loop ends.
    pub notify: Option<String>,
    /// Seconds a verify command may take.
    pub verify_timeout: u64,
    /// Unchanged iterations in a row that stop the loop (0 = never).
    pub max_stalls: u32,
    /// Unchanged iterations in a row so far.
    pub stalls: u32,
    /// `--score`: the command that measures each iteration that changed the
    /// tree (`None`: the check measures: the story's, else `verify`).
    pub score: Option<String>,
    /// Scored iterations in a row without a new best that stop the loop (0 = never).
    pub max_plateau: u32,
    /// The working-tree fingerprint at the last decision.
    pub last_fingerprint: Option<String>,
    /// The timestamp of the newest message the user queued that a Stop has
    /// already acted on (see `queue`), so it is not acted on twice.
    pub queue_seen: Option<String>,
    /// The last Stop let the turn end so the model could answer the user's
    /// queued message: the next Stop goes on without counting a stall.
    pub yielded: bool,
    /// The turn the last Stop answered (see `stop::gather::turn_key`): a
    /// second Stop for the same turn is answered again without advancing.
    pub turn_key: Option<String>,
    /// Paused on an API error until the next prompt or Stop (see `pause`):
    /// `api_error_pause`, `api_error_pause_at` and `resets_at` in the file
    /// (`paused` and `paused_at` in loops written before the rename, still
    /// read).
    pub api_error_pause: Option<Pause>,
    /// Token, runtime and cost budgets, and what was spent.
    pub budgets: Budgets,
    /// Who reviews the work before the loop completes (`--review`).
    pub review: ReviewConfig,
    /// The loop waits for a human (a blocker named a failing story): each
    /// Stop lets the session stop until the user resumes it. Why, in words.
    pub blocked: Option<String>,
    /// `--fresh`: each story (or iteration) is worked by a `ralph:ralph-worker`
    /// subagent in a fresh context; the main thread only dispatches.
    pub fresh: bool,
    /// `--parallel N`: up to N stories at once, each worked by a
    /// `ralph:ralph-parallel-worker` in its own git worktree and merged into
    /// the loop's branch (see `parallel`). 0: one story at a time.
    pub parallel: u32,
    /// Whether the agent's commands run in the client's sandbox, as seen at
    /// the start (`sandbox::Seen`; `None`: not known).
    pub sandbox: Option<bool>,
    /// PRD mode: the story (or batch) fed last and how many times in a row
    /// (`reinject`). Here, not in a file of its own: a counter put back
    /// from an older copy would let a stuck story go on for ever. `None`
    /// in a loop from before, whose `last-injected` file is read instead.
    pub injected: Option<Injected>,
    /// The generation of each of the loop's records as ralph last wrote it
    /// (`records`): one deleted or put back from an older copy is seen.
    pub records: RecordGens,
    /// A digest of git's own files and the client's settings as the last
    /// Stop left them (`git_watch`; `None`: not watched).
    pub watched: Option<String>,
    /// The prompt body, verbatim.
    pub prompt: String,
}

/// The API-error pause's keys in the file, and their names before the
/// field was renamed (still read, and cleared when the pause is).
const PAUSE_KEY: &str = "api_error_pause";
const PAUSE_AT_KEY: &str = "api_error_pause_at";
const OLD_PAUSE_KEY: &str = "paused";
const OLD_PAUSE_AT_KEY: &str = "paused_at";

/// Default for `max_story_attempts`.
pub(crate) const DEFAULT_MAX_STORY_ATTEMPTS: u32 = 5;
/// Default for `max_stalls`: unchanged iterations in a row that stop the loop.
pub(crate) const DEFAULT_MAX_STALLS: u32 = 3;
/// Default for `max_plateau`: five paid iterations that each changed the code
/// and none moved the measure is a loop going round, not a hard step (a step
/// that needs more sets it higher); see docs/long-loops.md.
pub(crate) const DEFAULT_MAX_PLATEAU: u32 = 5;
/// The body written in PRD mode when the user gave no prompt of their own.
pub(crate) const DEFAULT_PRD_PROMPT: &str =
    "Work through the stories of the PRD one at a time, as the Ralph loop feeds them.\n";

/// Why a state file cannot be used. Each names the field and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StateError {
    #[error("the file does not start with a `---` frontmatter block closed by a second `---` line")]
    NoFrontmatter,
    #[error("the frontmatter is not valid YAML: {0}")]
    BadYaml(String),
    #[error("the frontmatter is not a mapping of `key: value` lines")]
    NotAMapping,
    #[error("field `{field}` is missing")]
    Missing { field: &'static str },
    #[error("field `{field}` {problem} (found {found})")]
    BadField {
        field: &'static str,
        problem: &'static str,
        found: String,
    },
    #[error("the prompt (the text after the frontmatter) is empty")]
    EmptyPrompt,
}

impl StateError {
    /// The field the error is about, for the user's message and the log.
    pub fn field(&self) -> &'static str {
        match self {
            StateError::NoFrontmatter | StateError::BadYaml(_) | StateError::NotAMapping => {
                "frontmatter"
            }
            StateError::Missing { field } | StateError::BadField { field, .. } => field,
            StateError::EmptyPrompt => "prompt",
        }
    }
}

impl LoopState {
    /// Parse the whole text of a state file. The first field that is wrong
    /// is the one reported, in the order of the official plugin's keys.
    pub fn parse(text: &str) -> Result<LoopState, StateError> {
        let split = frontmatter::split(text).ok_or(StateError::NoFrontmatter)?;
        let f = Fields::read(split.yaml)?;
        let any = |_: u64| true;
        Ok(LoopState {
            active: f.active()?,
            iteration: f
                .number("iteration", "must be a whole number", any)?
                .ok_or(StateError::Missing { field: "iteration" })?,
            max_iterations: f
                .number(
                    "max_iterations",
                    "must be a whole number (0 = unlimited)",
                    any,
                )?
                .unwrap_or(0),
            session_id: f.text("session_id", "must be text")?.unwrap_or_default(),
            // The official setup writes `null`; a quoted "null" means the same to it.
            completion_promise: f
                .text("completion_promise", "must be text or null")?
                .filter(|s| !s.is_empty() && s != "null"),
            started_at: f.get("started_at").and_then(scalar_text),
            prd_file: f
                .text("prd_file", "must be a path")?
                .filter(|s| !s.is_empty()),
            story_ids: f.story_ids()?,
            story_checks: f.string_map(
                "story_checks",
                "must map story ids to commands, like {\"US-001\": \"cargo test\"}",
            )?,
            pins: f.string_map(
                "pins",
                "must map pinned files to their checks, like {\"tests/check.sh\": \"sh tests/check.sh\"}",
            )?,
            max_story_attempts: f
                .small(
                    "max_story_attempts",
                    "must be a whole number above 0",
                    |n| n > 0,
                )?
                .unwrap_or(DEFAULT_MAX_STORY_ATTEMPTS),
            verify: f
                .text("verify", "must be a command")?
                .filter(|s| !s.trim().is_empty()),
            notify: f
                .text("notify", "must be a command")?
                .filter(|s| !s.trim().is_empty()),
            verify_timeout: f
                .number(
                    "verify_timeout",
                    "must be a whole number of seconds above 0",
                    |n| n > 0,
                )?
                .unwrap_or(crate::verify::DEFAULT_TIMEOUT_SECS),
            max_stalls: f.whole("max_stalls")?.unwrap_or(DEFAULT_MAX_STALLS),
            stalls: f.whole("stalls")?.unwrap_or(0),
            score: f
                .text("score", "must be a command")?
                .filter(|s| !s.trim().is_empty()),
            max_plateau: f.whole("max_plateau")?.unwrap_or(DEFAULT_MAX_PLATEAU),
            last_fingerprint: f.get("last_fingerprint").and_then(scalar_text),
            queue_seen: f.get("queue_seen").and_then(scalar_text),
            yielded: f.flag("yielded")?,
            turn_key: f.get("turn_key").and_then(scalar_text),
            api_error_pause: f.pause(),
            budgets: f.budgets()?,
            review: f.review()?,
            blocked: f.get("blocked").and_then(non_empty_text),
            fresh: f.flag("fresh")?,
            parallel: f.whole("parallel")?.unwrap_or(0),
            sandbox: f.optional_flag("sandbox")?,
            injected: f.injected(),
            watched: f.get("watched").and_then(non_empty_text),
            records: f.records()?,
            prompt: Some(split.body.to_string())
                .filter(|p| !p.trim().is_empty())
                .ok_or(StateError::EmptyPrompt)?,
        })
    }

    /// Render a new state file. Strings are written as JSON strings, which
    /// are valid YAML double-quoted scalars, so any text round-trips.
    pub fn render(&self) -> String {
        let mut out = String::from("---\n");
        out.push_str(&format!("active: {}\n", self.active));
        out.push_str(&format!("iteration: {}\n", self.iteration));
        out.push_str(&format!("session_id: {}\n", quote(&self.session_id)));
        out.push_str(&format!("max_iterations: {}\n", self.max_iterations));
        match &self.completion_promise {
            Some(p) => out.push_str(&format!("completion_promise: {}\n", quote(p))),
            None => out.push_str("completion_promise: null\n"),
        }
        if let Some(t) = &self.started_at {
            out.push_str(&format!("started_at: {}\n", quote(t)));
        }
        if let Some(p) = &self.prd_file {
            out.push_str(&format!("prd_file: {}\n", quote(p)));
            let ids: Vec<String> = self.story_ids.iter().map(|s| quote(s)).collect();
            out.push_str(&format!("story_ids: [{}]\n", ids.join(", ")));
            if !self.story_checks.is_empty() {
                out.push_str(&format!(
                    "story_checks: {}\n",
                    checks_text(&self.story_checks)
                ));
            }
        }
        if self.max_story_attempts != DEFAULT_MAX_STORY_ATTEMPTS {
            out.push_str(&format!(
                "max_story_attempts: {}\n",
                self.max_story_attempts
            ));
        }
        if let Some(v) = &self.verify {
            out.push_str(&format!("verify: {}\n", quote(v)));
            out.push_str(&format!("verify_timeout: {}\n", self.verify_timeout));
        }
        if let Some(n) = &self.notify {
            out.push_str(&format!("notify: {}\n", quote(n)));
        }
        out.push_str(&format!("max_stalls: {}\n", self.max_stalls));
        out.push_str(&format!("stalls: {}\n", self.stalls));
        if let Some(f) = &self.last_fingerprint {
            out.push_str(&format!("last_fingerprint: {}\n", quote(f)));
        }
        if let Some(q) = &self.queue_seen {
            out.push_str(&format!("queue_seen: {}\n", quote(q)));
        }
        if self.yielded {
            out.push_str("yielded: true\n");
        }
        for (key, value) in self.optional_lines() {
            out.push_str(&format!("{key}: {value}\n"));
        }
        out.push_str("---\n\n");
        out.push_str(&self.prompt);
        out
    }

    /// The optional lines that follow the official plugin's keys, as
    /// `(key, value)`, written only when set.
    fn optional_lines(&self) -> Vec<(&'static str, String)> {
        let mut lines = Vec::new();
        if let Some(k) = &self.turn_key {
            lines.push(("turn_key", quote(k)));
        }
        let r = &self.review;
        if r.is_on() {
            let names: Vec<String> = r.reviewers.iter().map(|n| quote(n)).collect();
            lines.push(("review", format!("[{}]", names.join(", "))));
            if let Some(c) = &r.command {
                lines.push(("review_cmd", quote(c)));
            }
            lines.push(("max_reviews", r.max_rounds.to_string()));
            lines.push(("review_timeout", r.timeout_secs.to_string()));
            if let Some(b) = &r.base {
                lines.push(("review_base", quote(b)));
            }
        }
        if let Some(why) = &self.blocked {
            lines.push(("blocked", quote(why)));
        }
        if !self.pins.is_empty() {
            lines.push(("pins", checks_text(&self.pins)));
        }
        if self.fresh {
            lines.push(("fresh", "true".into()));
        }
        if let Some(cmd) = &self.score {
            lines.push(("score", quote(cmd)));
        }
        if self.max_plateau != DEFAULT_MAX_PLATEAU {
            lines.push(("max_plateau", self.max_plateau.to_string()));
        }
        if self.parallel > 0 {
            lines.push(("parallel", self.parallel.to_string()));
        }
        if let Some(on) = self.sandbox {
            lines.push(("sandbox", on.to_string()));
        }
        if let Some(i) = &self.injected {
            lines.push(("injected", quote(i.render().trim_end())));
        }
        if !self.records.is_empty() {
            lines.push(("records", self.records.render()));
        }
        if let Some(w) = &self.watched {
            lines.push(("watched", quote(w)));
        }
        if let Some(p) = &self.api_error_pause {
            lines.push((PAUSE_KEY, quote(p.reason.as_str())));
            lines.push((PAUSE_AT_KEY, quote(&p.at)));
            if let Some(r) = &p.resets_at {
                lines.push(("resets_at", quote(r)));
            }
        }
        let b = &self.budgets;
        if let Some(m) = &b.model {
            lines.push(("model", quote(m)));
        }
        if let Some(n) = b.max_tokens {
            lines.push(("max_tokens", n.to_string()));
        }
        if let Some(n) = b.max_runtime_secs {
            lines.push(("max_runtime_secs", n.to_string()));
        }
        if let Some(usd) = b.max_cost {
            lines.push(("max_cost_usd", quote(&usd.exact())));
        }
        if b.counts_tokens() || b.tokens > 0 {
            lines.push(("tokens_used", b.tokens.to_string()));
        }
        if b.max_cost.is_some() || b.cost > Usd(0) {
            lines.push(("cost_usd", quote(&b.cost.exact())));
        }
        if let Some(id) = &b.usage_seen {
            lines.push(("usage_seen", quote(id)));
        }
        lines
    }

    /// Are the turns' tokens counted: for a token or cost budget, and in a
    /// loop that may be measured (a check or `--score`), for the tokens
    /// spent per point of score.
    pub(crate) fn counts_tokens(&self) -> bool {
        self.budgets.counts_tokens()
            || self.score.is_some()
            || self.verify.is_some()
            || self.prd_file.is_some()
    }

    /// The budgets after a turn whose messages used `usage`.
    pub(crate) fn budgets_after(&self, usage: &[crate::budget::MessageUsage]) -> Budgets {
        self.budgets.after_turn(usage, self.counts_tokens())
    }

    /// "3/30" or "3 (no cap)".
    pub fn iteration_label(&self, iteration: u64) -> String {
        if self.max_iterations > 0 {
            format!("{iteration}/{}", self.max_iterations)
        } else {
            format!("{iteration} (no cap)")
        }
    }
}

/// Is a loop owned by `owner` this session's? An unclaimed loop (the
/// official setup, or `ralph-setup start` from a terminal) belongs to the
/// first session whose Stop sees it; a corrupt file that names another
/// session is that session's to report.
pub(crate) fn owns(owner: &str, session: &str) -> bool {
    owner.is_empty() || owner == session
}

/// The line edits that take `text` to `new` (see [`updated_text`]).
fn line_edits(text: &str, new: &LoopState) -> Option<String> {
    let mut edits = vec![
        ("iteration", new.iteration.to_string()),
        ("session_id", quote(&new.session_id)),
        ("stalls", new.stalls.to_string()),
    ];
    match &new.last_fingerprint {
        Some(f) => edits.push(("last_fingerprint", quote(f))),
        // Dropped after an edit that was not looked at (see `stop::plan`).
        None if text.contains("\nlast_fingerprint:") => {
            edits.push(("last_fingerprint", "null".into()));
        }
        None => {}
    }
    if let Some(q) = &new.queue_seen {
        edits.push(("queue_seen", quote(q)));
    }
    if !new.story_checks.is_empty() {
        edits.push(("story_checks", checks_text(&new.story_checks)));
    }
    // Written once set, so that clearing it edits the line.
    if new.yielded || text.contains("\nyielded:") {
        edits.push(("yielded", new.yielded.to_string()));
    }
    if new.blocked.is_none() && text.contains("\nblocked:") {
        edits.push(("blocked", "null".into()));
    }
    // The pause under its name before the rename goes once it is over, or
    // once the pause is written under the new name.
    if text.contains("\npaused:") {
        edits.push((OLD_PAUSE_KEY, "null".into()));
        edits.push((OLD_PAUSE_AT_KEY, "null".into()));
    }
    if new.api_error_pause.is_none() && text.contains(&format!("\n{PAUSE_KEY}:")) {
        edits.push((PAUSE_KEY, "null".into()));
        edits.push((PAUSE_AT_KEY, "null".into()));
    }
    if new.api_error_pause.is_none() && text.contains("\nresets_at:") {
        edits.push(("resets_at", "null".into()));
    }
    edits.extend(new.optional_lines());
    edits.iter().try_fold(text.to_string(), |t, (key, value)| {
        frontmatter::set_field(&t, key, value)
    })
}

/// The text of a state file updated to `new` (the same loop with a new
/// iteration, session, stall count or fingerprint).
///
/// Single frontmatter lines are edited so unknown keys, comments and the body
/// survive byte for byte. The edit is then read back: if it does not give
/// exactly `new` (a `key:` line can sit inside a multi-line quoted scalar,
/// which a line edit would corrupt), the frontmatter is rendered afresh.
pub fn updated_text(text: &str, new: &LoopState) -> String {
    match line_edits(text, new) {
        Some(t) if LoopState::parse(&t).as_ref() == Ok(new) => t,
        _ => new.render(),
    }
}

/// [`updated_text`] from `old`, what `text` was parsed into. A Stop's
/// save, so it parses the state once, not twice: when every frontmatter
/// line of `text` stands alone (`edits_stand_alone`: no line can belong to
/// a multi-line value) and `new` differs from `old` only in fields the line
/// edits write (`edits_cover`), the edited text is `new` by construction and
/// is not read back; any other text or change is read back as before.
pub(crate) fn updated_text_from(text: &str, old: &LoopState, new: &LoopState) -> String {
    if edits_stand_alone(text)
        && edits_cover(old, new)
        && let Some(t) = line_edits(text, new)
    {
        return t;
    }
    updated_text(text, new)
}

/// Every line of the frontmatter is one `key: value` of its own: no
/// indented line, comment or blank line, no quoted value left open, no
/// block scalar, no flow value left open, no anchor or tag. A line edit then changes one
/// value and nothing else.
fn edits_stand_alone(text: &str) -> bool {
    let Some(split) = frontmatter::split(text) else {
        return false;
    };
    split.yaml.lines().all(|line| {
        let Some((key, rest)) = line.split_once(':') else {
            return false;
        };
        let value = rest.trim();
        let key_ok = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        // An empty value is null: the next line is a key of its own too.
        key_ok && (value.is_empty() || rest.starts_with(' ') && value_closed(value))
    })
}

/// A one-line YAML value that ends on its line.
fn value_closed(v: &str) -> bool {
    // `\"` at the end escapes the quote unless the backslash is itself escaped.
    let ends_quote = |q: char| {
        v.len() >= 2
            && v.ends_with(q)
            && v[1..v.len() - 1]
                .chars()
                .rev()
                .take_while(|c| *c == '\\')
                .count()
                % 2
                == 0
    };
    match v.chars().next() {
        Some('"') => ends_quote('"'),
        Some('[') => v.ends_with(']'),
        Some('{') => v.ends_with('}'),
        // Single quotes escape by doubling: read back instead; so are block
        // scalars, anchors, aliases, tags and comments.
        Some('\'' | '|' | '>' | '&' | '*' | '!' | '#' | '%' | '@' | '`') => false,
        _ => !v.contains(" #"),
    }
}

/// `new` is `old` but for what the line edits of [`line_edits`] write
/// whatever the text: the iteration, the session, the stalls, the
/// fingerprint, `yielded`, a pause or a block lifted, and the turn's key,
/// the queue and what was spent when they are set. Anything else (a block
/// set, a pause set, new checks or pins) is read back.
fn edits_cover(old: &LoopState, new: &LoopState) -> bool {
    let mut probe = new.clone();
    probe.iteration = old.iteration;
    probe.session_id.clone_from(&old.session_id);
    probe.stalls = old.stalls;
    probe.last_fingerprint.clone_from(&old.last_fingerprint);
    probe.yielded = old.yielded;
    if new.blocked.is_none() {
        probe.blocked.clone_from(&old.blocked);
    }
    if new.api_error_pause.is_none() {
        probe.api_error_pause.clone_from(&old.api_error_pause);
    }
    let set =
        |n: &Option<String>, o: &Option<String>| if n.is_some() { o.clone() } else { n.clone() };
    probe.turn_key = set(&new.turn_key, &old.turn_key);
    if new.injected.is_some() {
        probe.injected.clone_from(&old.injected);
    }
    if !new.records.is_empty() {
        probe.records = old.records;
    }
    if new.watched.is_some() {
        probe.watched.clone_from(&old.watched);
    }
    probe.queue_seen = set(&new.queue_seen, &old.queue_seen);
    let (b, ob) = (&mut probe.budgets, &old.budgets);
    b.usage_seen = set(&new.budgets.usage_seen, &ob.usage_seen);
    if new.budgets.counts_tokens() || new.budgets.tokens > 0 {
        b.tokens = ob.tokens;
    }
    if new.budgets.max_cost.is_some() || new.budgets.cost > crate::budget::Usd(0) {
        b.cost = ob.cost;
    }
    probe == *old
}

/// Set `iteration` in a state file's text (see [`updated_text`]); `None`
/// when the text is not a valid state.
pub fn with_iteration(text: &str, iteration: u64) -> Option<String> {
    let state = LoopState::parse(text).ok()?;
    Some(updated_text(text, &LoopState { iteration, ..state }))
}

/// A loop state for tests: `iteration` of `max` (0 = no cap), with `promise`.
#[cfg(test)]
pub(crate) fn sample(iteration: u64, max: u64, promise: Option<&str>) -> LoopState {
    LoopState {
        active: true,
        iteration,
        session_id: "s".into(),
        max_iterations: max,
        completion_promise: promise.map(str::to_string),
        started_at: None,
        prd_file: None,
        story_ids: vec![],
        story_checks: BTreeMap::new(),
        pins: BTreeMap::new(),
        max_story_attempts: DEFAULT_MAX_STORY_ATTEMPTS,
        verify: None,
        notify: None,
        verify_timeout: 300,
        max_stalls: 3,
        stalls: 0,
        score: None,
        max_plateau: DEFAULT_MAX_PLATEAU,
        last_fingerprint: None,
        queue_seen: None,
        yielded: false,
        turn_key: None,
        api_error_pause: None,
        budgets: Budgets::default(),
        review: ReviewConfig::default(),
        blocked: None,
        fresh: false,
        parallel: 0,
        sandbox: None,
        injected: None,
        records: crate::records::RecordGens::default(),
        watched: None,
        prompt: "Fix the bug\n---\niteration: 7\n".into(),
    }
}

/// Recorded checks as one line: a JSON object, which is a YAML flow mapping
/// (and what the guard reads back, `frontmatter::scan_map`).
fn checks_text(checks: &BTreeMap<String, String>) -> String {
    serde_json::to_string(checks).unwrap_or_else(|_| "{}".to_string())
}

/// A string as a YAML double-quoted scalar.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// The frontmatter's fields, each read with an error that names it. A
/// `null` field counts as absent.
struct Fields(serde_yaml_ng::Mapping);

impl Fields {
    fn read(yaml: &str) -> Result<Fields, StateError> {
        if yaml.trim().is_empty() {
            return Ok(Fields(Default::default()));
        }
        if let Some(fields) = plain_lines(yaml) {
            return Ok(Fields(fields));
        }
        match serde_yaml_ng::from_str(yaml).map_err(|e| StateError::BadYaml(one_line(&e)))? {
            Value::Mapping(m) => Ok(Fields(m)),
            _ => Err(StateError::NotAMapping),
        }
    }

    fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A small whole number, any value.
    fn whole(&self, field: &'static str) -> Result<Option<u32>, StateError> {
        self.small(field, "must be a whole number", |_| true)
    }

    /// `true` or `false`, absent meaning not known.
    fn optional_flag(&self, field: &'static str) -> Result<Option<bool>, StateError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(bad(field, "must be true or false", v)),
        }
    }

    /// `true` or `false`, absent meaning `false`.
    fn flag(&self, field: &'static str) -> Result<bool, StateError> {
        match self.get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(bad(field, "must be true or false", v)),
        }
    }

    fn active(&self) -> Result<bool, StateError> {
        match self.get("active") {
            None => Ok(true),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
            Some(v) => Err(bad("active", "must be true or false", v)),
        }
    }

    /// A whole number that passes `ok`, if present.
    fn number(
        &self,
        field: &'static str,
        problem: &'static str,
        ok: impl Fn(u64) -> bool,
    ) -> Result<Option<u64>, StateError> {
        self.get(field)
            .map(|v| {
                whole_number(v)
                    .filter(|n| ok(*n))
                    .ok_or_else(|| bad(field, problem, v))
            })
            .transpose()
    }

    /// A whole number that fits in 32 bits and passes `ok`, if present.
    fn small(
        &self,
        field: &'static str,
        problem: &'static str,
        ok: impl Fn(u64) -> bool,
    ) -> Result<Option<u32>, StateError> {
        let fits = |n: u64| u32::try_from(n).is_ok() && ok(n);
        Ok(self.number(field, problem, fits)?.map(|n| n as u32))
    }

    /// A scalar as text, if present.
    fn text(
        &self,
        field: &'static str,
        problem: &'static str,
    ) -> Result<Option<String>, StateError> {
        self.get(field)
            .map(|v| scalar_text(v).ok_or_else(|| bad(field, problem, v)))
            .transpose()
    }

    /// `api_error_pause` (or, written before the rename, `paused`) with its
    /// time and `resets_at`; absent when not paused.
    fn pause(&self) -> Option<Pause> {
        let text = |k: &str| self.get(k).and_then(scalar_text);
        let (reason, at) = match text(PAUSE_KEY) {
            Some(reason) => (reason, PAUSE_AT_KEY),
            None => (text(OLD_PAUSE_KEY)?, OLD_PAUSE_AT_KEY),
        };
        Some(Pause {
            reason: PauseReason::parse(Some(&reason)),
            at: text(at).unwrap_or_default(),
            resets_at: text("resets_at"),
        })
    }

    fn budgets(&self) -> Result<Budgets, StateError> {
        let any = |_: u64| true;
        let usd = |field: &'static str| -> Result<Option<Usd>, StateError> {
            self.get(field)
                .map(|v| {
                    scalar_text(v)
                        .and_then(|t| Usd::parse(&t))
                        .ok_or_else(|| bad(field, "must be an amount of dollars like \"5.00\"", v))
                })
                .transpose()
        };
        Ok(Budgets {
            max_tokens: self.number(
                "max_tokens",
                "must be a whole number of tokens above 0",
                |n| n > 0,
            )?,
            tokens: self
                .number("tokens_used", "must be a whole number", any)?
                .unwrap_or(0),
            max_runtime_secs: self.number(
                "max_runtime_secs",
                "must be a whole number of seconds above 0",
                |n| n > 0,
            )?,
            max_cost: usd("max_cost_usd")?,
            cost: usd("cost_usd")?.unwrap_or_default(),
            model: self.get("model").and_then(scalar_text),
            usage_seen: self.get("usage_seen").and_then(scalar_text),
        })
    }

    fn review(&self) -> Result<ReviewConfig, StateError> {
        let reviewers = match self.get("review") {
            None => Vec::new(),
            Some(Value::Sequence(items)) => items
                .iter()
                .map(|v| scalar_text(v).ok_or_else(|| bad("review", "must list reviewers", v)))
                .collect::<Result<_, _>>()?,
            Some(v) => return Err(bad("review", "must be a list like [\"acceptance\"]", v)),
        };
        let defaults = ReviewConfig::default();
        Ok(ReviewConfig {
            reviewers,
            command: self.get("review_cmd").and_then(scalar_text),
            max_rounds: self
                .small("max_reviews", "must be a whole number above 0", |n| n > 0)?
                .unwrap_or(defaults.max_rounds),
            timeout_secs: self
                .number(
                    "review_timeout",
                    "must be a whole number of seconds above 0",
                    |n| n > 0,
                )?
                .unwrap_or(defaults.timeout_secs),
            base: self.get("review_base").and_then(scalar_text),
        })
    }

    /// A flow mapping of text to text (`story_checks`, `pins`).
    /// PRD mode: the story fed last and how many times (`"US-1 3"`).
    fn injected(&self) -> Option<Injected> {
        self.get("injected")
            .and_then(scalar_text)
            .as_deref()
            .and_then(Injected::parse)
    }

    /// The records' generations (`{"verify": 3}`; none: all 0).
    fn records(&self) -> Result<RecordGens, StateError> {
        let Some(v) = self.get("records") else {
            return Ok(RecordGens::default());
        };
        serde_json::to_string(v)
            .ok()
            .as_deref()
            .and_then(RecordGens::parse)
            .ok_or_else(|| bad("records", "must map records to numbers", v))
    }

    fn string_map(
        &self,
        field: &'static str,
        problem: &'static str,
    ) -> Result<BTreeMap<String, String>, StateError> {
        match self.get(field) {
            None => Ok(BTreeMap::new()),
            Some(Value::Mapping(m)) => m
                .iter()
                .map(|(k, v)| match (scalar_text(k), scalar_text(v)) {
                    (Some(k), Some(v)) => Ok((k, v)),
                    _ => Err(bad(field, problem, v)),
                })
                .collect(),
            Some(v) => Err(bad(field, problem, v)),
        }
    }

    fn story_ids(&self) -> Result<Vec<String>, StateError> {
        match self.get("story_ids") {
            None => Ok(Vec::new()),
            Some(Value::Sequence(items)) => items
                .iter()
                .map(|v| scalar_text(v).ok_or_else(|| bad("story_ids", "must list story ids", v)))
                .collect(),
            Some(v) => Err(bad("story_ids", "must be a list like [\"US-001\"]", v)),
        }
    }
}

/// The frontmatter as ralph writes it on every turn, read without the YAML
/// parser: each line `key: value` with a lower-case key and a value that
/// means one thing in any YAML (`true`, `false`, `null`, a whole number
/// without a leading zero, or a double-quoted ASCII string with no escape).
/// `None` for anything else (a list, a map, a comment, a plain string, a
/// repeated key, …): the YAML parser reads it, as it always did. Why: the
/// parser was a sixth of a steady Stop's instructions and its code and
/// buffers a dozen page faults (measured); a test holds the two readings
/// equal wherever this one answers.
fn plain_lines(yaml: &str) -> Option<serde_yaml_ng::Mapping> {
    let mut fields = serde_yaml_ng::Mapping::new();
    for line in yaml.lines() {
        let (key, value) = line.split_once(": ")?;
        let word = key.starts_with(|c: char| c.is_ascii_lowercase())
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        // Words some YAML reads as booleans or null, not as text.
        let special = matches!(
            key,
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
        if !word || special {
            return None;
        }
        if fields
            .insert(Value::String(key.to_string()), plain_value(value)?)
            .is_some()
        {
            return None;
        }
    }
    Some(fields)
}

/// A value [`plain_lines`] reads; `None`: let the YAML parser judge it.
fn plain_value(value: &str) -> Option<Value> {
    match value {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        _ if value.bytes().all(|b| b.is_ascii_digit()) => {
            let plain =
                !value.is_empty() && value.len() <= 19 && (value == "0" || !value.starts_with('0'));
            plain
                .then(|| value.parse::<u64>().ok())
                .flatten()
                .map(|n| Value::Number(n.into()))
        }
        _ => {
            let inner = value.strip_prefix('"')?.strip_suffix('"')?;
            let plain = inner
                .bytes()
                .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
            plain.then(|| Value::String(inner.to_string()))
        }
    }
}

fn whole_number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A scalar's text, when it has some.
fn non_empty_text(v: &Value) -> Option<String> {
    scalar_text(v).filter(|s| !s.is_empty())
}

fn bad(field: &'static str, problem: &'static str, v: &Value) -> StateError {
    let found = serde_yaml_ng::to_string(v)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let found: String = found.chars().take(60).collect();
    StateError::BadField {
        field,
        problem,
        found: format!("`{found}`"),
    }
}

fn one_line(e: &impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
