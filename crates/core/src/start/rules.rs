//! The rules of a start: pure. May a loop start over what is there, where
//! its prompt comes from, what a PRD must be at start, and the new loop's
//! state.
//! Pure.

use super::{FullGate, StartError};
use crate::args::StartArgs;
use crate::budget::{self, Budgets};
use crate::fmt::{duration, short_session};
use crate::frontmatter;
use crate::prd::PrdReadError;
use crate::prd::{Prd, PrdError};
use crate::reinject::Injected;
use crate::review::{self, ReviewConfig};
use crate::state::{DEFAULT_MAX_STALLS, DEFAULT_MAX_STORY_ATTEMPTS, DEFAULT_PRD_PROMPT, LoopState};
use std::collections::BTreeMap;

/// A loop whose last decision is older than this is stale: a new start replaces it.
pub(crate) const STALE_AFTER_SECS: u64 = 24 * 3600;
/// The promise a PRD loop uses when none is given.
pub(crate) const DEFAULT_PRD_PROMISE: &str = "RALPH-COMPLETE";

/// What was in the state file when a start came.
#[derive(Debug, Clone)]
pub(crate) enum Existing {
    None,
    /// A state file that did not parse, now kept aside under this name.
    Corrupt(String),
    Loop {
        state: Box<LoopState>,
        age_secs: u64,
    },
}

/// What a start did to a loop that was there before (said to the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prior {
    Fresh,
    ReplacedOwn { iteration: u64 },
    ReplacedStale { session: String, age_secs: u64 },
    ReplacedOther { session: String },
    ReplacedUnclaimed { iteration: u64 },
    ReplacedCorrupt(String),
}

/// How the loop runs: the reason code of its `start` log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Prompt,
    Prd,
}

impl Mode {
    pub(crate) fn of(state: &LoopState) -> Mode {
        if state.prd_file.is_some() {
            Mode::Prd
        } else {
            Mode::Prompt
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Prompt => "prompt",
            Mode::Prd => "prd",
        }
    }
}

/// May a new loop start over `existing`? (`session` is the starter's, "" from a terminal.)
pub(crate) fn check_existing(
    existing: &Existing,
    session: &str,
    replace: bool,
) -> Result<Prior, StartError> {
    let (state, age_secs) = match existing {
        Existing::None => return Ok(Prior::Fresh),
        Existing::Corrupt(kept) => return Ok(Prior::ReplacedCorrupt(kept.clone())),
        Existing::Loop { state, age_secs } => (state, *age_secs),
    };
    let owner = &state.session_id;
    let iteration = state.iteration;
    if age_secs >= STALE_AFTER_SECS {
        let session = owner.clone();
        Ok(Prior::ReplacedStale { session, age_secs })
    } else if owner.is_empty() {
        Ok(Prior::ReplacedUnclaimed { iteration })
    } else if owner == session {
        Ok(Prior::ReplacedOwn { iteration })
    } else if replace {
        let session = owner.clone();
        Ok(Prior::ReplacedOther { session })
    } else {
        Err(StartError::OtherSessionLive {
            session: short_session(owner),
            iteration,
            age: duration(age_secs),
        })
    }
}

/// The prompt from words or a prompt file (whose frontmatter, if any, is not
/// part of the prompt). Empty is allowed only in PRD mode.
pub(crate) fn resolve_prompt(
    args: &StartArgs,
    prompt_file_text: Option<&str>,
) -> Result<String, StartError> {
    let story_review = args
        .review
        .as_ref()
        .is_some_and(|r| r.iter().any(|n| n == review::STORY));
    if story_review && args.prd_file.is_none() {
        return Err(StartError::StoryReviewWithoutPrd);
    }
    if args.parallel.is_some() && args.prd_file.is_none() {
        return Err(StartError::ParallelWithoutPrd);
    }
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

/// Parse and validate a PRD at start (stricter than during the loop: ids
/// unique, no dangling or cyclic dependency, at least one story).
pub(crate) fn check_prd(path: &str, text: &str) -> Result<Prd, StartError> {
    let checked = Prd::parse(text).and_then(|prd| {
        prd.validate()?;
        if prd.stories.is_empty() {
            Err(PrdError::Empty)
        } else {
            Ok(prd)
        }
    });
    checked.map_err(|e| StartError::Prd {
        path: path.to_string(),
        why: PrdReadError::Invalid(e),
    })
}

/// The policy's `[gates] full` command verifies completion when the user
/// gave no `--verify`.
pub(crate) fn gate_used<'g>(args: &StartArgs, gate: Option<&'g FullGate>) -> Option<&'g FullGate> {
    gate.filter(|_| args.verify.is_none())
}

