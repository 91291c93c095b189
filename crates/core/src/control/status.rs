//! `ralph-setup status` and `/ralph-status`: the loop's state, PRD
//! progress, checks and last decision, as data (printed as JSON) and as
//! text. Pure.

use crate::activity::Entry;
use crate::budget::{Budget, Budgets, PRICES_DATE};
use crate::prd::Prd;
use crate::prd::PrdReadError;
use crate::review::{ReviewConfig, ReviewLog, ReviewResult, ReviewVerdict};
use crate::run::units::human_duration;
use crate::state::LoopState;
use crate::verify::{CheckResult, DEFAULT_TIMEOUT_SECS, VerifyLog};
use serde::Serialize;
use std::time::Duration;

/// `ralph-setup status`, as data (printed as text or JSON).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub active: bool,
    pub project: String,
    /// Where the loop's authoritative state is kept (outside the project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_file: Option<String>,
    /// `--review`: who reviews, the rounds run, and each reviewer's last verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewStatus>,
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
    /// Paused on an API error: why, since when, until when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<PauseStatus>,
    /// Each budget the loop has: what was spent of what.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<BudgetStatus>,
    /// Pinned checks: the files pinned and those put back (set by the caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pins: Option<PinsStatus>,
    /// `--fresh`: each iteration runs in a `ralph:ralph-worker` subagent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fresh: bool,
    /// `--fresh`: the last worker's run not yet taken by a Stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<crate::fresh::WorkerRecord>,
    /// `--parallel`: the stories in flight, merged, sent back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<ParallelStatus>,
    /// Whether the agent's commands run in Claude Code's sandbox, as seen
    /// at the start (absent: not known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// The loop's measure: its score now, the trend, the best, the curve
    /// (set by the caller, from the loop's scores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<crate::score::summary::ScoreSummary>,
    /// The suite: each baseline, the tests gone since, the removals the
    /// user accepted, the flaky tests (set by the caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suite: Option<crate::suite::overview::SuiteSummary>,
}

/// `--parallel`: where the stories stand in the merge queue.
#[derive(Debug, Clone, Serialize)]
pub struct ParallelStatus {
    pub at_once: u32,
    /// Each worker's story (or agent id, before its story is known) and
    /// its worktree's branch; `sent back` when it is on its second try or later.
    pub in_flight: Vec<String>,
    pub merged: Vec<String>,
    /// Story id and how many times it was sent back.
    pub sent_back: Vec<(String, u32)>,
}

impl ParallelStatus {
    pub fn new(at_once: u32, board: &crate::parallel::Board) -> ParallelStatus {
        ParallelStatus {
            at_once,
            in_flight: board
                .lanes
                .iter()
                .map(|(agent, l)| {
                    let who = l.story.clone().unwrap_or_else(|| format!("worker {agent}"));
                    let again = if l.sent_back > 0 {
                        format!(", sent back {}x", l.sent_back)
                    } else {
                        String::new()
                    };
                    format!("{who} ({}{again})", l.branch)
                })
                .collect(),
            merged: board.merged.clone(),
            sent_back: board
                .sent_back
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        }
    }
}

/// Why a loop waits, since when, and what makes it go on.
#[derive(Debug, Clone, Serialize)]
pub struct PauseStatus {
    /// The API error's code (`rate_limit`, ...), or `tampered`: the loop's
    /// files were changed outside ralph.
    pub reason: String,
    pub since: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    /// `tampered`: each file changed, and how.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// What goes on from here.
    pub resume: String,
    #[serde(skip)]
    kind: PauseKind,
}

/// What a loop waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PauseKind {
    /// An API error or a usage limit: the next prompt or Stop goes on.
    ApiError,
    /// Its files were changed outside ralph: the user resumes or cancels.
    Tampered,
}

