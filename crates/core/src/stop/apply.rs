//! Carrying out a Stop's decision: the one place that writes for a Stop
//! (state, re-injection counter, blocker, check results, activity log),
//! and the answer to a queued status or help request. Does I/O, under the
//! loop lock.

use super::decide::{Decision, Next};
use super::gather::{Corrupt, StopInputs, ToolRecord};
use super::plan::Plan;
use super::text;
use crate::activity::{self, Action, CLAIMED, Code, Entry};
use crate::clock;
use crate::control;
use crate::fmt;
use crate::hook_output::HookOutput;
use crate::paths::LoopPaths;
use crate::queued::QueueAction;
use crate::state::{self, LoopState};
use crate::state_file::Saved;
use crate::store::{self, StoreError};
use crate::turn_tools;

/// Write what the decision changes; the hook's answer.
pub(crate) fn apply(
    paths: &LoopPaths,
    inputs: &StopInputs,
    plan: &Plan,
    decision: Decision,
) -> Result<HookOutput, StoreError> {
    let session = inputs.session.as_str();
    let state = &inputs.state;
    workers(paths, inputs);
    save_records(paths, plan);
    // --parallel: workers run and nothing else can go out; nothing advances.
    if decision.next == Next::Wait {
        return Ok(wait_for_worker(paths, inputs));
    }
    if plan.claims {
        // Recorded for `status`; a failure shows with the decision's own.
        let claim = Entry::now(session, state.iteration, Action::Claim, CLAIMED);
        let _ = log(paths, claim);
    }
    let mut message = decision.system_message;
    lock_freed(paths, inputs, plan, &mut message);
    // A loop paused on an API error goes on (the state saved below has no pause).
    if let Some(pause) = &state.api_error_pause {
        let reason = pause.reason.as_str();
        let _ = log(
            paths,
            Entry::now(session, state.iteration, Action::Resume, reason),
        );
        message = text::resumed(pause, &message);
    }
    let code = decision.code.as_str();
    let goes_on = matches!(
        decision.next,
        Next::Feed { .. } | Next::Yield | Next::Hold { .. }
    );
    let mirror = (goes_on && inputs.mirror.tampered()).then(|| text::tampered(inputs.mirror));
    let tamper = joined(mirror, watch(paths, inputs, &mut message));
    if let Some(notice) = &tamper {
        let entry = Entry::now(session, state.iteration, Action::Tamper, code);
        let _ = log(paths, entry.with_message(Some(notice)));
        message.push_str(&format!("\n{notice}"));
    }
    // --fresh: the iteration that ends here ran in a worker; its outcome
    // goes on this Stop's log line, once (taken before an end clears the
    // loop's files).
    let worker = state.fresh.then(|| take_worker(paths)).flatten();
    let (entry, reason) = write_next(
        paths,
        inputs,
        plan,
        decision.next,
        code,
        tamper,
        &mut message,
    )?;
    if decision.remove_blocker {
        let _ = store::remove_if_present(&paths.blocker);
    }
    let entry = entry
        .with_story(decision.story)
        .with_worker(worker)
        // Every check of a loop with pins runs against them.
        .with_pinned(plan.ran_checks && !state.pins.is_empty())
        .with_transcript_late(inputs.transcript_late)
        .with_score(
            plan.scored
                .as_ref()
                .and_then(super::measure::Scored::log_score),
            plan.budgets.tokens,
        );
    if let Err(e) = log(paths, entry) {
        message.push_str(&format!(" (activity log not written: {e})"));
    }
    Ok(match reason {
        Some(reason) => super::next::feed(reason, message),
        None => HookOutput::allow(message),
    })
}

/// Git's own files or the client's settings changed during the turn: what
/// makes a program run put back, each change logged and said to the user;
/// the notice the model reads first.
fn watch(paths: &LoopPaths, inputs: &StopInputs, message: &mut String) -> Option<String> {
    let (places, changes) = inputs.watch.as_ref()?;
    if changes.is_empty() {
        return None;
    }
    let put_back = crate::git_watch::put_back(paths, places, changes);
    let what: Vec<String> = changes.iter().map(crate::git_watch::described).collect();
    let iteration = inputs.state.iteration;
    let said = format!(
        "at iteration {iteration}, the agent {}{}",
        what.join(", "),
        if put_back.is_empty() {
            String::new()
        } else {
            format!("; ralph put back {}", put_back.join(", "))
        }
    );
    let code = Code::GitFilesChanged.as_str();
    let entry = Entry::now(&inputs.session, iteration, Action::Tamper, code);
    let _ = log(paths, entry.with_message(Some(&said)));
    message.push_str(&format!("\n⚠️ Outside the work, {said}."));
    Some(text::outside_the_work(&what, &put_back))
}

