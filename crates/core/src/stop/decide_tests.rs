use super::*;
use crate::prd::{Prd, PrdError};
use crate::queued::QueueAction;
use crate::state::{DEFAULT_PRD_PROMPT, sample as state};
use crate::stop::completion;
use crate::stop::plan::ReviewStage;
use crate::verify::{CheckResult, VerifyLog};

/// One Stop's facts, decided the way the plan and `decide` do it.
struct Case {
    state: LoopState,
    said: Option<&'static str>,
    prd: Option<Result<Prd, PrdReadError>>,
    blocker: Option<Blocker>,
    last_injected: Option<Injected>,
    log: VerifyLog,
    loop_check: Option<CheckResult>,
    queue: QueueAction,
    stalls: u32,
    elapsed_secs: Option<u64>,
    review: ReviewStage,
    review_rounds: u32,
    in_flight: Vec<Option<String>>,
    /// `--fresh`: a worker runs in the background.
    fresh_worker: bool,
    /// This Stop's score and what it means.
    scored: Option<crate::stop::measure::Scored>,
    scores: crate::score::history::History,
}

impl Case {
    fn new(state: LoopState, said: Option<&'static str>) -> Case {
        Case {
            state,
            said,
            prd: None,
            blocker: None,
            last_injected: None,
            log: VerifyLog::default(),
            loop_check: None,
            queue: QueueAction::None,
            stalls: 0,
            elapsed_secs: None,
            review: ReviewStage::Off,
            review_rounds: 0,
            in_flight: Vec::new(),
            fresh_worker: false,
            scored: None,
            scores: crate::score::history::History::default(),
        }
    }

    fn prd(state: LoopState, said: Option<&'static str>, json: &str) -> Case {
        Case {
            prd: Some(Ok(Prd::parse(json).unwrap())),
            ..Case::new(state, said)
        }
    }

    fn decide(&self) -> Decision {
        let judged = self.prd.as_ref().map(|read| {
            read.as_ref()
                .map(|p| completion::JudgedPrd::new(p, &self.state, &self.log))
        });
        let prd = judged.as_ref().map(|p| p.as_ref().map_err(|e| *e));
        let claimed = completion::claimed(&self.state, self.said, prd);
        let completion = completion::judge(&self.state, claimed, self.loop_check.as_ref());
        crate::stop::decision(&StopContext {
            state: &self.state,
            said: self.said,
            prd,
            blocker: self.blocker.as_ref(),
            last_injected: self.last_injected.as_ref(),
            completion: &completion,
            queue: &self.queue,
            stalls: self.stalls,
            budgets: &self.state.budgets,
            elapsed_secs: self.elapsed_secs,
            review: &self.review,
            review_rounds: self.review_rounds,
            scored: self.scored.as_ref(),
            scores: &self.scores,
            in_flight: &self.in_flight,
            workers: Workers::of(&self.state, &self.in_flight, self.fresh_worker),
            root: std::path::Path::new("/p"),
            reader: crate::hook_output::Reader::Session,
        })
    }
}

/// The feed of a decision that blocks: (next iteration, reason, counter).
fn fed(d: &Decision) -> (u64, &str, Option<&Injected>) {
    match &d.next {
        Next::Feed {
            iteration,
            reason,
            injected,
        } => (*iteration, reason, injected.as_ref()),
        _ => panic!("expected the loop to go on: {d:?}"),
    }
}

fn reason(d: &Decision) -> &str {
    fed(d).1
}

/// The iterations done, of a decision that ends the loop.
fn ended(d: &Decision) -> u64 {
    match d.next {
        Next::End { iterations } => iterations,
        _ => panic!("expected the loop to end: {d:?}"),
    }
}

fn prd_state(iteration: u64, ids: &[&str]) -> LoopState {
    LoopState {
        prd_file: Some("prd.json".into()),
        story_ids: ids.iter().map(|s| s.to_string()).collect(),
        prompt: DEFAULT_PRD_PROMPT.into(),
        ..state(iteration, 20, Some("RALPH-COMPLETE"))
    }
}