impl PauseStatus {
    fn text(&self) -> String {
        if self.kind == PauseKind::Tampered {
            let since = match self.since.as_str() {
                "" => String::new(),
                t => format!(" since {t}"),
            };
            return format!(
                "  paused:   {since} its files were changed outside ralph: {}\n  go on:     {}\n",
                self.changes.join("; "),
                self.resume
            );
        }
        let resets = self
            .resets_at
            .as_deref()
            .map(|r| format!("; the limit resets at {r}"));
        format!(
            "  paused:    since {} on {}{} (API error); {}\n",
            self.since,
            self.reason,
            resets.unwrap_or_default(),
            self.resume
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BudgetStatus {
    /// `tokens`, `runtime_secs` or `cost_usd`.
    pub budget: &'static str,
    pub spent: String,
    pub limit: String,
    /// "12,345 of 200,000 tokens".
    #[serde(skip)]
    pub text: String,
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
        Status::at(project, state, corrupt, prd, checks, last, None)
    }

    /// [`Status::new`] at Unix time `now` (for the runtime budget).
    pub fn at(
        project: String,
        state: Option<&LoopState>,
        corrupt: Option<String>,
        prd: Option<&Result<Prd, PrdReadError>>,
        checks: Option<VerifyLog>,
        last: Option<Entry>,
        now: Option<u64>,
    ) -> Status {
        let prd_file = state.and_then(|s| s.prd_file.clone());
        Status {
            active: state.is_some_and(|s| s.active),
            project,
            state_file: None,
            review: None,
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
            paused: state
                .and_then(|s| s.api_error_pause.as_ref())
                .map(|p| PauseStatus {
                    reason: p.reason.as_str().to_string(),
                    since: p.at.clone(),
                    resets_at: p.resets_at.clone(),
                    changes: Vec::new(),
                    resume: "the next prompt or stop resumes it".into(),
                    kind: PauseKind::ApiError,
                }),
            budgets: state.map(|s| budgets(s, now)).unwrap_or_default(),
            fresh: state.is_some_and(|s| s.fresh),
            pins: state
                .filter(|s| !s.pins.is_empty())
                .map(|s| PinsStatus::new(s, Vec::new())),
            worker: None,
            parallel: None,
            sandbox: state.and_then(|s| s.sandbox),
            score: None,
            suite: None,
        }
    }

    /// A loop paused because its files were changed outside ralph: whose
    /// it is and its iteration by ralph's last record, what changed, and
    /// how to go on.
    pub(crate) fn tampered(
        project: String,
        t: &crate::tamper::Tamper,
        last: Option<Entry>,
    ) -> Status {
        let since = last
            .as_ref()
            .filter(|e| e.decision == "tamper")
            .map(|e| e.time.clone())
            .unwrap_or_default();
        let mut status = Status::new(project, None, None, None, None, last);
        status.active = true;
        status.session_id = Some(t.owner.clone());
        status.iteration = Some(t.iteration);
        status.paused = Some(PauseStatus {
            reason: "tampered".into(),
            since,
            resets_at: None,
            changes: t.changes.clone(),
            kind: PauseKind::Tampered,
            resume: "/ralph-resume (ralph resume in a terminal) accepts the files as they are now, if you changed them; /cancel-ralph (ralph cancel) ends the loop".into(),
        });
        status
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
            let worker = e.worker.as_deref().map(|w| format!(", fresh worker: {w}"));
            out.push_str(&format!(
                "Last decision: {} {} ({}) at iteration {}{}{}\n",
                e.time,
                e.decision,
                e.reason,
                e.iteration,
                story.unwrap_or_default(),
                worker.unwrap_or_default()
            ));
            if let Some(m) = &e.message {
                out.push_str(&format!("  {m}\n"));
            }
        }
        out
    }

    fn loop_lines(&self, out: &mut String) {
        let state = if !self.active {
            "cancelled"
        } else if self.blocked.is_some() || self.paused.is_some() {
            "paused"
        } else {
            "active"
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
            Some(_) => out.push_str(&format!("  iteration: {it} (no cap)\n")),
            // Not known (its state failed its seal).
            None => out.push_str(&format!("  iteration: {it}\n")),
        }
        let promise = self.completion_promise.as_deref();
        if self.max_iterations.is_some() {
            out.push_str(&format!(
                "  promise:   {}\n",
                promise.map_or_else(|| "none".into(), |p| format!("<promise>{p}</promise>"))
            ));
        }
        if let Some(t) = &self.started_at {
            out.push_str(&format!("  started:   {t}\n"));
        }
        self.worker_lines(out);
        if let Some(p) = &self.paused {
            out.push_str(&p.text());
        }
        if !self.budgets.is_empty() {
            let each: Vec<&str> = self.budgets.iter().map(|b| b.text.as_str()).collect();
            out.push_str(&format!("  budget:    {}\n", each.join(" · ")));
        }
        if let Some(f) = &self.state_file {
            out.push_str(&format!("  state:     {f}\n"));
        }
        match self.sandbox {
            Some(true) => out.push_str("  sandbox:   on (the agent's commands run in Claude Code's sandbox)\n"),
            Some(false) => out.push_str("  sandbox:   off (ralph's guard reads each command; /sandbox turns it on for the next loop)\n"),
            None => {}
        }
        if let Some(s) = &self.score {
            out.push_str(&s.text());
        }
        if let Some(s) = &self.suite {
            out.push_str(&s.text());
        }
        if let Some(p) = &self.pins {
            out.push_str(&p.text());
        }
        if let Some(r) = &self.review {
            out.push_str(&r.text());
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

    /// How the loop's work is spread: `--parallel`'s worktrees, `--fresh`'s
    /// subagent, the last worker's outcome.
    fn worker_lines(&self, out: &mut String) {
        if let Some(p) = &self.parallel {
            let list = |v: &[String]| {
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                }
            };
            out.push_str(&format!(
                "  parallel:  up to {} at once, each in its own worktree\n  in flight: {}\n  merged:    {}\n",
                p.at_once,
                list(&p.in_flight),
                list(&p.merged)
            ));
            if !p.sent_back.is_empty() {
                let back: Vec<String> = p
                    .sent_back
                    .iter()
                    .map(|(s, n)| format!("{s} ({n}x)"))
                    .collect();
                out.push_str(&format!("  sent back: {}\n", back.join(", ")));
            }
        } else if self.fresh {
            out.push_str(&format!(
                "  fresh:     each iteration runs in a fresh {} subagent\n",
                crate::fresh::WORKER_TYPE
            ));
        }
        if let Some(w) = &self.worker {
            out.push_str(&format!(
                "  worker:    {}: {} (blocked {} time{})\n",
                w.story.as_deref().unwrap_or("this iteration"),
                w.outcome,
                w.blocked,
                if w.blocked == 1 { "" } else { "s" }
            ));
        }
    }

    fn check_line(&self, who: &str, r: &CheckResult) -> String {
        let outcome = if r.passed() {
            "passed".to_string()
        } else {
            format!("FAILED ({})", r.status_text(self.verify_timeout))
        };
        let pinned = if r.pinned { " (pinned)" } else { "" };
        format!(
            "  check:     {who}: `{}` {outcome}{pinned} at {}\n",
            r.command, r.time
        )
    }
}

/// Each budget of `state`, spent of limit.
fn budgets(state: &LoopState, now: Option<u64>) -> Vec<BudgetStatus> {
    let b = &state.budgets;
    let elapsed = now.and_then(|now| crate::budget::elapsed_secs(state.started_at.as_deref(), now));
    let mut out = Vec::new();
    if let Some(max) = b.max_tokens {
        let (spent, limit) = (b.tokens.to_string(), max.to_string());
        out.push(("tokens", spent, limit, Budget::Tokens));
    }
    if let Some(max) = b.max_cost {
        out.push(("cost_usd", b.cost.exact(), max.exact(), Budget::Cost));
    }
    if let Some(max) = b.max_runtime_secs {
        let spent = elapsed.map(|e| e.to_string()).unwrap_or_default();
        out.push(("runtime_secs", spent, max.to_string(), Budget::Runtime));
    }
    out.into_iter()
        .map(|(budget, spent, limit, which)| BudgetStatus {
            budget,
            spent,
            limit,
            text: spent_of(which, b, elapsed),
        })
        .collect()
}

/// "token budget", as the user reads it.
pub(crate) fn budget_name(budget: Budget) -> &'static str {
    match budget {
        Budget::Tokens => "token budget",
        Budget::Runtime => "runtime budget",
        Budget::Cost => "cost budget",
    }
}

/// "12,345 of 10,000 tokens", "1 h 31 min of 1 h 30 min", "$5.02 of $5.00".
pub(crate) fn spent_of(budget: Budget, b: &Budgets, elapsed_secs: Option<u64>) -> String {
    match budget {
        Budget::Tokens => format!(
            "{} of {} tokens",
            thousands(b.tokens),
            thousands(b.max_tokens.unwrap_or(0))
        ),
        Budget::Runtime => format!(
            "{} of {}",
            human_duration(Duration::from_secs(elapsed_secs.unwrap_or(0))),
            human_duration(Duration::from_secs(b.max_runtime_secs.unwrap_or(0)))
        ),
        Budget::Cost => format!(
            "{} of {}, at the prices of {PRICES_DATE}",
            b.cost,
            b.max_cost.unwrap_or_default()
        ),
    }
}

/// `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Usd;
    use crate::pause::{Pause, PauseReason};

