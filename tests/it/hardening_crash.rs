//! Crash safety: SIGKILL the Stop hook at random points, many times, while it
//! reads, decides and writes the state. After every kill the state file is
//! byte for byte the old or the new version (never empty, never torn), a
//! leftover temp file is never read as state, and the log has no torn line.

use crate::support::*;
use ralph_core::state::{self, LoopState};
use std::time::{Duration, Instant};

/// xorshift64*: a seeded generator, so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

const KILLS: usize = 300;

#[test]
fn sigkill_at_random_points_never_tears_the_state() {
    let seed = std::env::var("RALPH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026_1130_u64);
    eprintln!("seed {seed} (set RALPH_CRASH_SEED to replay)");
    let mut rng = Rng(seed);
    let p = Project::with_claude_dir("crash");
    // A larger prompt makes the write window wider.
    let big_prompt: String = PROMPT.repeat(2000);
    let first = state_text(1, 0).replace(PROMPT, &big_prompt);
    p.write(STATE_FILE, &first);
    let input = stop_input(&p.root, "still working");

    // How long one undisturbed hook takes here, to spread the kills over it.
    let probe = Project::with_claude_dir("crash-probe");
    probe.write(STATE_FILE, &first);
    let mut spans = Vec::new();
    for _ in 0..5 {
        let o = run_stop(&probe, &stop_input(&probe.root, "x"));
        assert!(o.is_block());
        spans.push(o.elapsed);
    }
    spans.sort();
    let span = spans[spans.len() / 2].max(Duration::from_millis(2));
    eprintln!("median hook run {span:?}");

    let mut current = first.clone();
    let (mut killed, mut finished, mut advanced_by_killed) = (0, 0, 0);
    for round in 0..KILLS {
        let delay = Duration::from_micros(rng.next() % (span.as_micros() as u64 * 3 / 2 + 1));
        let started = Instant::now();
        let (mut child, feeder) = spawn(command(STOP, &p, &[]), Stdin::Bytes(&input));
        std::thread::sleep(delay);
        let was_running = child.try_wait().expect("try_wait").is_none();
        // SIGKILL (Child::kill sends SIGKILL on Unix).
        let _ = child.kill();
        let o = finish(child, feeder, started);
        if was_running && o.code.is_none() {
            killed += 1;
        } else {
            finished += 1;
            o.assert_fail_open("hook that finished before the kill");
        }

        let now = p
            .state()
            .unwrap_or_else(|| panic!("round {round}: state file gone"));
        let next = state::with_iteration(
            &current,
            LoopState::parse(&current).expect("parses").iteration + 1,
        )
        .expect("frontmatter");
        if now == next {
            if o.code.is_none() {
                advanced_by_killed += 1;
            }
            current = next;
        } else {
            assert_eq!(
                now.len(),
                current.len(),
                "round {round}: state is neither the old nor the new version"
            );
            assert!(
                now == current,
                "round {round}: state is neither the old nor the new version"
            );
        }
        let parsed = LoopState::parse(&now).expect("state parses after a kill");
        assert_eq!(parsed.prompt, big_prompt, "round {round}: prompt changed");
        assert!(
            p.corrupt_copies().is_empty(),
            "round {round}: state seen as corrupt"
        );
        let _ = p.log(); // every line parses
    }

    // Leftover temp files (a kill between create and rename) are not state:
    // the next hook and `status` read the real file.
    let leftovers = p.temp_files();
    eprintln!(
        "{killed} killed mid-run, {finished} finished first, {advanced_by_killed} killed after saving; {} temp files left: {leftovers:?}",
        leftovers.len()
    );
    // A Stop sweeps leftovers every SWEEP_EVERY iterations (the turn's own
    // writes do not list the folders): after that many more turns, none is
    // left, whatever the number of crashes.
    let before = LoopState::parse(&current).expect("parses").iteration;
    for _ in 0..ralph_core::paths::SWEEP_EVERY {
        let o = run_stop(&p, &input);
        assert!(o.is_block(), "hook after the kills: {o:?}");
    }
    let mut left = p.temp_files();
    left.extend(
        std::fs::read_dir(p.data_dir())
            .expect("data folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp")),
    );
    assert!(left.is_empty(), "temp files left after a sweep: {left:?}");
    let after = LoopState::parse(&p.state().expect("state")).expect("parses");
    assert_eq!(after.iteration, before + ralph_core::paths::SWEEP_EVERY);
    let status = run(command(SETUP, &p, &["status", "--json"]), Stdin::Bytes(b""));
    assert_eq!(status.code, Some(0));
    assert!(
        status.stdout.contains(&format!("{}", after.iteration)),
        "status reads the real state: {}",
        status.stdout
    );
    // Blocks the log recorded are iterations in order with no gap or repeat
    // except where a killed hook saved but did not log.
    let its: Vec<u64> = p
        .log()
        .iter()
        .filter(|e| e["decision"] == "block")
        .filter_map(|e| e["iteration"].as_u64())
        .collect();
    assert!(
        its.windows(2).all(|w| w[0] < w[1]),
        "log iterations out of order: {its:?}"
    );
    assert!(
        killed > KILLS / 10,
        "too few kills landed mid-run ({killed}): the test did not test"
    );
}