const THREE: &str = r#"{"userStories":[
  {"id":"US-1","title":"Schema","priority":1,"passes":true,"acceptanceCriteria":["table exists"]},
  {"id":"US-2","title":"API","priority":2,"passes":false,"depends_on":["US-1"],"acceptanceCriteria":["GET works"]},
  {"id":"US-3","title":"UI","priority":1,"passes":false,"depends_on":["US-2"]}]}"#;

fn check(cmd: &str, exit: Option<i32>, timed_out: bool, out: &str) -> CheckResult {
    CheckResult {
        command: cmd.into(),
        exit,
        timed_out,
        output_tail: out.into(),
        fingerprint: Some("f".into()),
        time: "t".into(),
        duration_ms: 5,
        pinned: false,
        put_back: Vec::new(),
        score: None,
        not_run: false,
    }
}

#[test]
fn plain_block_feeds_prompt_verbatim_and_counts() {
    let s = state(1, 3, Some("DONE"));
    let d = Case::new(s.clone(), Some("working on it")).decide();
    assert_eq!(d.code, Code::Continue);
    let (next, reason, _) = fed(&d);
    assert_eq!(next, 2);
    assert!(reason.starts_with(s.prompt.trim_end()), "{reason}");
    assert!(!reason.contains("\n\n\n"), "{reason}");
    assert!(reason.contains("iteration 2/3"), "{reason}");
    assert!(d.system_message.contains("Ralph iteration 2/3"), "{d:?}");
}

#[test]
fn promise_completes_even_on_the_last_turn() {
    let s = state(3, 3, Some("ALL DONE"));
    let d = Case::new(s, Some("Done.\n<promise>\n ALL\n  DONE </promise>")).decide();
    assert_eq!(d.code, Code::Complete);
    assert_eq!(ended(&d), 3);
    assert!(d.system_message.contains("after 3 iterations"));
}

#[test]
fn bare_promise_is_not_completion_and_cap_ends() {
    let d = Case::new(state(2, 3, Some("DONE")), Some("DONE")).decide();
    assert_eq!(d.code, Code::Continue);
    let d = Case::new(state(3, 3, Some("DONE")), Some("DONE")).decide();
    assert_eq!(d.code, Code::MaxIterations);
    assert!(
        d.system_message.contains("cap (3) after 3 iterations"),
        "{d:?}"
    );
}

#[test]
fn mismatched_tag_is_explained_to_the_model() {
    let d = Case::new(state(1, 0, Some("DONE")), Some("<promise>almost</promise>")).decide();
    assert!(reason(&d).contains("did not match"));
}

#[test]
fn unlimited_loop_has_no_cap_and_says_so() {
    let d = Case::new(state(500, 0, None), None).decide();
    let (next, reason, _) = fed(&d);
    assert_eq!(next, 501);
    assert!(reason.contains("cancel-ralph"));
}

#[test]
fn inactive_state_ends_as_cancelled() {
    let mut s = state(4, 10, None);
    s.active = false;
    assert_eq!(Case::new(s, None).decide().code, Code::Cancelled);
}

#[test]
fn prd_feeds_next_story_with_progress_and_counter() {
    let s = prd_state(1, &["US-1", "US-2", "US-3"]);
    let d = Case::prd(s, Some("ok"), THREE).decide();
    assert_eq!(d.code, Code::Story);
    assert_eq!(d.story.as_deref(), Some("US-2"));
    let (_, reason, injected) = fed(&d);
    assert!(reason.contains("story US-2 of prd.json: API"), "{reason}");
    assert!(reason.contains("- GET works"));
    assert!(reason.contains("1/3 stories pass"));
    assert!(reason.contains("\"passes\": true"));
    assert!(reason.contains("progress.txt"));
    assert!(!reason.contains("Loop instructions"));
    let first = Injected {
        story_id: "US-2".into(),
        count: 1,
    };
    assert_eq!(injected, Some(&first));
    assert!(d.system_message.contains("story US-2"));
}

