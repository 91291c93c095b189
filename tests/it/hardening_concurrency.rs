//! Many hooks at once on one loop: no lost or doubled increment, no torn
//! file, one log line per decision, every hook exits 0 with valid or empty
//! output. Also `ralph-setup cancel` and `ralph-setup start` racing Stop hooks.

use crate::support::*;
use ralph_core::state::LoopState;
use serde_json::Value;
use std::time::Instant;

const HOOKS: usize = 50;

fn block_iterations(log: &[Value]) -> Vec<u64> {
    log.iter()
        .filter(|e| e["decision"] == "block")
        .map(|e| e["iteration"].as_u64().expect("iteration"))
        .collect()
}

/// Start `n` Stop hooks at once (all spawned before any is waited for).
fn stop_hooks_at_once(
    p: &Project,
    n: usize,
) -> Vec<(
    std::process::Child,
    std::thread::JoinHandle<Option<std::process::ChildStdin>>,
    Instant,
)> {
    let input = stop_input(&p.root, "still working");
    (0..n)
        .map(|_| {
            let started = Instant::now();
            let (c, f) = spawn(command(STOP, p, &[]), Stdin::Bytes(&input));
            (c, f, started)
        })
        .collect()
}

/// `n` Stop hooks at once, `ralph-setup ARGS` while they run, then `n`
/// more: what setup and each hook did.
fn setup_among_stop_hooks(p: &Project, n: usize, args: &[&str]) -> (Outcome, Vec<Outcome>) {
    let mut hooks = stop_hooks_at_once(p, n);
    let setup = run(command(RALPH, p, args), Stdin::Bytes(b""));
    hooks.extend(stop_hooks_at_once(p, n));
    let outcomes = hooks.into_iter().map(|(c, f, t)| finish(c, f, t)).collect();
    (setup, outcomes)
}

/// How many of these Stop hooks blocked. Each failed open, and one that
/// did not block was kept out by the lock and says so.
fn blocks_among(outcomes: &[Outcome], what: &str) -> u64 {
    let mut blocks = 0u64;
    for o in outcomes {
        o.assert_fail_open(what);
        if o.is_block() {
            blocks += 1;
        } else if o.json().is_some() {
            assert!(o.system_message().contains("lock"), "unexpected: {o:?}");
        }
    }
    blocks
}

fn no_temp_files(p: &Project) {
    let stray = p.temp_files();
    assert!(stray.is_empty(), "temp files left behind: {stray:?}");
}

#[test]
fn fifty_stop_hooks_at_once() {
    let p = Project::with_claude_dir("conc50");
    p.write(STATE_FILE, state_text(1, 0));
    let hooks = stop_hooks_at_once(&p, HOOKS);
    let outcomes: Vec<Outcome> = hooks.into_iter().map(|(c, f, t)| finish(c, f, t)).collect();

    let mut blocks = 0u64;
    let mut gave_up = 0;
    for o in &outcomes {
        o.assert_fail_open("concurrent stop hook");
        if o.is_block() {
            blocks += 1;
        } else {
            // The only other outcome allowed: the lock wait ran out (a loaded machine).
            assert!(
                o.system_message().contains("lock"),
                "unexpected outcome: {o:?}"
            );
            gave_up += 1;
        }
    }
    eprintln!("{blocks} blocks, {gave_up} gave up on the lock");
    assert!(blocks > 0);

    let text = p.state().expect("state file still there");
    let state = LoopState::parse(&text).expect("state parses after the race");
    assert_eq!(
        state.iteration,
        1 + blocks,
        "iteration advanced once per block"
    );
    assert_eq!(state.prompt, PROMPT, "prompt byte-exact");

    let log = p.log();
    assert_eq!(
        log.len() as u64,
        blocks,
        "one log line per decision: {log:#?}"
    );
    let mut its = block_iterations(&log);
    let expected: Vec<u64> = (2..=1 + blocks).collect();
    assert_eq!(its, expected, "each iteration logged once, in order");
    its.dedup();
    assert_eq!(its.len() as u64, blocks);
    no_temp_files(&p);
}

