//! `--parallel`: what a worker's stop writes once its story's merge is
//! over, in the hook's stages. Merged ([`merged`]): the story marked
//! passing in the PRD, its check's result kept, its lane dropped. Sent
//! back ([`sent_back`]): the count raised, the lane marked (or dropped when
//! the worker gave up). Each reads under the loop lock (`gather_*`),
//! decides what to write (`plan_*`, pure, tested below), words it
//! (`parallel::merge_message`, `send_back_reason`), then writes. Does I/O.

use super::lanes::{let_go, worker_loop};
use super::merge_queue::Claim;
use super::{Board, Lane, LaneStatus, MergeOutcome};
use crate::activity::{self, Action, Entry};
use crate::hook_input::HookInput;
use crate::hook_output::{FeedHook, HookOutput};
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::prd_edit;
use crate::store;
use crate::verify::{CheckResult, VerifyLog};

/// What a merged story's stop reads under the loop lock.
struct MergedInputs {
    prd_file: String,
    /// The PRD as the main tree has it now, or why it could not be read.
    prd: Result<String, String>,
    /// The checks' record (empty when there is none).
    verify: VerifyLog,
    /// The generation its next write takes (`records`).
    generation: u64,
    board: Board,
}

/// What a merged story's stop writes: pure data.
#[derive(Debug)]
struct MergedWrites {
    /// The PRD with the story passing (`None`: already so, or not found).
    prd: Option<String>,
    /// The checks' record with the story's result (`None`: no check ran).
    verify: Option<VerifyLog>,
    /// The generation it is written at: above the state's and the file's.
    generation: u64,
    board: Board,
    /// What went wrong before any write, in words.
    problems: Vec<String>,
}

/// The story is in the loop's branch and its check passed there: mark it
/// passing in the main tree's PRD, keep the check's result, log, and let
/// the worker go (its worktree and branch removed at the next Stop that
/// sees it ended). The merge lock is still held.
pub(super) fn merged(
    paths: &LoopPaths,
    input: &HookInput,
    claim: &Claim,
    commit: String,
    check: Option<CheckResult>,
) -> HookOutput {
    let outcome = MergeOutcome::Merged { commit };
    let message = super::merge_message(&claim.story, &outcome);
    let Ok(_lock) = LoopLock::acquire(&paths.lock, LOCK_WAIT) else {
        return HookOutput::allow(format!(
            "{message} (but the loop's lock stayed busy, so it was not marked passing: the story goes out again)"
        ));
    };
    if worker_loop(paths, input).is_none() {
        // Cancelled while the check ran: the merge stays (it passed), the
        // loop's files are not written again.
        return HookOutput::allow(message);
    }
    let agent = input.agent_id.clone().unwrap_or_default();
    let seen = gather_merged(paths, claim);
    let check = check.map(|mut result| {
        result.fingerprint = crate::worktree::fingerprint(&paths.root);
        result
    });
    let verify = (seen.verify, seen.generation);
    let writes = plan_merged(seen.prd, verify, seen.board, &agent, claim, check);
    let problems = apply_merged(paths, &seen.prd_file, writes);
    let text = if problems.is_empty() {
        message
    } else {
        format!("{message} ({})", problems.join("; "))
    };
    log_merge(paths, input, claim, &outcome, &text);
    HookOutput::allow(text)
}

fn gather_merged(paths: &LoopPaths, claim: &Claim) -> MergedInputs {
    let prd_file = claim.state.prd_file.clone().unwrap_or_default();
    let prd =
        crate::store::read_named(&paths.root, &prd_file).map_err(|e| format!("{prd_file}: {e}"));
    let read = crate::seal::read_sealed(&paths.verify);
    let verify = read
        .text
        .as_deref()
        .map(VerifyLog::parse)
        .unwrap_or_default();
    let found = crate::records::RecordGens::default().with(
        crate::records::LoopRecord::Verify,
        read.generation.unwrap_or(0),
    );
    MergedInputs {
        generation: claim.state.records.max(found).next(),
        prd_file,
        prd,
        verify,
        board: crate::parallel::disk::read_board(&paths.board),
    }
}

/// Pure: the story passing in the PRD, its result in the checks' record,
/// its lane let go and the story among the merged.
fn plan_merged(
    prd: Result<String, String>,
    (mut verify, generation): (VerifyLog, u64),
    mut board: Board,
    agent: &str,
    claim: &Claim,
    check: Option<CheckResult>,
) -> MergedWrites {
    let mut problems = Vec::new();
    let prd = match prd {
        Ok(text) => match prd_edit::mark_passing(&text, &claim.story) {
            Some(out) => (out != text).then_some(out),
            None => {
                let prd_file = claim.state.prd_file.as_deref().unwrap_or_default();
                problems.push(format!(
                    "{prd_file}: story {} not found to mark",
                    claim.story
                ));
                None
            }
        },
        Err(why) => {
            problems.push(why);
            None
        }
    };
    let verify = check.map(|result| {
        verify.stories.insert(claim.story.clone(), result);
        verify
    });
    let_go(&mut board, agent, &claim.lane);
    if !board.merged.contains(&claim.story) {
        board.merged.push(claim.story.clone());
    }
    MergedWrites {
        prd,
        verify,
        generation,
        board,
        problems,
    }
}