    #[test]
    fn a_paused_loop_with_budgets() {
        let mut s = crate::state::sample(3, 10, None);
        s.started_at = Some("2026-12-01T00:00:00Z".into());
        s.api_error_pause = Some(Pause {
            reason: PauseReason::RateLimit,
            at: "2026-12-01T01:00:00Z".into(),
            resets_at: None,
        });
        s.budgets.max_tokens = Some(200_000);
        s.budgets.tokens = 12_345;
        s.budgets.max_cost = Some(Usd(5_000_000));
        s.budgets.cost = Usd(420_000);
        s.budgets.max_runtime_secs = Some(4 * 3600);
        let now = crate::clock::parse_rfc3339("2026-12-01T01:30:00Z");
        let status = Status::at("/p".into(), Some(&s), None, None, None, None, now);
        let text = status.to_text();
        assert!(
            text.contains("  paused:    since 2026-12-01T01:00:00Z on rate_limit (API error); the next prompt or stop resumes it\n"),
            "{text}"
        );
        assert!(
            text.contains("  budget:    12,345 of 200,000 tokens · $0.42 of $5.00, at the prices of 2026-12-01 · 1 h 30 min of 4 h 00 min\n"),
            "{text}"
        );
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["budgets"][0]["spent"], "12345");
        assert_eq!(json["budgets"][2]["spent"], "5400");
        assert_eq!(json["paused"]["reason"], "rate_limit");
    }
}

