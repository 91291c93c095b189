//! `ralph-setup status` and `/ralph-status`: the loop's state, PRD
//! progress, checks and last decision, as data (printed as JSON) and as
//! text. Pure.

use crate::activity::Entry;
use crate::paths::PrdReadError;
use crate::prd::Prd;
use crate::state::LoopState;
use crate::verify::{CheckResult, DEFAULT_TIMEOUT_SECS, VerifyLog};
use serde::Serialize;

/// `ralph-setup status`, as data (printed as text or JSON).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub active: bool,
    pub project: String,
    /// Where the loop's authoritative state is kept (outside the project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt: Option<String>,
    /// The loop waits for a human (a blocker): why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
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
    pub checks: Option<VerifyLog>,
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

impl PrdStatus {
    fn new(file: String, prd: &Result<Prd, PrdReadError>) -> PrdStatus {
        match prd {
            Ok(p) => {
                let (passing, total) = p.progress();
                let failing = p.stories.iter().filter(|s| !s.passes);
                PrdStatus {
                    file,
                    error: None,
                    passing,
                    total,
                    next_story: p.next_runnable().map(|s| s.id.clone()),
                    failing: failing.map(|s| s.id.clone()).collect(),
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
        }
    }
}

impl Status {
    /// The status of `project`: its loop (`state`), or why its state file
    /// cannot be used (`corrupt`), with the PRD, check results and the
    /// activity log's last entry.
    pub fn new(
        project: String,
        state: Option<&LoopState>,
        corrupt: Option<String>,
        prd: Option<&Result<Prd, PrdReadError>>,
        checks: Option<VerifyLog>,
        last: Option<Entry>,
    ) -> Status {
        let prd_file = state.and_then(|s| s.prd_file.clone());
        Status {
            active: state.is_some_and(|s| s.active),
            project,
            state_file: None,
            corrupt,
            blocked: state.and_then(|s| s.blocked.clone()),
            session_id: state.map(|s| s.session_id.clone()),
            iteration: state.map(|s| s.iteration),
            max_iterations: state.map(|s| s.max_iterations),
            completion_promise: state.and_then(|s| s.completion_promise.clone()),
            started_at: state.and_then(|s| s.started_at.clone()),
            prd: prd_file
                .zip(prd)
                .map(|(file, prd)| PrdStatus::new(file, prd)),
            last_decision: last,
            verify: state.and_then(|s| s.verify.clone()),
            checks,
            verify_timeout: state.map_or(DEFAULT_TIMEOUT_SECS, |s| s.verify_timeout),
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(c) = &self.corrupt {
            out.push_str(&format!("Ralph loop: state file is corrupt: {c}\n"));
        } else if self.iteration.is_none() {
            out.push_str(&format!("No Ralph loop is active in {}.\n", self.project));
        } else {
            self.loop_lines(&mut out);
        }
        if let Some(v) = &self.verify {
            out.push_str(&format!("  verify:    `{v}`\n"));
        }
        if let Some(checks) = &self.checks {
            if let Some(r) = &checks.r#loop {
                out.push_str(&self.check_line("loop", r));
            }
            for (id, r) in &checks.stories {
                out.push_str(&self.check_line(&format!("story {id}"), r));
            }
        }
        if let Some(e) = &self.last_decision {
            let story = e.story.as_deref().map(|s| format!(", story {s}"));
            out.push_str(&format!(
                "Last decision: {} {} ({}) at iteration {}{}\n",
                e.time,
                e.decision,
                e.reason,
                e.iteration,
                story.unwrap_or_default()
            ));
            if let Some(m) = &e.message {
                out.push_str(&format!("  {m}\n"));
            }
        }
        out
    }

    fn loop_lines(&self, out: &mut String) {
        let state = match (self.active, &self.blocked) {
            (false, _) => "cancelled",
            (true, Some(_)) => "paused",
            (true, None) => "active",
        };
        out.push_str(&format!("Ralph loop {state} in {}\n", self.project));
        let session = match self.session_id.as_deref().unwrap_or("") {
            "" => "(not claimed yet: the next session to stop claims it)",
            s => s,
        };
        out.push_str(&format!("  session:   {session}\n"));
        if let Some(why) = &self.blocked {
            out.push_str(&format!(
                "  blocked:   {why} (/ralph-resume goes on, /cancel-ralph ends it)\n"
            ));
        }
        let it = self.iteration.unwrap_or(0);
        match self.max_iterations {
            Some(m) if m > 0 => out.push_str(&format!("  iteration: {it}/{m}\n")),
            _ => out.push_str(&format!("  iteration: {it} (no cap)\n")),
        }
        let promise = self.completion_promise.as_deref();
        out.push_str(&format!(
            "  promise:   {}\n",
            promise.map_or_else(|| "none".into(), |p| format!("<promise>{p}</promise>"))
        ));
        if let Some(t) = &self.started_at {
            out.push_str(&format!("  started:   {t}\n"));
        }
        if let Some(f) = &self.state_file {
            out.push_str(&format!("  state:     {f}\n"));
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

    fn check_line(&self, who: &str, r: &CheckResult) -> String {
        let outcome = if r.passed() {
            "passed".to_string()
        } else {
            format!("FAILED ({})", r.status_text(self.verify_timeout))
        };
        format!(
            "  check:     {who}: `{}` {outcome} at {}\n",
            r.command, r.time
        )
    }
}