/// Every check a new loop runs, as recorded at start: its `verify` (or
/// the policy's gate), its `--score` and each story's.
pub(crate) fn checks_at_start(
    args: &StartArgs,
    prd: Option<&Prd>,
    gate: Option<&FullGate>,
) -> Vec<String> {
    let verify = match gate_used(args, gate) {
        Some(gate) => Some(gate.command.clone()),
        None => args.verify.clone(),
    };
    let stories = prd
        .map(|p| p.checks_to_record(&BTreeMap::new()))
        .unwrap_or_default();
    // The score decides the plateau rule's end and refuses a claim on a
    // regression: its files are pinned like a check's.
    verify
        .into_iter()
        .chain(args.score.clone())
        .chain(stories.into_values())
        .filter(|c| !c.trim().is_empty())
        .collect()
}

/// The user's pins: `--pin GLOB`s, then the PRD's `"pin"`.
pub(crate) fn pin_globs(args: &StartArgs, prd_globs: &[String]) -> Vec<(&'static str, String)> {
    let flags = args.pin.iter().map(|g| (crate::pins::FROM_FLAG, g.clone()));
    let prd = prd_globs.iter().map(|g| (crate::pins::FROM_PRD, g.clone()));
    flags.chain(prd).collect()
}

/// The model a cost budget is priced at: the session's `model`, which must
/// be known and in the price table. `None` without `--max-cost`.
pub(crate) fn cost_model(
    args: &StartArgs,
    model: Option<&str>,
) -> Result<Option<String>, StartError> {
    if args.max_cost.is_none() {
        return Ok(None);
    }
    let model = model.ok_or(StartError::CostModelUnknown)?;
    match budget::price(model) {
        Some(_) => Ok(Some(model.to_string())),
        None => Err(StartError::CostModelUnpriced {
            model: model.to_string(),
            date: budget::PRICES_DATE,
            known: budget::priced_models(),
        }),
    }
}

/// The budgets of a new loop, nothing spent yet.
pub(crate) fn budgets(args: &StartArgs, cost_model: Option<String>) -> Budgets {
    Budgets {
        max_tokens: args.max_tokens,
        max_runtime_secs: args.max_runtime_secs,
        max_cost: args.max_cost,
        model: cost_model,
        ..Budgets::default()
    }
}

/// Who reviews the work of a new loop: `--review` names them; a
/// `--review-cmd` alone is one reviewer, `custom`. The base commit is the
/// caller's to read.
pub(crate) fn review_config(args: &StartArgs) -> ReviewConfig {
    let reviewers = match (&args.review, &args.review_cmd) {
        (Some(names), _) => names.clone(),
        (None, Some(_)) => vec![review::CUSTOM.to_string()],
        (None, None) => Vec::new(),
    };
    let defaults = ReviewConfig::default();
    ReviewConfig {
        reviewers,
        command: args.review_cmd.clone().filter(|c| !c.trim().is_empty()),
        max_rounds: args.max_reviews.unwrap_or(defaults.max_rounds),
        timeout_secs: args.review_timeout.unwrap_or(defaults.timeout_secs),
        base: None,
    }
}

/// The state of a new loop.
pub(crate) fn new_state(
    args: &StartArgs,
    prompt: String,
    prd: Option<&Prd>,
    gate: Option<&FullGate>,
    session: &str,
    now: &str,
) -> LoopState {
    let promise = match (&args.completion_promise, prd) {
        (Some(p), _) => Some(p.clone()).filter(|p| !p.trim().is_empty()),
        (None, Some(_)) => Some(DEFAULT_PRD_PROMISE.to_string()),
        (None, None) => None,
    };
    let verify = match gate_used(args, gate) {
        Some(gate) => Some(gate.command.clone()),
        None => args.verify.clone(),
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
        story_checks: prd
            .map(|p| p.checks_to_record(&BTreeMap::new()))
            .unwrap_or_default(),
        pins: BTreeMap::new(),
        max_story_attempts: args
            .max_story_attempts
            .unwrap_or(DEFAULT_MAX_STORY_ATTEMPTS),
        verify: verify.filter(|v| !v.trim().is_empty()),
        notify: args.notify.clone().filter(|n| !n.trim().is_empty()),
        verify_timeout: args
            .verify_timeout
            .unwrap_or(crate::verify::DEFAULT_TIMEOUT_SECS),
        max_stalls: args.max_stalls.unwrap_or(DEFAULT_MAX_STALLS),
        stalls: 0,
        score: args.score.clone().filter(|s| !s.trim().is_empty()),
        max_plateau: args
            .max_plateau
            .unwrap_or(crate::state::DEFAULT_MAX_PLATEAU),
        last_fingerprint: None,
        queue_seen: None,
        yielded: false,
        turn_key: None,
        api_error_pause: None,
        budgets: Budgets::default(),
        review: review_config(args),
        blocked: None,
        fresh: args.fresh || args.parallel.is_some(),
        parallel: args.parallel.unwrap_or(0),
        sandbox: None,
        injected: None,
        records: crate::records::RecordGens::default(),
        watched: None,
        prompt,
    }
}

