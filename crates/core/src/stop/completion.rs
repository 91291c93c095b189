//! When is a loop complete? This module is the one answer. Pure.
//!
//! - **Plain mode**: the assistant printed the completion promise,
//!   `<promise>TEXT</promise>` (compared after collapsing whitespace), in
//!   its words of this turn.
//! - **PRD mode**: every story recorded at start is still in the PRD and
//!   passes, where a story with its own `verify` command passes only when
//!   that check passed too. The promise alone is refused while a story fails.
//! - Either way, a loop with a `verify` command completes only when that
//!   check exited 0 on the current tree.
//!
//! [`claimed`] says whether a Stop claims completion (the plan then runs the
//! loop's check), and [`judge`] gives the verdict with the check's result.
//! Where completion stands among the other rules (it is judged before the
//! cap, so a true promise on the last turn completes) is `decide`'s order.

use crate::prd::Prd;
use crate::prd::PrdReadError;
use crate::promise;
use crate::review::{self, ReviewLog, ReviewVerdict};
use crate::state::LoopState;
use crate::transcript::Turn;
use crate::verify::{CheckResult, VerifyLog};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

/// The PRD as the loop judges it.
#[derive(Debug, Clone)]
pub struct JudgedPrd<'a> {
    /// The stories as they count: `passes` only when their check passed too.
    pub prd: Cow<'a, Prd>,
    /// Stories that claim `passes: true` but whose check failed, with its result.
    pub refused: BTreeMap<String, CheckResult>,
    /// Stories recorded at start that are no longer in the file (they count as failing).
    pub vanished: Vec<String>,
    /// `--review story`: stories whose review did not approve them, with the verdict.
    pub review_refused: BTreeMap<String, ReviewVerdict>,
    /// `--review story`: stories that pass their checks and wait for their review.
    pub awaiting_review: Vec<String>,
}

impl<'a> JudgedPrd<'a> {
    pub fn new(prd: &'a Prd, state: &LoopState, log: &VerifyLog) -> JudgedPrd<'a> {
        // A set, not `prd.story(id)` per id: 200 stories are 40,000
        // comparisons that way, a tenth of the whole Stop (measured).
        let vanished = if state.story_ids.is_empty() {
            Vec::new()
        } else {
            let present: HashSet<&str> = prd.stories.iter().map(|s| s.id.as_str()).collect();
            let gone = state.story_ids.iter();
            gone.filter(|id| !present.contains(id.as_str()))
                .cloned()
                .collect()
        };
        if !prd.stories.iter().any(|s| s.verify.is_some()) {
            return JudgedPrd {
                prd: Cow::Borrowed(prd),
                refused: BTreeMap::new(),
                vanished,
                review_refused: BTreeMap::new(),
                awaiting_review: Vec::new(),
            };
        }
        let mut judged = prd.clone();
        let mut refused = BTreeMap::new();
        for s in judged.stories.iter_mut().filter(|s| s.passes) {
            let Some(cmd) = &s.verify else { continue };
            let result = log.story(&s.id, cmd);
            s.passes = result.is_some_and(CheckResult::passed);
            if let Some(r) = result.filter(|r| !r.passed()) {
                refused.insert(s.id.clone(), r.clone());
            }
        }
        JudgedPrd {
            prd: Cow::Owned(judged),
            refused,
            vanished,
            review_refused: BTreeMap::new(),
            awaiting_review: Vec::new(),
        }
    }

    /// `--review story`: a story that passes its checks counts only once a
    /// reviewer approved it (`story:ID` in the review log, whatever the
    /// tree since: it was approved when it was done). Until then it waits
    /// for its review; a rejection refuses it, with the verdict, while the
    /// tree is the one it saw (`fingerprint`; without one it stands), and
    /// once the tree changed the story is reviewed again.
    #[must_use]
    pub(crate) fn with_story_reviews(
        self,
        reviews: &ReviewLog,
        fingerprint: Option<&str>,
    ) -> JudgedPrd<'a> {
        let mut prd = self.prd.into_owned();
        let mut review_refused = BTreeMap::new();
        let mut awaiting_review = Vec::new();
        for s in prd.stories.iter_mut().filter(|s| s.passes) {
            match reviews.verdicts.get(&review::story_key(&s.id)) {
                Some(v) if v.approved() => {}
                Some(v) if fingerprint.is_none() || v.fingerprint.as_deref() == fingerprint => {
                    s.passes = false;
                    review_refused.insert(s.id.clone(), v.clone());
                }
                _ => {
                    s.passes = false;
                    awaiting_review.push(s.id.clone());
                }
            }
        }
        JudgedPrd {
            prd: Cow::Owned(prd),
            review_refused,
            awaiting_review,
            ..self
        }
    }

    /// Every story passes, and none vanished.
    pub fn all_pass(&self) -> bool {
        self.vanished.is_empty() && self.prd.all_pass()
    }
}

/// What the assistant said this turn, as far as it can be seen.
/// `last_message` (the client's `last_assistant_message`) is the final
/// block only; when it lacks the promise, the transcript's last turn may
/// hold it in an earlier text block. The turn read once written ends
/// with that block already: it is not said twice (a fence opened in it
/// would be closed by its copy); a turn read late adds nothing.
pub(crate) fn said_this_turn(
    state: &LoopState,
    last_message: Option<&str>,
    turn: Option<&Turn>,
) -> Option<String> {
    if last_message
        .is_some_and(|t| state.completion_promise.is_none() || promise_kept(state, Some(t)))
    {
        return last_message.map(str::to_string);
    }
    match (turn.and_then(|t| t.text.as_deref()), last_message) {
        (Some(t), Some(l)) if t.trim_end().ends_with(l.trim()) => Some(t.to_string()),
        (Some(t), Some(l)) => Some(format!("{t}\n{l}")),
        (t, l) => t.or(l).map(str::to_string),
    }
}