#[test]
fn prd_refuses_early_promise_and_completes_when_all_pass() {
    let s = prd_state(2, &["US-1", "US-2", "US-3"]);
    let d = Case::prd(s.clone(), Some("<promise>RALPH-COMPLETE</promise>"), THREE).decide();
    assert_eq!(d.code, Code::PromiseRefused);
    assert!(reason(&d).starts_with("Completion refused"), "{d:?}");
    assert!(reason(&d).contains("US-2, US-3"));
    let all = THREE.replace("\"passes\":false", "\"passes\":true");
    let d = Case::prd(s, None, &all).decide();
    assert_eq!(d.code, Code::AllStoriesPass);
}

#[test]
fn prd_all_pass_beats_the_cap() {
    let mut s = prd_state(20, &["US-1"]);
    s.max_iterations = 20;
    let d = Case::prd(s, None, r#"{"stories":[{"id":"US-1","passes":true}]}"#).decide();
    assert_eq!(d.code, Code::AllStoriesPass);
}

#[test]
fn prd_deadlock_is_fed_for_repair() {
    let s = prd_state(3, &["a", "b"]);
    let json = r#"{"stories":[{"id":"a","depends_on":["b"]},{"id":"b","depends_on":["a"]}]}"#;
    let d = Case::prd(s, None, json).decide();
    assert_eq!(d.code, Code::Deadlock);
    let r = reason(&d);
    assert!(r.contains("a waits on b; b waits on a"), "{r}");
    assert!(r.contains("Restore them"), "{r}");
    assert!(d.system_message.contains("a waits on b"), "{d:?}");
}

#[test]
fn vanished_story_counts_as_failing() {
    let s = prd_state(3, &["US-1", "US-9"]);
    let d = Case::prd(s, None, r#"{"stories":[{"id":"US-1","passes":true}]}"#).decide();
    assert_eq!(d.code, Code::StoriesVanished);
    assert!(reason(&d).contains("US-9"));
    assert!(d.system_message.contains("US-9"));
}

#[test]
fn a_blocker_naming_a_failing_story_pauses_the_loop_for_the_user() {
    let s = prd_state(2, &["US-1", "US-2", "US-3"]);
    let blocked = |story_id: &str, summary: &str| Case {
        blocker: Some(Blocker {
            story_id: story_id.into(),
            summary: summary.into(),
        }),
        ..Case::prd(s.clone(), None, THREE)
    };
    let d = blocked("US-2", "Need creds.").decide();
    assert_eq!(d.code, Code::Blocked);
    let Next::Hold { why } = &d.next else {
        panic!("expected a pause: {d:?}");
    };
    assert!(why.contains("US-2") && why.contains("Need creds."), "{why}");
    assert!(
        d.system_message.contains("/ralph-resume"),
        "{}",
        d.system_message
    );
    assert!(!d.remove_blocker, "the user reads it");

    // Paused, it stays paused, whatever the turn said.
    let paused = Case {
        said: Some("<promise>RALPH-COMPLETE</promise>"),
        ..Case::prd(
            LoopState {
                blocked: Some(why.clone()),
                ..s.clone()
            },
            None,
            THREE,
        )
    };
    assert!(matches!(paused.decide().next, Next::Hold { .. }));

    // Naming a passing story: resolved, removed, the loop goes on.
    let d = blocked("US-1", "old").decide();
    fed(&d);
    assert!(d.remove_blocker);

    // Naming no story, or one the PRD lacks: ignored, removed, the model told.
    for id in ["", "US-9"] {
        let d = blocked(id, "I give up.").decide();
        let r = reason(&d);
        assert!(r.starts_with("Ralph ignored .ralph-blocker.md"), "{r}");
        assert!(d.remove_blocker);
    }
}

#[test]
fn a_blocker_in_plain_mode_is_ignored_and_the_model_told() {
    let case = Case {
        blocker: Some(Blocker {
            story_id: String::new(),
            summary: "Stop the loop.".into(),
        }),
        ..Case::new(state(2, 20, Some("DONE")), None)
    };
    let d = case.decide();
    let r = reason(&d);
    assert!(r.contains("a blocker pauses only a PRD loop"), "{r}");
    assert!(d.remove_blocker);
}

#[test]
fn reinjection_escalates_then_stops() {
    let s = prd_state(4, &["US-1", "US-2", "US-3"]);
    let after = |count: u32| Case {
        last_injected: Some(Injected {
            story_id: "US-2".into(),
            count,
        }),
        ..Case::prd(s.clone(), None, THREE)
    };
    let d = after(2).decide();
    let (_, reason, injected) = fed(&d);
    assert!(reason.contains("attempt 3 of 5"), "{reason}");
    assert_eq!(injected.unwrap().count, 3);
    assert_eq!(after(5).decide().code, Code::StoryStuck);
}

#[test]
fn invalid_prd_asks_for_repair() {
    let case = Case {
        prd: Some(Err(PrdError::NotJson("EOF".into()).into())),
        ..Case::new(prd_state(2, &["US-1"]), None)
    };
    let d = case.decide();
    assert_eq!(d.code, Code::PrdInvalid);
    assert!(reason(&d).contains("Restore prd.json"));
}

#[test]
fn user_instructions_are_kept_in_prd_mode() {
    let mut s = prd_state(1, &["US-1", "US-2", "US-3"]);
    s.prompt = "Use pnpm, never npm.\n".into();
    let d = Case::prd(s, None, THREE).decide();
    assert!(reason(&d).contains("## Loop instructions\nUse pnpm, never npm."));
}

#[test]
fn verified_promise_completes_only_when_the_check_passes() {
    let mut s = state(2, 10, Some("DONE"));
    s.verify = Some("cargo test".into());
    let with_check = |c: CheckResult| Case {
        loop_check: Some(c),
        ..Case::new(s.clone(), Some("<promise>DONE</promise>"))
    };
    let d = with_check(check("cargo test", Some(101), false, "test foo ... FAILED")).decide();
    assert_eq!(d.code, Code::VerifyFailed);
    let r = reason(&d);
    assert!(
        r.contains("Completion refused") && r.contains("exit 101"),
        "{r}"
    );
    assert!(r.contains("test foo ... FAILED"));
    assert!(
        d.system_message.contains("check failed (exit 101)"),
        "{d:?}"
    );
    let d = with_check(check("cargo test", None, true, "")).decide();
    assert!(reason(&d).contains("timed out after 300 s"), "{d:?}");
    let d = with_check(check("cargo test", Some(0), false, "ok")).decide();
    assert_eq!(d.code, Code::Complete);
    assert!(
        d.system_message
            .contains("verified (`cargo test` exited 0)")
    );
}

#[test]
fn story_with_failing_check_is_fed_again_with_its_output() {
    let s = prd_state(3, &["A", "B"]);
    let json = r#"{"stories":[{"id":"A","passes":true,"verify":"make a"},{"id":"B","passes":false,"depends_on":["A"]}]}"#;
    let with_result = |c: CheckResult| {
        let mut case = Case::prd(s.clone(), None, json);
        case.log.stories.insert("A".into(), c);
        case
    };
    let d = with_result(check("make a", Some(2), false, "a.c:3: error")).decide();
    assert_eq!(d.code, Code::VerifyFailed);
    assert_eq!(d.story.as_deref(), Some("A"));
    let r = reason(&d);
    assert!(
        r.contains("claim that A passes was refused") && r.contains("a.c:3: error"),
        "{r}"
    );
    assert!(r.contains("0/2 stories pass"));
    assert!(d.system_message.contains("check failed (exit 2)"));
    let d = with_result(check("make a", Some(0), false, "")).decide();
    assert_eq!(d.story.as_deref(), Some("B"));
}

#[test]
fn prd_final_check_gates_completion() {
    let mut s = prd_state(3, &["A"]);
    s.verify = Some("make check".into());
    let with_check = |c: CheckResult| Case {
        loop_check: Some(c),
        ..Case::prd(s.clone(), None, r#"{"stories":[{"id":"A","passes":true}]}"#)
    };
    let d = with_check(check("make check", Some(1), false, "boom")).decide();
    assert_eq!(d.code, Code::VerifyFailed);
    assert!(reason(&d).contains("final check failed") && reason(&d).contains("boom"));
    let d = with_check(check("make check", Some(0), false, "")).decide();
    assert_eq!(d.code, Code::AllStoriesPass);
}

#[test]
fn no_progress_breaker_fires_at_n_but_a_true_promise_still_completes() {
    let stalled = |s: &LoopState, said, stalls| Case {
        stalls,
        ..Case::new(s.clone(), Some(said))
    };
    let s = state(5, 0, Some("DONE"));
    assert_eq!(stalled(&s, "x", 2).decide().code, Code::Continue);
    let d = stalled(&s, "x", 3).decide();
    assert_eq!(d.code, Code::Stalled);
    assert!(
        d.system_message.contains("did not change for 3 iterations"),
        "{d:?}"
    );
    let promised = stalled(&s, "<promise>DONE</promise>", 3).decide();
    assert_eq!(promised.code, Code::Complete);
    // On the turn the cap is reached too, the cap is the reason given.
    let capped = state(5, 5, Some("DONE"));
    assert_eq!(stalled(&capped, "x", 3).decide().code, Code::MaxIterations);
    let mut off = state(5, 0, None);
    off.max_stalls = 0;
    assert_eq!(stalled(&off, "x", 99).decide().code, Code::Continue);
}

/// Scores of `passed` out of 10 at iterations 1, 2, ... (the last this Stop's).
fn scored(passed: &[u32], regressed: &[&str]) -> crate::stop::measure::Scored {
    use crate::score::history::{History, IterationScore, Regression};
    use crate::score::{Runner, Score};
    let mut history = History::default();
    for (i, p) in passed.iter().enumerate() {
        let score = Score {
            reader: Runner::Pytest,
            passed: *p,
            failed: 10 - p,
            ..Score::of_exit(false)
        };
        let entry = IterationScore {
            iteration: i as u64 + 1,
            time: "t".into(),
            story: None,
            command: "pytest".into(),
            score,
            fingerprint: format!("f{i}"),
            tree: None,
            commit: Some(format!("c0ffee{i}")),
            tokens: (i as u64 + 1) * 100_000,
            cost: None,
        };
        history = history.with(entry, &[]);
    }
    let regressions = regressed
        .iter()
        .map(|t| Regression {
            test: (*t).to_string(),
            passed_at: 2,
            tree: None,
        })
        .collect();
    crate::stop::measure::Scored {
        new_best: history
            .standing()
            .is_some_and(|s| std::ptr::eq(s.best, s.newest)),
        history,
        regressions,
        changed: vec![(2, vec!["src/date.rs".into()])],
        flaky: Vec::new(),
    }
}

#[test]
fn the_plateau_rule_stops_a_loop_that_edits_without_gaining_and_names_the_best() {
    let s = state(6, 20, Some("DONE"));
    let with = |passed: &[u32], said| Case {
        scored: Some(scored(passed, &[])),
        ..Case::new(s.clone(), Some(said))
    };
    // Four scored iterations since the best (iteration 2): one short of 5.
    let d = with(&[3, 6, 6, 5, 6, 6], "x").decide();
    assert_eq!(d.code, Code::Continue);
    let (_, reason, _) = fed(&d);
    assert!(
        reason.contains(
            "Score (`pytest`): tests 6/10 (= since iteration 5); best tests 6/10 at iteration 2."
        ),
        "{reason}"
    );
    assert!(
        reason.contains("4 iterations of 5 that changed the code without beating the best"),
        "{reason}"
    );
    assert!(
        d.system_message.ends_with(" · tests 6/10 ="),
        "{}",
        d.system_message
    );
    // The fifth: the loop stops, naming the best, its commit and the way back.
    let d = with(&[3, 6, 6, 5, 6, 6, 6], "x").decide();
    assert_eq!(d.code, Code::Plateau);
    assert!(d.system_message.contains("5 iterations in a row changed the code without beating the best score, tests 6/10 at iteration 2 (plateau rule, --max-plateau 5)"), "{}", d.system_message);
    assert!(
        d.system_message
            .contains("Its tree is commit c0ffee1 (also refs/ralph/best)"),
        "{}",
        d.system_message
    );
    assert!(
        d.system_message
            .contains("git restore --source=c0ffee1 -- ."),
        "{}",
        d.system_message
    );
    assert!(
        d.system_message.contains("spent 500k tokens"),
        "{}",
        d.system_message
    );
    // A loop that gains is never stopped by it; a true promise still completes.
    assert_eq!(
        with(&[1, 2, 3, 4, 5, 6, 7], "x").decide().code,
        Code::Continue
    );
    assert_eq!(
        with(&[3, 6, 6, 6, 6, 6, 6], "<promise>DONE</promise>")
            .decide()
            .code,
        Code::Complete
    );
    // Off with 0; the cap is the reason given on the turn it is reached too.
    let mut off = s.clone();
    off.max_plateau = 0;
    let case = Case {
        scored: Some(scored(&[6, 6, 6, 6, 6, 6, 6], &[])),
        ..Case::new(off, Some("x"))
    };
    assert_eq!(case.decide().code, Code::Continue);
    let capped = Case {
        scored: Some(scored(&[6, 6, 6, 6, 6, 6, 6], &[])),
        ..Case::new(state(20, 20, None), Some("x"))
    };
    assert_eq!(capped.decide().code, Code::MaxIterations);
}

#[test]
fn a_regression_is_named_with_its_iteration_and_what_changed_since() {
    let case = Case {
        scored: Some(scored(&[5, 7, 6], &["t_parse_date"])),
        ..Case::new(state(3, 20, None), Some("x"))
    };
    let d = case.decide();
    let (_, reason, _) = fed(&d);
    assert!(
        reason.contains("- t_parse_date passed at iteration 2 and fails now; since then you changed src/date.rs."),
        "{reason}"
    );
    assert!(
        reason.contains("tests 6/10 (↓1 since iteration 2); best tests 7/10 at iteration 2."),
        "{reason}"
    );
}

#[test]
fn what_the_user_queued_comes_first() {
    let queued = |queue: QueueAction| Case {
        queue,
        ..Case::new(state(3, 3, Some("DONE")), Some("<promise>DONE</promise>"))
    };
    let typed = "/ralph:cancel-ralph".to_string();
    let d = queued(QueueAction::Cancel { typed }).decide();
    assert_eq!((d.code, &d.next), (Code::Cancelled, &Next::Cancel));
    assert!(
        d.system_message
            .contains("at iteration 3/3: you typed /ralph:cancel-ralph"),
        "{d:?}"
    );
    let texts = vec!["what is 2+2?".to_string()];
    let d = queued(QueueAction::Yield { texts }).decide();
    assert_eq!((d.code, &d.next), (Code::UserMessage, &Next::Yield));
    assert!(
        d.system_message.contains("paused at iteration 3/3"),
        "{d:?}"
    );
    let answer = QueueAction::Answer {
        status: true,
        help: false,
    };
    assert_eq!(queued(answer).decide().code, Code::Complete);
}

#[test]
fn budgets_end_the_loop_after_the_cap_and_before_the_breaker() {
    let mut s = state(3, 10, Some("DONE"));
    s.budgets.max_tokens = Some(1_000);
    s.budgets.tokens = 1_200;
    s.max_stalls = 2;
    let mut case = Case::new(s.clone(), Some("working"));
    case.stalls = 2;
    let d = case.decide();
    assert_eq!(ended(&d), 3);
    assert_eq!(d.code, crate::activity::Code::TokenBudget);
    assert!(
        d.system_message
            .contains("the token budget is spent (1,200 of 1,000 tokens)"),
        "{}",
        d.system_message
    );
    assert!(d.system_message.contains("--max-tokens"));
    // A true promise on the last turn still completes.
    let done = Case::new(s.clone(), Some("<promise>DONE</promise>")).decide();
    assert_eq!(done.code, crate::activity::Code::Complete);
    // The cap is named first when both apply.
    let capped = Case::new(state(10, 10, None), Some("x"));
    let mut over = capped.state.clone();
    over.budgets = s.budgets.clone();
    assert_eq!(
        Case::new(over, Some("x")).decide().code,
        crate::activity::Code::MaxIterations
    );
    // Time: 91 minutes of 90.
    let mut timed = state(2, 0, None);
    timed.budgets.max_runtime_secs = Some(5_400);
    let mut case = Case::new(timed, Some("x"));
    case.elapsed_secs = Some(5_460);
    let d = case.decide();
    assert_eq!(d.code, crate::activity::Code::RuntimeBudget);
    assert!(
        d.system_message.contains("(1 h 31 min of 1 h 30 min)"),
        "{}",
        d.system_message
    );
    case.elapsed_secs = Some(60);
    assert!(matches!(case.decide().next, Next::Feed { .. }));
}

fn verdicts(outcomes: &[(&str, crate::review::ReviewResult)]) -> crate::review::Standing {
    crate::review::Standing {
        verdicts: outcomes
            .iter()
            .map(|(name, outcome)| {
                let findings = match outcome {
                    crate::review::ReviewResult::Rejected => vec![crate::review::Finding {
                        severity: "high".into(),
                        file: Some("src/lib.rs".into()),
                        line: Some(4),
                        what: "criterion 2 is not met".into(),
                        fix: Some("handle the empty input".into()),
                    }],
                    _ => Vec::new(),
                };
                let verdict = crate::review::ReviewVerdict {
                    outcome: outcome.clone(),
                    findings,
                    error: None,
                    fingerprint: Some("f".into()),
                    time: "t".into(),
                    duration_ms: 1,
                };
                ((*name).to_string(), verdict)
            })
            .collect(),
    }
}

#[test]
fn review_gates_a_completion_that_stands() {
    use crate::review::ReviewResult::{Approved, Rejected};
    let s = state(2, 10, Some("DONE"));
    let claim = |review: ReviewStage| Case {
        review,
        review_rounds: 1,
        ..Case::new(s.clone(), Some("All done. <promise>DONE</promise>"))
    };
    let d = claim(ReviewStage::Approved(verdicts(&[
        ("acceptance", Approved),
        ("security", Approved),
    ])))
    .decide();
    assert_eq!(d.code, Code::Complete);
    assert!(
        d.system_message
            .contains("approved by the acceptance, security reviewers"),
        "{}",
        d.system_message
    );
    let d = claim(ReviewStage::Rejected(verdicts(&[
        ("acceptance", Rejected),
        ("security", Approved),
    ])))
    .decide();
    assert_eq!(d.code, Code::ReviewRejected);
    let r = reason(&d);
    assert!(
        r.contains("[high] src/lib.rs:4: criterion 2 is not met (fix: handle the empty input)"),
        "{r}"
    );
    assert!(
        r.contains("round 1 of 3") && !r.contains("security reviewer"),
        "{r}"
    );
    let d = claim(ReviewStage::Exhausted(verdicts(&[(
        "acceptance",
        Rejected,
    )])))
    .decide();
    assert_eq!(d.code, Code::ReviewsExhausted);
    ended(&d);
    assert!(
        d.system_message.contains("criterion 2 is not met"),
        "{}",
        d.system_message
    );
    // The cap still ends a rejected loop on its last turn.
    let last = Case {
        review: ReviewStage::Rejected(verdicts(&[("acceptance", Rejected)])),
        ..Case::new(state(10, 10, Some("DONE")), Some("<promise>DONE</promise>"))
    };
    assert_eq!(last.decide().code, Code::MaxIterations);
}

const THREE_CHAINS: &str = r#"{"userStories":[
    {"id":"A1","passes":false},{"id":"A2","passes":false,"dependsOn":["A1"]},
    {"id":"B1","passes":false},{"id":"B2","passes":false,"dependsOn":["B1"]},
    {"id":"C1","passes":false},{"id":"C2","passes":false,"dependsOn":["C1"]}]}"#;

fn parallel(n: u32) -> LoopState {
    LoopState {
        prd_file: Some("prd.json".into()),
        fresh: true,
        parallel: n,
        ..state(1, 20, Some("RALPH-COMPLETE"))
    }
}

#[test]
fn parallel_hands_out_every_free_place_at_once() {
    let d = Case::prd(parallel(3), None, THREE_CHAINS).decide();
    assert_eq!(d.code, Code::Dispatched);
    assert_eq!(d.story.as_deref(), Some("A1,B1,C1"));
    let (iteration, reason, injected) = fed(&d);
    assert_eq!(iteration, 2);
    for id in ["A1", "B1", "C1"] {
        assert!(
            reason.contains(&format!(
                "description \"story {id}\", prompt \"Work story {id} of /p/prd.json"
            )),
            "{reason}"
        );
    }
    assert_eq!(injected.unwrap().story_id, "A1+B1+C1");
    assert!(d.system_message.contains("parallel: A1, B1, C1 out"));
}

#[test]
fn parallel_fills_only_the_free_places_and_never_sends_a_story_twice() {
    let case = Case {
        in_flight: vec![Some("A1".into()), None],
        ..Case::prd(parallel(3), None, THREE_CHAINS)
    };
    let d = case.decide();
    assert_eq!(d.story.as_deref(), Some("B1"));
    assert!(d.system_message.contains("in flight: A1"));
}

#[test]
fn parallel_waits_while_workers_run_and_nothing_else_can_go_out() {
    let prd = r#"{"userStories":[{"id":"A1","passes":false},{"id":"A2","passes":false,"dependsOn":["A1"]}]}"#;
    let case = Case {
        in_flight: vec![Some("A1".into())],
        ..Case::prd(parallel(3), None, prd)
    };
    let d = case.decide();
    assert_eq!(d.next, Next::Wait);
    assert_eq!(d.code, Code::WorkerRunning);
    // Nothing in flight and nothing runnable is the deadlock it always was.
    let stuck = r#"{"userStories":[{"id":"A1","passes":false,"dependsOn":["A2"]},{"id":"A2","passes":false,"dependsOn":["A1"]}]}"#;
    assert_eq!(
        Case::prd(parallel(3), None, stuck).decide().code,
        Code::Deadlock
    );
}

#[test]
fn every_place_taken_waits_before_any_rule() {
    // Even a queued cancel waits: the Stop that decides acts on it.
    let full = Case {
        in_flight: vec![Some("A1".into()), Some("B1".into())],
        queue: QueueAction::Cancel {
            typed: "/cancel-ralph".into(),
        },
        ..Case::prd(parallel(2), None, THREE_CHAINS)
    };
    assert_eq!(full.decide().next, Next::Wait);
    // --fresh: its one worker runs in the background.
    let fresh = LoopState {
        fresh: true,
        ..state(1, 20, Some("RALPH-COMPLETE"))
    };
    let running = Case {
        fresh_worker: true,
        ..Case::new(fresh.clone(), Some("<promise>RALPH-COMPLETE</promise>"))
    };
    assert_eq!(running.decide().code, Code::WorkerRunning);
    // A cancelled loop is not waited on.
    let cancelled = LoopState {
        active: false,
        ..fresh
    };
    let ended = Case {
        fresh_worker: true,
        ..Case::new(cancelled, None)
    };
    assert_eq!(ended.decide().code, Code::Cancelled);
}

#[test]
fn parallel_ends_when_every_story_passes() {
    let done = r#"{"userStories":[{"id":"A1","passes":true},{"id":"B1","passes":true}]}"#;
    let d = Case::prd(parallel(2), None, done).decide();
    assert_eq!(d.code, Code::AllStoriesPass);
}