/// The re-injection counter at start: the first story (`--parallel`: the
/// first stories, as one key) counts as fed once.
pub(crate) fn first_injection(prd: Option<&Prd>, parallel: u32) -> Option<Injected> {
    let prd = prd?;
    if parallel > 0 {
        let first = crate::parallel::pick(prd, &[], parallel);
        return (!first.is_empty())
            .then(|| Injected::next(None, &crate::parallel::batch_key(&first)));
    }
    prd.next_runnable().map(|s| Injected::next(None, &s.id))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::args::parse_command_line;

    fn live(session: &str, age: u64) -> Existing {
        let args = parse_command_line("x").unwrap();
        Existing::Loop {
            state: Box::new(new_state(&args, "x".into(), None, None, session, "t")),
            age_secs: age,
        }
    }

    #[test]
    fn another_sessions_live_loop_is_refused_unless_replaced_or_stale() {
        let err = check_existing(&live("other-session", 60), "me", false).unwrap_err();
        assert!(err.to_string().contains("Cancel it with /cancel-ralph"));
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

    /// A PRD loop of one story, started with `--max-iterations 9`.
    pub(crate) fn prd_loop() -> (LoopState, Prd) {
        let args = parse_command_line("--prd-file prd.json --max-iterations 9").unwrap();
        let prd = check_prd(
            "prd.json",
            r#"{"userStories":[{"id":"A","title":"First","passes":false}]}"#,
        )
        .unwrap();
        let s = new_state(&args, DEFAULT_PRD_PROMPT.into(), Some(&prd), None, "s", "t");
        (s, prd)
    }

    #[test]
    fn prd_loop_defaults() {
        let (s, prd) = prd_loop();
        assert_eq!(s.completion_promise.as_deref(), Some(DEFAULT_PRD_PROMISE));
        assert_eq!(s.story_ids, ["A"]);
        assert_eq!(Mode::of(&s), Mode::Prd);
        assert_eq!(first_injection(Some(&prd), 0).unwrap().count, 1);
        assert!(check_prd("p", r#"{"stories":[{"id":"A","depends_on":["B"]}]}"#).is_err());
        let empty = check_prd("p", r#"{"stories":[]}"#).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "p: it has no stories. Fix the PRD, then start again"
        );
    }

    #[test]
    fn a_cost_budget_needs_a_priced_model() {
        let plain = parse_command_line("x").unwrap();
        assert_eq!(cost_model(&plain, None).unwrap(), None);
        let cost = parse_command_line("x --max-cost 5").unwrap();
        assert!(matches!(
            cost_model(&cost, None),
            Err(StartError::CostModelUnknown)
        ));
        let e = cost_model(&cost, Some("claude-foo-1")).unwrap_err();
        assert!(
            e.to_string()
                .contains("no price for the model `claude-foo-1`"),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'), "one line");
        let m = cost_model(&cost, Some("claude-sonnet-4-5-20250929")).unwrap();
        let b = budgets(&cost, m);
        assert_eq!(b.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert!(b.counts_tokens() && b.any());
    }

    #[test]
    fn the_gate_verifies_only_without_verify() {
        let gate = FullGate {
            file: ".ralph/command-policy",
            command: "make test".into(),
        };
        let plain = parse_command_line("x").unwrap();
        let s = new_state(&plain, "x".into(), None, Some(&gate), "", "t");
        assert_eq!(s.verify.as_deref(), Some("make test"));
        let own = parse_command_line("x --verify \"make check\"").unwrap();
        assert!(gate_used(&own, Some(&gate)).is_none());
        let s = new_state(&own, "x".into(), None, Some(&gate), "", "t");
        assert_eq!(s.verify.as_deref(), Some("make check"));
    }
}