/// Two notices for the model, one after the other.
fn joined(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
        (a, b) => a.or(b),
    }
}

/// The agent's processes that held the loop's lock, stopped: logged, and
/// said to the user.
fn lock_freed(paths: &LoopPaths, inputs: &StopInputs, plan: &Plan, message: &mut String) {
    for note in &plan.lock_freed {
        let code = Code::LockTakenBack.as_str();
        let entry = Entry::now(&inputs.session, inputs.state.iteration, Action::Lock, code);
        let _ = log(paths, entry.with_message(Some(note)));
        message.push_str(&format!("\n⚠️ {note}."));
    }
}

/// The checks' results, the reviewers' verdicts and the scores this Stop
/// adds to, sealed.
/// Each at its generation in `plan.records`, which the state saved after
/// them holds (a save cut short between leaves a newer record, taken up).
fn save_records(paths: &LoopPaths, plan: &Plan) {
    use crate::records::LoopRecord;
    let at = |record| plan.records.get(record);
    if plan.ran_checks {
        let log = plan.verify_log.render();
        let _ = crate::seal::write_record(&paths.verify, log.as_bytes(), at(LoopRecord::Verify));
    }
    if let Some(log) = &plan.reviews_to_save {
        // The hook's own record is the only verdict that counts.
        let log = log.render();
        let _ = crate::seal::write_record(&paths.review, log.as_bytes(), at(LoopRecord::Review));
    }
    if let Some(scored) = &plan.scored {
        let at = at(LoopRecord::Scores);
        let _ = crate::score::history::write(&paths.scores, &scored.history, at);
    }
    if let Some(suite) = &plan.suite_to_save {
        let _ = crate::suite::write(&paths.suite, suite, at(LoopRecord::Suite));
    }
}

/// PRD mode, at a feed: a baseline asked for each story that can run now
/// whose check has none yet (its first feed), on the tree as it is, and
/// the process that takes them started; the state to save then holds the
/// suite's new generation.
fn ask_baselines(
    paths: &LoopPaths,
    inputs: &StopInputs,
    plan: &Plan,
    next: LoopState,
) -> LoopState {
    let (Some(Ok(prd)), Some(read)) = (&inputs.prd, &inputs.suite) else {
        return next;
    };
    let suite = plan.suite_to_save.as_ref().unwrap_or(read);
    let asks: Vec<crate::suite::baseline::Ask> = prd
        .runnable()
        .into_iter()
        .filter_map(|story| {
            let command = next.story_checks.get(&story.id)?;
            Some(crate::suite::baseline::Ask {
                command: command.clone(),
                story: Some(story.id.clone()),
            })
        })
        .collect();
    let Some(asked) = crate::suite::baseline::ask(paths, suite, &asks, next.verify_timeout) else {
        return next;
    };
    let asked = crate::suite::baseline::start_taker(paths, asked);
    let at = next.records.next();
    if crate::suite::write(&paths.suite, &asked, at).is_err() {
        return next;
    }
    LoopState {
        records: next.records.with(crate::records::LoopRecord::Suite, at),
        ..next
    }
}

/// The decision's next step written: the state saved before a feed, a
/// pause or a hold (so an increment is never lost), or the loop's files
/// removed at an end or a cancel. The log entry and the feed's text.
fn write_next(
    paths: &LoopPaths,
    inputs: &StopInputs,
    plan: &Plan,
    next: Next,
    code: &str,
    tamper: Option<String>,
    message: &mut String,
) -> Result<(Entry, Option<String>), StoreError> {
    let session = inputs.session.as_str();
    let state = &inputs.state;
    Ok(match next {
        Next::Feed {
            iteration,
            reason,
            injected,
        } => {
            // The model is told first: it changed the copy.
            let reason = match tamper {
                Some(notice) => format!("{notice}\n\n{reason}"),
                None => reason,
            };
            // Save before blocking: a block whose increment was not saved could
            // loop past the cap forever. The story's counter is in it.
            let after = plan.state_after(inputs, iteration);
            let after = LoopState {
                injected: injected.or(after.injected),
                ..after
            };
            let after = ask_baselines(paths, inputs, plan, after);
            save(paths, inputs, &after)?;
            next_turn(paths, inputs, message);
            (
                Entry::now(session, iteration, Action::Block, code),
                Some(reason),
            )
        }
        Next::Yield => {
            save(paths, inputs, &plan.state_yielded(inputs))?;
            next_turn(paths, inputs, message);
            (
                Entry::now(session, state.iteration, Action::Yield, code),
                None,
            )
        }
        Next::Hold { why } => {
            let held = LoopState {
                blocked: Some(why),
                ..plan.state_after(inputs, state.iteration)
            };
            save(paths, inputs, &held)?;
            next_turn(paths, inputs, message);
            (
                Entry::now(session, state.iteration, Action::Pause, code),
                None,
            )
        }
        Next::End { iterations } => {
            end_notes(paths, plan, message);
            remove_loop(paths)?;
            if let Some(removed) = remove_worktrees(paths, inputs) {
                message.push_str(&format!(" (ralph {removed})"));
            }
            let entry = Entry::now(session, iterations, Action::End, code);
            (entry.with_message(Some(message)), None)
        }
        Next::Wait => unreachable!("answered above"),
        Next::Cancel => {
            remove_loop(paths)?;
            if let Some(removed) = remove_worktrees(paths, inputs) {
                message.push_str(&format!(" (ralph {removed})"));
            }
            (control::cancel_entry(state, Some(message)), None)
        }
    })
}