/// The loop's completion promise is in what the assistant said.
pub(crate) fn promise_kept(state: &LoopState, said: Option<&str>) -> bool {
    state
        .completion_promise
        .as_deref()
        .is_some_and(|p| promise::is_kept(said.unwrap_or(""), p))
}

/// Does this Stop claim the work is done? Plain mode: the promise was kept.
/// PRD mode: every story passes (as judged with its checks) and none vanished.
pub(crate) fn claimed(
    state: &LoopState,
    said: Option<&str>,
    prd: Option<Result<&JudgedPrd, &PrdReadError>>,
) -> bool {
    match prd {
        Some(Ok(p)) => p.all_pass(),
        Some(Err(_)) => false,
        None => promise_kept(state, said),
    }
}

/// The verdict on completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Nothing claims the work is done.
    NotClaimed,
    /// Claimed, and confirmed by the loop's check when it has one.
    Complete,
    /// Claimed, but the loop's check failed.
    Refused(Refusal),
}

/// A completion claim the loop's check did not confirm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The check's result; `None` when it could not be run (or passed, and
    /// the claim is refused for `regressed`).
    pub check: Option<CheckResult>,
    /// Tests that passed at an earlier iteration and fail now, by the
    /// loop's score (`stop::measure`): a claim is not done while one does.
    pub regressed: Vec<String>,
    /// By command: the tests gone from the suite since the baseline (or
    /// since they passed), `stop::inventory`: a claim is not done while one is.
    pub(crate) inventory: Vec<(String, crate::suite::inventory::InventoryFinding)>,
}

/// Judge a claim with the loop's check (`loop_check`: its result on this tree).
pub(crate) fn judge(
    state: &LoopState,
    claimed: bool,
    loop_check: Option<&CheckResult>,
) -> Completion {
    match (claimed, &state.verify, loop_check) {
        (false, _, _) => Completion::NotClaimed,
        (true, None, _) => Completion::Complete,
        (true, Some(_), Some(c)) if c.passed() => Completion::Complete,
        (true, Some(_), check) => Completion::Refused(Refusal {
            check: check.cloned(),
            regressed: Vec::new(),
            inventory: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::sample as loop_state;

    fn result(cmd: &str, exit: i32) -> CheckResult {
        CheckResult {
            command: cmd.into(),
            exit: Some(exit),
            timed_out: false,
            output_tail: String::new(),
            fingerprint: Some("f".into()),
            time: "t".into(),
            duration_ms: 1,
            pinned: false,
            put_back: Vec::new(),
            score: None,
            not_run: false,
        }
    }

    #[test]
    fn stories_with_checks_pass_only_when_the_check_passed() {
        let p = Prd::parse(
            r#"{"stories":[{"id":"A","passes":true,"verify":"check a"},{"id":"B","passes":true}]}"#,
        )
        .unwrap();
        let mut s = loop_state(1, 0, None);
        s.story_ids = vec!["A".into(), "B".into(), "C".into()];
        let mut log = VerifyLog::default();
        let judged = JudgedPrd::new(&p, &s, &log);
        assert!(!judged.prd.stories[0].passes, "no result yet");
        assert!(judged.refused.is_empty());
        assert_eq!(judged.vanished, ["C"]);
        log.stories.insert("A".into(), result("check a", 1));
        let judged = JudgedPrd::new(&p, &s, &log);
        assert_eq!(judged.refused.len(), 1);
        log.stories.insert("A".into(), result("check a", 0));
        s.story_ids.pop();
        let judged = JudgedPrd::new(&p, &s, &log);
        assert!(judged.all_pass());
        assert!(claimed(&s, None, Some(Ok(&judged))));
    }

    #[test]
    fn a_claim_completes_only_with_a_passing_check() {
        let mut s = loop_state(1, 0, None);
        assert_eq!(judge(&s, false, None), Completion::NotClaimed);
        assert_eq!(judge(&s, true, None), Completion::Complete);
        s.verify = Some("make".into());
        assert_eq!(
            judge(&s, true, Some(&result("make", 0))),
            Completion::Complete
        );
        assert!(matches!(
            judge(&s, true, Some(&result("make", 2))),
            Completion::Refused(Refusal { check: Some(_), .. })
        ));
        assert_eq!(
            judge(&s, true, None),
            Completion::Refused(Refusal {
                check: None,
                regressed: Vec::new(),
                inventory: Vec::new(),
            })
        );
    }

    #[test]
    fn the_promise_may_sit_in_an_earlier_block_of_the_turn() {
        let mut s = loop_state(1, 0, None);
        s.completion_promise = Some("DONE".into());
        let turn = Turn {
            text: Some("<promise>DONE</promise>".into()),
            ..Turn::default()
        };
        let said = said_this_turn(&s, Some("then a tool call"), Some(&turn));
        assert!(promise_kept(&s, said.as_deref()));
        let kept = said_this_turn(&s, Some("<promise>DONE</promise>"), Some(&turn));
        assert_eq!(kept.as_deref(), Some("<promise>DONE</promise>"));
        // The turn read whole ends with the last block: said once, so a
        // fence it leaves open is not closed by its own copy.
        let fenced = "Example:\n```\n<promise>DONE</promise>";
        let whole = Turn {
            text: Some(format!("Working.\n{fenced}")),
            ..Turn::default()
        };
        let said = said_this_turn(&s, Some(fenced), Some(&whole));
        assert_eq!(said.as_deref(), whole.text.as_deref());
        assert!(!promise_kept(&s, said.as_deref()));
    }
}
