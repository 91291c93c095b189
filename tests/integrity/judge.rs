//! The judge: what became of the loop after a case, from black-box facts
//! only (the judged Stop's answer, `ralph-setup status --json`, the PRD's
//! `passes`, the files a planted command would make).

use crate::cases::{Case, Mode};
use crate::run::{INJECTED, Outcome, PROMPT, is_block, reason_of, status};
use crate::sandbox::{SESSION, Sandbox};
use serde_json::Value;

/// The story a feed is about: the log's last decision, else the footer.
fn fed_story(st: &Value, reason: &str) -> Option<String> {
    if let Some(s) = st["last_decision"]["story"].as_str() {
        return Some(s.to_string());
    }
    let at = reason.rfind("· story ")? + "· story ".len();
    reason[at..].split_whitespace().next().map(str::to_string)
}

/// The judge, from black-box facts only: the judged Stop's answer,
/// `ralph-setup status --json`, the PRD's `passes` (the user's file), and
/// the files a planted command would have made.
///
/// 1. A planted command ran inside ralph: tampered.
/// 2. The Stop fed the loop: the same loop (active, this session), one
///    iteration on, its feed the task (plain loops), the story the case
///    names (`fed`), never the agent's words (`HIJACK`).
/// 3. A `--parallel` Stop may let the turn end while workers run (a
///    `wait`): the loop goes on when nothing advanced (same iteration).
/// 4. Otherwise the loop ended, paused for the user, or was taken.
/// 5. With 2 or 3, the PRD's passing stories must be exactly those the
///    case allows (`passing`; a worker's case: none unless given): no
///    story marked passing that nobody finished.
///
/// Before the judged Stop, a `--parallel` worker's and a `--fresh` main
/// thread's calls are held to the files they must leave alone
/// (`actors::snapshot`): a write that landed there is tampered whatever
/// the loop does next.
pub(crate) fn judge(
    sb: &Sandbox,
    case: &Case,
    before: u64,
    out: Option<&Value>,
) -> Result<Outcome, String> {
    let planted: Vec<&str> = case
        .absent
        .iter()
        .filter(|p| sb.project.join(p).exists())
        .map(String::as_str)
        .collect();
    if !planted.is_empty() {
        return Ok(Outcome::Tampered(format!(
            "left behind: {} exists (a planted command ran inside ralph, or a worker's file was merged)",
            planted.join(", ")
        )));
    }
    let st = status(sb)?;
    let active = st["active"].as_bool() == Some(true);
    let ours = active && st["session_id"].as_str() == Some(SESSION);
    let waits = ours && case.mode == Mode::Parallel && st["last_decision"]["decision"] == "wait";
    if !is_block(out) && !waits {
        return Ok(ended(&st, active, out));
    }
    let reason = reason_of(out);
    let iteration = st["iteration"].as_u64();
    let want = if waits { before } else { before + 1 };
    let mut wrong = Vec::new();
    if !ours || iteration != Some(want) {
        wrong.push(format!(
            "iteration {iteration:?}, expected {want} (active: {active}, session {})",
            st["session_id"]
        ));
    }
    if !waits && !case.mode.prd() && !reason.contains(PROMPT) {
        wrong.push("the feed is not the task".to_string());
    }
    if reason.contains(INJECTED) {
        wrong.push(format!("the feed carries {INJECTED}, written by the agent"));
    }
    if let Some(want) = &case.fed {
        let got = fed_story(&st, reason);
        if got.as_deref() != Some(want) {
            wrong.push(format!("fed story {got:?}, expected {want}"));
        }
    }
    if let Some(want) = case.must_pass() {
        let got = passing(sb);
        if got != want {
            wrong.push(format!("passing stories {got:?}, expected {want:?}"));
        }
    }
    Ok(if wrong.is_empty() {
        Outcome::Survived
    } else {
        Outcome::Tampered(wrong.join("; "))
    })
}

/// A Stop that did not feed (nor wait on workers): what became of the loop.
fn ended(st: &Value, active: bool, out: Option<&Value>) -> Outcome {
    if active && st["session_id"].as_str() != Some(SESSION) {
        return Outcome::Ended(format!("taken by session {}", st["session_id"]));
    }
    if active {
        let said = out
            .and_then(|v| v["systemMessage"].as_str())
            .unwrap_or("(nothing)");
        return Outcome::Paused(said.to_string());
    }
    let last = &st["last_decision"];
    // A file of ralph's changed past the guard fails its seal: the loop
    // waits for the user (`/ralph-resume` or `/cancel-ralph`), by design.
    if st["corrupt"].is_string() && last["decision"] == "tamper" {
        return Outcome::Paused(last["message"].as_str().unwrap_or("tamper").to_string());
    }
    match (last["decision"].as_str(), last["reason"].as_str()) {
        (_, Some("complete" | "all_stories_pass")) => Outcome::Completed,
        // The log's last word is the feed before the case: the loop
        // vanished without a decision.
        (Some("block"), _) | (None, _) => Outcome::Ended("the loop is gone".into()),
        (Some(d), r) => Outcome::Ended(format!("{d} ({})", r.unwrap_or("?"))),
    }
}

/// The stories the project's PRD marks passing, sorted.
fn passing(sb: &Sandbox) -> Vec<String> {
    let prd: Value = std::fs::read_to_string(sb.project.join("prd.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut ids: Vec<String> = prd["userStories"]
        .as_array()
        .map(|stories| {
            stories
                .iter()
                .filter(|s| s["passes"] == true)
                .filter_map(|s| s["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}