/// What the end says besides its verdict: the pinned files put back during
/// the loop, the tests that failed at its start and pass now in files it
/// changed (and the runner's own files it changed), git's own files and
/// the client's settings it changed.
fn end_notes(paths: &LoopPaths, plan: &Plan, message: &mut String) {
    if let Some(note) = crate::pins::disk::end_note(paths) {
        message.push_str(&format!("\n{note}"));
    }
    let since = crate::suite::changed::since_baseline(&paths.root, &plan.turned);
    message.push_str(&crate::suite::changed::note(&since));
    message.push_str(&crate::git_watch::over_the_loop(paths));
}

/// The last worker's outcome, for the main Stop's log line; cleared, so
/// an iteration with no worker (the model ignored the dispatch) shows none.
fn take_worker(paths: &LoopPaths) -> Option<String> {
    let record = crate::fresh::read_worker(&paths.worker)?;
    let _ = store::remove_if_present(&paths.worker);
    Some(record.outcome)
}

/// The main thread's turn ended while its workers run (see
/// `decide::Workers`). The session may stop (the client delivers a worker's
/// report as a new turn, whose Stop goes on); nothing advances.
fn wait_for_worker(paths: &LoopPaths, inputs: &StopInputs) -> HookOutput {
    let state = &inputs.state;
    let code = Code::WorkerRunning.as_str();
    let entry = Entry::now(&inputs.session, state.iteration, Action::Wait, code)
        .with_worker(Some("running".into()));
    let _ = log(paths, entry);
    if state.parallel == 0 {
        return HookOutput::Nothing;
    }
    // --parallel: the user sees where the stories stand at each worker's
    // report (the interactive client shows a background worker's own
    // messages only in that worker's view).
    let passing = match &inputs.prd {
        Some(Ok(prd)) => {
            let (pass, total) = prd.progress();
            format!(" · {pass}/{total} stories pass")
        }
        _ => String::new(),
    };
    HookOutput::allow(text::waiting_for_workers(
        &inputs.in_flight,
        &crate::parallel::disk::read_board(&paths.board),
        &passing,
    ))
}

/// `--parallel`: the lanes of workers that no longer run go, with their
/// worktrees, and the client's stray branches (what `gather` found).
pub(crate) fn workers(paths: &LoopPaths, inputs: &StopInputs) {
    let (cleanup, iteration) = (&inputs.cleanup, inputs.state.iteration);
    crate::parallel::hooks::sync_lanes(paths, &cleanup.lanes, &inputs.session, iteration);
    if !cleanup.strays.is_empty() {
        crate::parallel::strays::sweep(paths, &cleanup.strays, &inputs.session, iteration);
    }
}

/// A duplicate Stop: the answer `again` (the last one, judged again),
/// logged as a repeat; nothing else is written. After a yield the turn ends
/// again (the user's message is still the next turn).
pub(crate) fn repeat(paths: &LoopPaths, inputs: &StopInputs, again: Decision) -> HookOutput {
    let state = &inputs.state;
    workers(paths, inputs);
    let code = Code::DuplicateStop.as_str();
    let entry = Entry::now(&inputs.session, state.iteration, Action::Repeat, code);
    let _ = log(paths, entry);
    match again.next {
        Next::Feed { reason, .. } if !state.yielded => {
            super::next::feed(reason, text::repeated(&again.system_message))
        }
        _ => HookOutput::Nothing,
    }
}

