//! Starting, inspecting and cancelling loops: the rules, without I/O.
//! `ralph-setup` reads the files, calls these, and writes the results.

use crate::activity::Entry;
use crate::args::{ArgsError, StartArgs};
use crate::fmt::{duration, plural, short_session as short};
use crate::frontmatter;
use crate::paths::PrdReadError;
use crate::prd::{Prd, PrdError};
use crate::reinject::Injected;
use crate::state::{DEFAULT_MAX_STALLS, DEFAULT_MAX_STORY_ATTEMPTS, DEFAULT_PRD_PROMPT, LoopState};
use crate::stop::text::story_prompt;
use serde::Serialize;
use thiserror::Error;

/// A loop whose last decision is older than this is stale: a new start replaces it.
pub const STALE_AFTER_SECS: u64 = 24 * 3600;
/// The promise a PRD loop uses when none is given.
pub const DEFAULT_PRD_PROMISE: &str = "RALPH-COMPLETE";

#[derive(Debug, Error)]
pub enum StartError {
    #[error("{0}. Usage: {usage}", usage = crate::args::USAGE)]
    Args(#[from] ArgsError),
    #[error(
        "no prompt: type the task after the command, e.g. /ralph:ralph-loop \"Make the failing tests pass\" --max-iterations 20 (or give --prompt-file PATH or --prd-file PATH)"
    )]
    EmptyPrompt,
    #[error("give the prompt either as words or with --prompt-file, not both")]
    PromptTwice,
    #[error("cannot read the prompt file {path}: {why}")]
    PromptFile { path: String, why: String },
    #[error("{path}: {why}. Fix the PRD, then start again")]
    Prd { path: String, why: String },
    #[error(
        "a Ralph loop of another session ({session}, iteration {iteration}, last active {age} ago) is running in this project. Cancel it with /ralph:cancel-ralph, or start yours with --replace to take it over"
    )]
    OtherSessionLive {
        session: String,
        iteration: u64,
        age: String,
    },
}

/// What was in the state file when a start came.
#[derive(Debug, Clone)]
pub enum Existing {
    None,
    /// A state file that does not parse; the start moves it aside.
    Corrupt(String),
    Loop {
        state: Box<LoopState>,
        age_secs: u64,
    },
}

/// What a start did to a loop that was there before (said to the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prior {
    Fresh,
    ReplacedOwn { iteration: u64 },
    ReplacedStale { session: String, age: String },
    ReplacedOther { session: String },
    ReplacedUnclaimed { iteration: u64 },
    ReplacedCorrupt(String),
}

impl Prior {
    pub fn note(&self) -> Option<String> {
        Some(match self {
            Prior::Fresh => return None,
            Prior::ReplacedOwn { iteration } => {
                format!("Replaced this session's running loop (it was at iteration {iteration}).")
            }
            Prior::ReplacedStale { session, age } => {
                format!("Replaced a stale loop of session {session} (no decision for {age}).")
            }
            Prior::ReplacedOther { session } => {
                format!("Replaced the running loop of session {session} (--replace).")
            }
            Prior::ReplacedUnclaimed { iteration } => {
                format!("Replaced a loop no session had claimed yet (iteration {iteration}).")
            }
            Prior::ReplacedCorrupt(kept) => {
                format!("The old state file did not parse; it was kept as {kept}.")
            }
        })
    }
}

/// May a new loop start over `existing`? (`session` is the starter's, "" from a terminal.)
pub fn check_existing(
    existing: &Existing,
    session: &str,
    replace: bool,
) -> Result<Prior, StartError> {
    match existing {
        Existing::None => Ok(Prior::Fresh),
        Existing::Corrupt(kept) => Ok(Prior::ReplacedCorrupt(kept.clone())),
        Existing::Loop { state, age_secs } => {
            let owner = &state.session_id;
            if *age_secs >= STALE_AFTER_SECS {
                Ok(Prior::ReplacedStale {
                    session: short(owner),
                    age: duration(*age_secs),
                })
            } else if owner.is_empty() {
                Ok(Prior::ReplacedUnclaimed {
                    iteration: state.iteration,
                })
            } else if owner == session {
                Ok(Prior::ReplacedOwn {
                    iteration: state.iteration,
                })
            } else if replace {
                Ok(Prior::ReplacedOther {
                    session: short(owner),
                })
            } else {
                Err(StartError::OtherSessionLive {
                    session: short(owner),
                    iteration: state.iteration,
                    age: duration(*age_secs),
                })
            }
        }
    }
}