#[test]
fn cancel_races_stop_hooks() {
    let p = Project::with_claude_dir("conc-cancel");
    p.write(STATE_FILE, state_text(1, 0));
    let (cancel, outcomes) = setup_among_stop_hooks(&p, 25, &["cancel"]);

    assert_eq!(cancel.code, Some(0), "cancel: {cancel:?}");
    assert!(cancel.stdout.contains("Cancelled"), "{}", cancel.stdout);
    let blocks = blocks_among(&outcomes, "stop hook racing cancel");
    assert!(p.state().is_none(), "the loop is cancelled");
    assert!(p.corrupt_copies().is_empty(), "nothing was seen as corrupt");
    let log = p.log();
    // Blocks, then exactly one cancel at the iteration they reached, then nothing.
    let cancel_at = log
        .iter()
        .position(|e| e["decision"] == "cancel")
        .expect("cancel logged");
    assert_eq!(
        cancel_at,
        log.len() - 1,
        "nothing after the cancel: {log:#?}"
    );
    let its = block_iterations(&log);
    assert_eq!(its.len() as u64, blocks, "one log line per block");
    assert_eq!(its, (2..2 + blocks).collect::<Vec<_>>());
    assert_eq!(log[cancel_at]["iteration"].as_u64(), Some(1 + blocks));
    no_temp_files(&p);
}

#[test]
fn start_races_stop_hooks() {
    let p = Project::with_claude_dir("conc-start");
    let (start, outcomes) = setup_among_stop_hooks(
        &p,
        20,
        &[
            "start",
            "--session",
            SESSION,
            "--max-iterations",
            "0",
            // Turns without tool calls: not about the breaker.
            "--max-stalls",
            "0",
            "--",
            PROMPT,
        ],
    );

    assert_eq!(start.code, Some(0), "start: {start:?}");
    let blocks = blocks_among(&outcomes, "stop hook racing start");
    let text = p.state().expect("the loop started");
    let state = LoopState::parse(&text).expect("state parses");
    assert_eq!(state.session_id, SESSION);
    assert_eq!(state.prompt.trim_end(), PROMPT.trim_end());
    let log = p.log();
    let start_at = log
        .iter()
        .position(|e| e["decision"] == "start")
        .expect("start logged");
    assert!(
        log[..start_at].is_empty(),
        "no decision before the loop existed"
    );
    let after = block_iterations(&log[start_at + 1..]);
    assert_eq!(after.len() as u64, blocks);
    assert_eq!(
        state.iteration,
        1 + blocks,
        "iteration advanced once per block"
    );
    no_temp_files(&p);
}

/// A second start over a running loop of the same session, racing hooks:
/// the loop restarts at 1 and the blocks after the restart are counted on it.
#[test]
fn restart_races_stop_hooks() {
    let p = Project::with_claude_dir("conc-restart");
    p.write(STATE_FILE, state_text(7, 0));
    let (start, outcomes) = setup_among_stop_hooks(
        &p,
        20,
        &[
            "start",
            "--session",
            SESSION,
            "--max-stalls",
            "0",
            "--",
            PROMPT,
        ],
    );
    assert_eq!(start.code, Some(0), "start: {start:?}");
    for o in &outcomes {
        o.assert_fail_open("stop hook racing a restart");
    }
    let state = LoopState::parse(&p.state().expect("state")).expect("parses");
    let log = p.log();
    let start_at = log
        .iter()
        .rposition(|e| e["decision"] == "start")
        .expect("start logged");
    let before = block_iterations(&log[..start_at]);
    assert_eq!(before, (8..8 + before.len() as u64).collect::<Vec<_>>());
    let after = block_iterations(&log[start_at + 1..]);
    assert_eq!(after, (2..2 + after.len() as u64).collect::<Vec<_>>());
    assert_eq!(state.iteration, 1 + after.len() as u64);
    let blocks = outcomes.iter().filter(|o| o.is_block()).count();
    assert_eq!(blocks, before.len() + after.len(), "one log line per block");
    no_temp_files(&p);
}