/// A queued `/ralph-status` or `/ralph-help` is answered in the Stop's
/// message, once the decision is applied (so the status is current).
pub(crate) fn answer_queued(paths: &LoopPaths, out: HookOutput, queue: &QueueAction) -> HookOutput {
    let QueueAction::Answer { status, help } = queue else {
        return out;
    };
    let mut out = out;
    if *status {
        out = out.with_message_line(control::status(paths).to_text().trim_end());
    }
    if *help {
        out = out.with_message_line(&control::help_text());
    }
    out
}

fn save(paths: &LoopPaths, inputs: &StopInputs, next: &LoopState) -> Result<(), StoreError> {
    // Git's own files as this Stop leaves them (after a put-back).
    let watched;
    let next = match &inputs.watch {
        Some((places, _)) => {
            watched = LoopState {
                watched: Some(places.digest()),
                ..next.clone()
            };
            &watched
        }
        None => next,
    };
    let pinned;
    let next = match new_story_pins(paths, &inputs.state, next) {
        Some(pins) => {
            pinned = LoopState {
                pins,
                ..next.clone()
            };
            &pinned
        }
        None => next,
    };
    let updated = state::updated_text_from(&inputs.text, &inputs.state, next);
    // A mirror that could not be written is seen (and reported) at the next Stop.
    // The state as gathered under this lock: not read again for its seal,
    // and the mirror as compared then (one rename a turn: see `seal`).
    let before = Saved {
        text: (!inputs.adopting).then_some(inputs.text.as_str()),
        form: inputs.seal_form,
    };
    crate::state_file::write_over(paths, &updated, before, inputs.mirror)?;
    // A hook killed between its temp file and the rename leaves the temp
    // file; listing the folders every turn costs more than it finds, so the
    // leftovers of killed turns go every few iterations.
    if next.iteration % crate::paths::SWEEP_EVERY == 0 {
        crate::state_file::sweep_leftovers(paths);
    }
    Ok(())
}

/// A story that first appeared at this Stop has its check recorded: the
/// files that check names are pinned now (see `pins`). The loop's pins
/// when they grew.
fn new_story_pins(
    paths: &LoopPaths,
    before: &LoopState,
    next: &LoopState,
) -> Option<std::collections::BTreeMap<String, String>> {
    let mut grown = None;
    for (id, cmd) in &next.story_checks {
        if before.story_checks.contains_key(id) {
            continue;
        }
        if let Ok(Some(manifest)) = crate::pins::disk::add(paths, cmd) {
            grown = Some(manifest.by_path());
        }
    }
    grown
}

/// The next turn's tools are recorded afresh (see `turn_tools`).
fn next_turn(paths: &LoopPaths, inputs: &StopInputs, message: &mut String) {
    // A turn that called no guarded tool left the record empty already
    // (every talk-only turn): four system calls less.
    if inputs.tool_record == ToolRecord::Empty {
        return;
    }
    if let Err(e) = turn_tools::reset(&paths.turn_tools) {
        message.push_str(&format!(" (the turn's tool record was not reset: {e})"));
    }
}

/// `--parallel`: the loop is over, its workers' worktrees and branches go.
fn remove_worktrees(paths: &LoopPaths, inputs: &StopInputs) -> Option<String> {
    let state = &inputs.state;
    (state.parallel > 0)
        .then(|| crate::parallel::hooks::remove_all(paths, &inputs.session, state.iteration))
        .flatten()
}

/// The loop is over: its state and sidecars go (the log stays).
fn remove_loop(paths: &LoopPaths) -> Result<(), StoreError> {
    crate::state_file::remove(paths)?;
    remove_sidecars(paths);
    crate::config_seen::at_end(paths);
    Ok(())
}

fn remove_sidecars(paths: &LoopPaths) {
    for file in paths.sidecars() {
        let _ = store::remove_if_present(file);
        let _ = crate::seal::remove(file);
    }
    crate::pins::disk::forget(paths);
}

/// A corrupt state file: stop the loop, keep the file aside, say which field.
pub(crate) fn corrupt(
    paths: &LoopPaths,
    session: &str,
    corrupt: &Corrupt,
) -> Result<HookOutput, StoreError> {
    let kept = crate::state_file::move_aside(paths, clock::unix_now())?;
    remove_sidecars(paths);
    let kept = fmt::relative(&paths.root, &kept);
    let message = text::corrupt(corrupt.iteration, &corrupt.why, &kept);
    let code = Code::Corrupt.as_str();
    let entry = Entry::now(session, corrupt.iteration, Action::End, code);
    let _ = log(paths, entry.with_message(Some(&message)));
    Ok(HookOutput::allow(message))
}

fn log(paths: &LoopPaths, entry: Entry) -> Result<(), StoreError> {
    activity::append(&paths.log, &entry)
}