/// The writes; what went wrong, in words.
fn apply_merged(paths: &LoopPaths, prd_file: &str, writes: MergedWrites) -> Vec<String> {
    let mut problems = writes.problems;
    if let Some(text) = writes.prd
        && let Err(e) = store::atomic_write(&paths.root.join(prd_file), text.as_bytes())
    {
        problems.push(format!("{prd_file} not written: {e}"));
    }
    if let Some(log) = writes.verify {
        // Newer than the state's word for it: the next Stop takes it up.
        let at = writes.generation;
        let _ = crate::seal::write_record(&paths.verify, log.render().as_bytes(), at);
    }
    if let Err(e) = crate::parallel::disk::write_board(&paths.board, &writes.board) {
        problems.push(format!("board not written: {e}"));
    }
    problems
}

/// What a story sent back comes to: pure data.
#[derive(Debug, PartialEq)]
struct SendBack {
    board: Board,
    /// Times this worker's story was sent back, this one included.
    times: u32,
    /// More than the loop allows: the worker stops, its worktree goes.
    gave_up: bool,
    /// The story's check has not beaten its best score for `max_plateau`
    /// send-backs: the worker stops too (the story's plateau).
    plateaued: Option<crate::score::Score>,
}

/// The story goes back to its worker (its stop blocked) with why; after
/// `max_story_attempts` send-backs the worker may stop, its worktree goes,
/// and the main loop hands the story out again (counting it).
pub(super) fn sent_back(
    paths: &LoopPaths,
    input: &HookInput,
    claim: &Claim,
    outcome: MergeOutcome,
) -> HookOutput {
    let Ok(_lock) = LoopLock::acquire(&paths.lock, LOCK_WAIT) else {
        return HookOutput::allow(super::merge_message(&claim.story, &outcome));
    };
    if worker_loop(paths, input).is_none() {
        return HookOutput::Nothing;
    }
    let agent = input.agent_id.clone().unwrap_or_default();
    let plan = plan_send_back(
        crate::parallel::disk::read_board(&paths.board),
        &agent,
        claim,
        &outcome,
    );
    let message = super::merge_message(&claim.story, &outcome);
    let _ = crate::parallel::disk::write_board(&paths.board, &plan.board);
    log_merge(paths, input, claim, &outcome, &message);
    let max = claim.state.max_story_attempts;
    if let Some(best) = &plan.plateaued {
        return HookOutput::allow(format!(
            "{message} Its check has not beaten its best score ({}) in {} sends back (--max-plateau {}): the worker stops, its worktree is removed once it has, and the story goes out again.",
            best.label(),
            claim.state.max_plateau,
            claim.state.max_plateau
        ));
    }
    if plan.gave_up {
        return HookOutput::allow(format!(
            "{message} It was sent back {max} times already: the worker stops, its worktree is removed once it has, and the story goes out again."
        ));
    }
    HookOutput::Feed {
        hook: FeedHook::SubagentStop,
        text: super::send_back_reason(
            &claim.story,
            &outcome,
            claim.state.verify_timeout,
            plan.times,
            max,
        ),
        system_message: Some(message),
    }
}

/// Pure: the story's count raised; the worker's lane marked sent back, with
/// its check's best score and the send-backs since, or dropped when it was
/// sent back more than the loop allows or its score stopped rising.
fn plan_send_back(
    mut board: Board,
    agent: &str,
    claim: &Claim,
    outcome: &MergeOutcome,
) -> SendBack {
    *board.sent_back.entry(claim.story.clone()).or_default() += 1;
    let times = claim.lane.sent_back + 1;
    let (best, plateau) = story_plateau(&claim.lane, outcome);
    let max_plateau = claim.state.max_plateau;
    let plateaued = best
        .clone()
        .filter(|b| max_plateau > 0 && plateau >= max_plateau && b.reader.graded());
    let gave_up = times > claim.state.max_story_attempts || plateaued.is_some();
    if gave_up {
        let_go(&mut board, agent, &claim.lane);
    } else {
        let lane = Lane {
            status: LaneStatus::SentBack,
            sent_back: times,
            best,
            plateau,
            ..claim.lane.clone()
        };
        board.lanes.insert(agent.to_string(), lane);
    }
    SendBack {
        board,
        times,
        gave_up,
        plateaued,
    }
}