/// The pins of a loop, as `status` shows them.
#[derive(Debug, Clone, Serialize)]
pub struct PinsStatus {
    pub count: usize,
    /// Each pinned file (relative) with what pinned it.
    pub files: std::collections::BTreeMap<String, String>,
    /// Pinned files changed during the loop and put back before a check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub put_back: Vec<String>,
    /// The package.json scripts the checks run, held as at start
    /// (`pins::scripts`): `test (npm test)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<String>,
}

impl PinsStatus {
    pub fn new(state: &LoopState, put_back: Vec<String>) -> PinsStatus {
        PinsStatus {
            count: state.pins.len(),
            files: state.pins.clone(),
            put_back,
            scripts: Vec::new(),
        }
    }

    /// Up to 5 paths named, then how many more.
    fn text(&self) -> String {
        let shown: Vec<&str> = self.files.keys().take(5).map(String::as_str).collect();
        let more = self.count.saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let mut out = String::new();
        if self.count > 0 {
            out.push_str(&format!(
                "  pins:      {} file{} fixed at start: {}{more}\n",
                self.count,
                if self.count == 1 { "" } else { "s" },
                shown.join(", ")
            ));
        }
        if !self.scripts.is_empty() {
            out.push_str(&format!(
                "  scripts:   package.json's {}, held as at start\n",
                self.scripts.join(", ")
            ));
        }
        if !self.put_back.is_empty() {
            out.push_str(&format!(
                "  put back:  {} (changed during the loop; restored before a check)\n",
                self.put_back.join(", ")
            ));
        }
        out
    }
}

/// The review of a loop, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewStatus {
    pub reviewers: Vec<String>,
    pub rounds: u32,
    pub max_rounds: u32,
    /// Each reviewer's last verdict, when it gave one.
    pub verdicts: Vec<(String, ReviewVerdict)>,
}

impl ReviewStatus {
    pub fn new(config: &ReviewConfig, log: &ReviewLog) -> ReviewStatus {
        ReviewStatus {
            reviewers: config.reviewers.clone(),
            rounds: log.rounds,
            max_rounds: config.max_rounds,
            // The final reviewers' verdicts, then each story's (`story:ID`).
            verdicts: config
                .final_reviewers()
                .iter()
                .filter_map(|n| log.verdicts.get(n).map(|v| (n.clone(), v.clone())))
                .chain(
                    log.verdicts
                        .iter()
                        .filter(|(k, _)| k.starts_with("story:"))
                        .map(|(k, v)| (k.clone(), v.clone())),
                )
                .collect(),
        }
    }

    fn text(&self) -> String {
        let mut out = format!(
            "  review:    {} (round {} of {})\n",
            self.reviewers.join(", "),
            self.rounds,
            self.max_rounds
        );
        for (name, v) in &self.verdicts {
            let what = match v.outcome {
                ReviewResult::Approved => "approved".to_string(),
                ReviewResult::Rejected => format!("REJECTED, {} finding(s)", v.findings.len()),
                ReviewResult::Failed => {
                    format!("no verdict ({})", v.error.as_deref().unwrap_or("it failed"))
                }
            };
            out.push_str(&format!("    {name}: {what} at {}\n", v.time));
            for f in v.findings.iter().filter(|_| !v.approved()) {
                out.push_str(&format!("      - {}\n", f.line_text()));
            }
        }
        out
    }
}