/// The prompt from words or a prompt file (whose frontmatter, if any, is not
/// part of the prompt). Empty is allowed only in PRD mode.
pub fn resolve_prompt(
    args: &StartArgs,
    prompt_file_text: Option<&str>,
) -> Result<String, StartError> {
    let prompt = match prompt_file_text {
        Some(_) if !args.prompt.trim().is_empty() => return Err(StartError::PromptTwice),
        Some(text) => match frontmatter::split(text) {
            Some(split) => split.body.to_string(),
            None => text.strip_prefix('\u{feff}').unwrap_or(text).to_string(),
        },
        None => args.prompt.clone(),
    };
    if !prompt.trim().is_empty() {
        Ok(prompt)
    } else if args.prd_file.is_some() {
        Ok(DEFAULT_PRD_PROMPT.to_string())
    } else {
        Err(StartError::EmptyPrompt)
    }
}

/// Parse and validate a PRD at start (stricter than during the loop).
pub fn check_prd(path: &str, text: &str) -> Result<Prd, StartError> {
    let err = |e: PrdError| StartError::Prd {
        path: path.to_string(),
        why: e.to_string(),
    };
    let prd = Prd::parse(text).map_err(err)?;
    prd.validate().map_err(err)?;
    if prd.stories.is_empty() {
        return Err(StartError::Prd {
            path: path.into(),
            why: "it has no stories".into(),
        });
    }
    Ok(prd)
}

/// The state of a new loop.
pub fn new_state(
    args: &StartArgs,
    prompt: String,
    prd: Option<&Prd>,
    session: &str,
    now: &str,
) -> LoopState {
    let promise = match (&args.completion_promise, prd) {
        (Some(p), _) => Some(p.clone()).filter(|p| !p.trim().is_empty()),
        (None, Some(_)) => Some(DEFAULT_PRD_PROMISE.to_string()),
        (None, None) => None,
    };
    LoopState {
        active: true,
        iteration: 1,
        session_id: session.to_string(),
        max_iterations: args.max_iterations.unwrap_or(0),
        completion_promise: promise,
        started_at: Some(now.to_string()),
        prd_file: prd.and(args.prd_file.clone()),
        story_ids: prd
            .map(|p| p.stories.iter().map(|s| s.id.clone()).collect())
            .unwrap_or_default(),
        max_story_attempts: args
            .max_story_attempts
            .unwrap_or(DEFAULT_MAX_STORY_ATTEMPTS),
        verify: args.verify.clone().filter(|v| !v.trim().is_empty()),
        verify_timeout: args
            .verify_timeout
            .unwrap_or(crate::verify::DEFAULT_TIMEOUT_SECS),
        max_stalls: args.max_stalls.unwrap_or(DEFAULT_MAX_STALLS),
        stalls: 0,
        last_fingerprint: None,
        queue_seen: None,
        yielded: false,
        prompt,
    }
}

/// The re-injection counter at start: the first story counts as fed once.
pub fn first_injection(prd: Option<&Prd>) -> Option<Injected> {
    prd.and_then(Prd::next_runnable)
        .map(|s| Injected::next(None, &s.id))
}

/// Warnings to print with a start (e.g. a loop with no way to end but cancel).
pub fn warnings(state: &LoopState) -> Vec<String> {
    let mut out = Vec::new();
    if state.max_iterations == 0 {
        out.push(match &state.completion_promise {
            Some(_) => "⚠️ No iteration cap (--max-iterations 0): only the promise or /ralph:cancel-ralph ends this loop. Consider --max-iterations 30.".to_string(),
            None => "⚠️ No iteration cap and no completion promise: this loop runs until you type /ralph:cancel-ralph. Consider --max-iterations 30.".to_string(),
        });
    }
    out
}

/// What the loop will do, for the user and for the model's first turn.
pub fn describe(state: &LoopState, prd: Option<&Prd>) -> String {
    settings(state, prd) + &task(state, prd)
}

/// The prompt in one line of at most 160 characters, for the user's summary.
pub fn prompt_preview(prompt: &str) -> String {
    crate::fmt::one_line(prompt, 160)
}

/// The loop's settings: cap, promise, PRD progress (what the user is shown at start).
pub fn settings(state: &LoopState, prd: Option<&Prd>) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Iterations: {}\n",
        if state.max_iterations == 0 {
            "no cap".to_string()
        } else {
            format!("at most {}", state.max_iterations)
        }
    ));
    match &state.completion_promise {
        Some(p) if prd.is_some() => out.push_str(&format!(
            "Completion: the loop ends by itself when every story passes; <promise>{p}</promise> is refused while any story fails.\n"
        )),
        Some(p) => out.push_str(&format!(
            "Completion promise: print <promise>{p}</promise> only when that statement is completely and unequivocally true; never to escape the loop.\n"
        )),
        None => out.push_str("Completion promise: none (the loop ends at its cap or on /ralph:cancel-ralph).\n"),
    }
    if let Some(v) = &state.verify {
        out.push_str(&format!(
            "Verification: `{v}` must exit 0 (within {} s) before the loop counts as complete.\n",
            state.verify_timeout
        ));
    }
    if state.max_stalls > 0 {
        out.push_str(&format!(
            "No-progress breaker: the loop stops after {} in a row that leave the working tree unchanged (git repositories).\n",
            plural(u64::from(state.max_stalls), "iteration")
        ));
    }
    if let (Some(prd), Some(file)) = (prd, &state.prd_file) {
        let (pass, total) = prd.progress();
        out.push_str(&format!(
            "PRD: {file}: {}, {pass} passing.\n",
            plural(total as u64, "story")
        ));
        match prd.next_runnable() {
            Some(story) => out.push_str(&format!("First story: {} {}\n", story.id, story.title)),
            None => out.push_str("No story can run now (all pass, or dependencies block them).\n"),
        }
    }
    out
}