/// The story's best score on the loop's branch with this send-back, and the
/// send-backs since it (a conflict or a refusal measured nothing).
fn story_plateau(lane: &Lane, outcome: &MergeOutcome) -> (Option<crate::score::Score>, u32) {
    let MergeOutcome::CheckFailed(check) = outcome else {
        return (lane.best.clone(), lane.plateau);
    };
    let now = check.score_as(false);
    match &lane.best {
        Some(best) if !now.beats(best) => (Some(best.clone()), lane.plateau + 1),
        _ => (Some(now), 0),
    }
}

/// One `merge` line in the activity log: the story, what came of it, and
/// what the user was shown.
fn log_merge(
    paths: &LoopPaths,
    input: &HookInput,
    claim: &Claim,
    outcome: &MergeOutcome,
    text: &str,
) {
    let entry = Entry::now(
        input.session(),
        claim.state.iteration,
        Action::Merge,
        outcome.code().as_str(),
    )
    .with_story(Some(claim.story.clone()))
    .with_message(Some(text));
    let _ = activity::append(&paths.log, &entry);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LoopState;

    fn claim(sent_back: u32, max: u32) -> Claim {
        Claim {
            state: LoopState {
                max_story_attempts: max,
                ..crate::state::sample(1, 0, None)
            },
            story: "US-2".into(),
            title: "Two".into(),
            check: None,
            lane: Lane {
                worktree: "/w".into(),
                branch: "ralph/US-2".into(),
                base: "abc".into(),
                story: Some("US-2".into()),
                status: LaneStatus::Working,
                sent_back,
                best: None,
                plateau: 0,
            },
        }
    }

    fn conflict() -> MergeOutcome {
        MergeOutcome::Conflict {
            files: vec!["a.rs".into()],
        }
    }

    /// The story's check failed on the loop's branch with `passed` of 5.
    fn failed_with(passed: u32) -> MergeOutcome {
        let score = crate::score::Score {
            reader: crate::score::Runner::Pytest,
            passed,
            failed: 5 - passed,
            ..crate::score::Score::of_exit(false)
        };
        MergeOutcome::CheckFailed(crate::verify::CheckResult {
            command: "pytest".into(),
            exit: Some(1),
            timed_out: false,
            output_tail: String::new(),
            fingerprint: None,
            time: "t".into(),
            duration_ms: 1,
            pinned: false,
            put_back: Vec::new(),
            score: Some(Box::new(score)),
            not_run: false,
        })
    }

    #[test]
    fn a_story_whose_check_stops_gaining_is_handed_back_at_its_plateau() {
        let mut c = claim(0, 9);
        c.state.max_plateau = 2;
        let mut board = Board::default();
        // 2 of 5, then 3 (a gain), then 3, 3: two sends back without a gain.
        for (passed, stops) in [(2, false), (3, false), (3, false), (3, true)] {
            let back = plan_send_back(board, "a1", &c, &failed_with(passed));
            assert_eq!(back.plateaued.is_some(), stops, "at {passed}");
            if stops {
                assert_eq!(back.plateaued.unwrap().label(), "tests 3/5");
                assert!(back.gave_up && !back.board.lanes.contains_key("a1"));
                return;
            }
            c.lane = back.board.lanes["a1"].clone();
            board = back.board;
        }
        unreachable!("the plateau stops the worker");
    }

    #[test]
    fn a_send_back_counts_and_marks_the_lane_until_the_worker_gives_up() {
        let back = plan_send_back(Board::default(), "a1", &claim(0, 2), &conflict());
        assert_eq!((back.times, back.gave_up), (1, false));
        assert_eq!(back.board.sent_back["US-2"], 1);
        assert_eq!(back.board.lanes["a1"].status, LaneStatus::SentBack);
        let back = plan_send_back(back.board, "a1", &claim(2, 2), &conflict());
        assert_eq!((back.times, back.gave_up), (3, true));
        assert_eq!(back.board.sent_back["US-2"], 2);
        assert!(!back.board.lanes.contains_key("a1"));
    }

    #[test]
    fn a_merge_marks_the_story_drops_the_lane_and_names_what_failed() {
        let prd = r#"{"userStories":[{"id":"US-2","title":"Two","passes":false}]}"#;
        let mut board = Board::default();
        board.lanes.insert("a1".into(), claim(0, 2).lane);
        let writes = plan_merged(
            Ok(prd.into()),
            (VerifyLog::default(), 3),
            board,
            "a1",
            &claim(0, 2),
            None,
        );
        assert!(writes.prd.unwrap().contains(r#""passes":true"#));
        assert!(writes.verify.is_none() && writes.problems.is_empty());
        assert!(writes.board.lanes.is_empty());
        assert_eq!(writes.board.merged, ["US-2"]);
        // Merged twice (a rerun): listed once; an unreadable PRD is named.
        let again = plan_merged(
            Err("prd.json: missing".into()),
            (VerifyLog::default(), 4),
            writes.board,
            "a1",
            &claim(0, 2),
            None,
        );
        assert_eq!(again.board.merged, ["US-2"]);
        assert_eq!(again.problems, ["prd.json: missing"]);
    }
}