/// The task as the model starts on it: the prompt, or the first story's prompt.
pub fn task(state: &LoopState, prd: Option<&Prd>) -> String {
    let mut out = String::new();
    if let (Some(prd), Some(file)) = (prd, &state.prd_file) {
        let (pass, total) = prd.progress();
        if let Some(story) = prd.next_runnable() {
            out.push('\n');
            out.push_str(&story_prompt(
                file,
                story,
                &format!("{pass}/{total} stories pass"),
                state,
                None,
            ));
        }
    } else {
        out.push_str("\nTask:\n");
        out.push_str(&state.prompt);
        if !state.prompt.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// `ralph-setup status`, as data (printed as text or JSON).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub active: bool,
    pub project: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_promise: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prd: Option<PrdStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_decision: Option<Entry>,
    /// The loop's verify command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// The last check results (loop and stories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<crate::verify::VerifyLog>,
    /// Seconds a check may take (for the wording of a timeout).
    #[serde(skip)]
    pub verify_timeout: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PrdStatus {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub passing: usize,
    pub total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_story: Option<String>,
    pub failing: Vec<String>,
}

impl Status {
    pub fn new(
        project: String,
        state: Option<&LoopState>,
        corrupt: Option<String>,
        prd: Option<&Result<Prd, PrdReadError>>,
        last: Option<Entry>,
    ) -> Status {
        let prd = state
            .and_then(|s| s.prd_file.clone())
            .zip(prd)
            .map(|(file, prd)| match prd {
                Ok(p) => {
                    let (passing, total) = p.progress();
                    PrdStatus {
                        file,
                        error: None,
                        passing,
                        total,
                        next_story: p.next_runnable().map(|s| s.id.clone()),
                        failing: p
                            .stories
                            .iter()
                            .filter(|s| !s.passes)
                            .map(|s| s.id.clone())
                            .collect(),
                    }
                }
                Err(e) => PrdStatus {
                    file,
                    error: Some(e.to_string()),
                    passing: 0,
                    total: 0,
                    next_story: None,
                    failing: Vec::new(),
                },
            });
        Status {
            active: state.is_some_and(|s| s.active),
            project,
            corrupt,
            session_id: state.map(|s| s.session_id.clone()),
            iteration: state.map(|s| s.iteration),
            max_iterations: state.map(|s| s.max_iterations),
            completion_promise: state.and_then(|s| s.completion_promise.clone()),
            started_at: state.and_then(|s| s.started_at.clone()),
            prd,
            last_decision: last,
            verify: None,
            checks: None,
            verify_timeout: state.map_or(crate::verify::DEFAULT_TIMEOUT_SECS, |s| s.verify_timeout),
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(c) = &self.corrupt {
            out.push_str(&format!("Ralph loop: state file is corrupt: {c}\n"));
        } else if self.iteration.is_none() {
            out.push_str(&format!("No Ralph loop is active in {}.\n", self.project));
        } else {
            out.push_str(&format!(
                "Ralph loop {} in {}\n",
                if self.active { "active" } else { "cancelled" },
                self.project
            ));
            let session = self.session_id.as_deref().unwrap_or("");
            out.push_str(&format!(
                "  session:   {}\n",
                if session.is_empty() {
                    "(not claimed yet: the next session to stop claims it)"
                } else {
                    session
                }
            ));
            let it = self.iteration.unwrap_or(0);
            match self.max_iterations {
                Some(m) if m > 0 => out.push_str(&format!("  iteration: {it}/{m}\n")),
                _ => out.push_str(&format!("  iteration: {it} (no cap)\n")),
            }
            out.push_str(&format!(
                "  promise:   {}\n",
                self.completion_promise
                    .as_deref()
                    .map(|p| format!("<promise>{p}</promise>"))
                    .unwrap_or_else(|| "none".into())
            ));
            if let Some(t) = &self.started_at {
                out.push_str(&format!("  started:   {t}\n"));
            }
            if let Some(p) = &self.prd {
                match &p.error {
                    Some(e) => out.push_str(&format!("  prd:       {}: unreadable: {e}\n", p.file)),
                    None => out.push_str(&format!(
                        "  prd:       {}: {}/{} stories pass; next: {}\n",
                        p.file,
                        p.passing,
                        p.total,
                        p.next_story.as_deref().unwrap_or("none runnable")
                    )),
                }
            }
        }
        if let Some(v) = &self.verify {
            out.push_str(&format!("  verify:    `{v}`\n"));
        }
        if let Some(checks) = &self.checks {
            let line = |who: &str, r: &crate::verify::CheckResult| {
                let outcome = if r.passed() {
                    "passed".to_string()
                } else {
                    format!("FAILED ({})", r.status_text(self.verify_timeout))
                };
                format!(
                    "  check:     {who}: `{}` {outcome} at {}\n",
                    r.command, r.time
                )
            };
            if let Some(r) = &checks.r#loop {
                out.push_str(&line("loop", r));
            }
            for (id, r) in &checks.stories {
                out.push_str(&line(&format!("story {id}"), r));
            }
        }
        if let Some(e) = &self.last_decision {
            out.push_str(&format!(
                "Last decision: {} {} ({}) at iteration {}{}\n",
                e.time,
                e.decision,
                e.reason,
                e.iteration,
                e.story
                    .as_deref()
                    .map(|s| format!(", story {s}"))
                    .unwrap_or_default()
            ));
            if let Some(m) = &e.message {
                out.push_str(&format!("  {m}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_command_line;

    fn live(session: &str, age: u64) -> Existing {
        let args = parse_command_line("x").unwrap();
        Existing::Loop {
            state: Box::new(new_state(&args, "x".into(), None, session, "t")),
            age_secs: age,
        }
    }

    #[test]
    fn another_sessions_live_loop_is_refused_unless_replaced_or_stale() {
        let err = check_existing(&live("other-session", 60), "me", false).unwrap_err();
        assert!(
            err.to_string()
                .contains("Cancel it with /ralph:cancel-ralph")
        );
        assert!(matches!(
            check_existing(&live("other", 60), "me", true),
            Ok(Prior::ReplacedOther { .. })
        ));
        assert!(matches!(
            check_existing(&live("other", STALE_AFTER_SECS), "me", false),
            Ok(Prior::ReplacedStale { .. })
        ));
        assert!(matches!(
            check_existing(&live("me", 5), "me", false),
            Ok(Prior::ReplacedOwn { .. })
        ));
        assert!(matches!(
            check_existing(&live("", 5), "me", false),
            Ok(Prior::ReplacedUnclaimed { .. })
        ));
    }

    #[test]
    fn prompt_sources() {
        let words = parse_command_line("do it").unwrap();
        assert_eq!(resolve_prompt(&words, None).unwrap(), "do it");
        assert!(matches!(
            resolve_prompt(&words, Some("x")),
            Err(StartError::PromptTwice)
        ));
        let none = parse_command_line("--max-iterations 3").unwrap();
        assert!(matches!(
            resolve_prompt(&none, None),
            Err(StartError::EmptyPrompt)
        ));
        assert_eq!(
            resolve_prompt(&none, Some("---\ntitle: t\n---\n\nBody `x`\n")).unwrap(),
            "Body `x`\n"
        );
        let prd = parse_command_line("--prd-file prd.json").unwrap();
        assert_eq!(resolve_prompt(&prd, None).unwrap(), DEFAULT_PRD_PROMPT);
    }

    #[test]
    fn prd_loop_defaults_and_description() {
        let args = parse_command_line("--prd-file prd.json --max-iterations 9").unwrap();
        let prd = check_prd(
            "prd.json",
            r#"{"userStories":[{"id":"A","title":"First","passes":false}]}"#,
        )
        .unwrap();
        let s = new_state(&args, DEFAULT_PRD_PROMPT.into(), Some(&prd), "s", "t");
        assert_eq!(s.completion_promise.as_deref(), Some(DEFAULT_PRD_PROMISE));
        assert_eq!(s.story_ids, ["A"]);
        let text = describe(&s, Some(&prd));
        assert!(text.contains("First story: A First"), "{text}");
        assert!(text.contains("at most 9"));
        assert_eq!(first_injection(Some(&prd)).unwrap().count, 1);
        assert!(check_prd("p", r#"{"stories":[{"id":"A","depends_on":["B"]}]}"#).is_err());
    }

    #[test]
    fn preview_is_one_bounded_line() {
        assert_eq!(prompt_preview("a\n  b\tc"), "a b c");
        let long = "x".repeat(500);
        assert_eq!(prompt_preview(&long).chars().count(), 160);
    }

    #[test]
    fn unlimited_loops_warn() {
        let args = parse_command_line("x --max-iterations 0").unwrap();
        let s = new_state(&args, "x".into(), None, "", "t");
        assert_eq!(warnings(&s).len(), 1);
    }
}
