//! The cases and running them: each case is a program, a project, a stdin
//! and the loop files to put back before every run; runs are timed from
//! spawn to exit, as the client sees them.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::case::{Case, Expect, LOOP_TARGET_MS, Target};
use crate::fixtures::{
    PROMISELESS, STATE_FILE, plain_state_with, prd, prd_state, project, stop_input,
};
use crate::transcripts::Transcripts;

const NO_LOOP_TARGET_MS: f64 = 1.5;
/// The status line without a loop (issue 15: under 2 ms; the client runs it often).
const STATUSLINE_TARGET_MS: f64 = 2.0;

/// The temp folder of one bench run, removed at the end (also on error)
/// unless `--keep` asked to look at it.
pub(crate) struct TempRoot(pub PathBuf, bool);

impl TempRoot {
    pub(crate) fn create(base: &Path, keep: bool) -> Result<TempRoot, String> {
        let dir = base.join(format!("ralph-bench-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(TempRoot(dir, keep))
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        if self.1 {
            eprintln!("ralph-bench: kept {}", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// The timings of every case, and the output of any run that took another
/// path than the case names (how many, and the first one).
pub(crate) struct Measured {
    pub samples: Vec<Vec<Duration>>,
    pub wrong: Vec<(usize, Option<String>)>,
}

/// `warmup` unmeasured then `runs` measured runs of every case.
pub(crate) fn measure(cases: &[Case], warmup: usize, runs: usize) -> Result<Measured, String> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); cases.len()];
    let mut wrong: Vec<(usize, Option<String>)> = vec![(0, None); cases.len()];
    // Round-robin over the cases rather than one case after another, so a
    // burst of load from elsewhere on the machine lands on every case alike
    // and the differences between cases (100 MB vs 1 KB) stay fair.
    for round in 0..warmup + runs {
        // A new order each round (a fixed-seed shuffle): no case always
        // follows the same one. Forward and backward in turn was not fair:
        // the last case of the list then ran twice in a row at every other
        // round's boundary, on caches its own run had just warmed, and
        // measured up to 0.3 ms faster than the same binary elsewhere in the
        // list (measured: a build paired against a copy of itself).
        let order = shuffled(cases.len(), round);
        for (i, case) in order.into_iter().map(|i| (i, &cases[i])) {
            let (took, out) = case
                .run_once(round)
                .map_err(|e| format!("{}: {e}", case.label))?;
            if !case.expect.matches(&out) {
                wrong[i].0 += 1;
                wrong[i]
                    .1
                    .get_or_insert(String::from_utf8_lossy(&out).into_owned());
            }
            if round >= warmup {
                samples[i].push(took);
            }
        }
        if (round + 1) % 100 == 0 {
            eprintln!("  {} / {} rounds", round + 1, warmup + runs);
        }
    }
    Ok(Measured { samples, wrong })
}

/// `0..n` in the order of round `round`: Fisher-Yates with a xorshift
/// seeded by the round, so a run is the same run every time.
fn shuffled(n: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15_u64 ^ (round as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

// ---------------------------------------------------------------- setup ---

/// The temp projects, transcripts and the cases that use them.
pub(crate) struct Setup {
    pub cases: Vec<Case>,
    pub small_transcript_bytes: u64,
    pub big_transcript_bytes: u64,
    pub long_turn_bytes: u64,
    pub prd_bytes: u64,
}

impl Setup {
    pub(crate) fn prepare(
        root: &Path,
        hook: &Path,
        repos: &crate::steady::Repos,
        before: Option<&Path>,
    ) -> std::io::Result<Setup> {
        let t = Transcripts::write(&root.join("transcripts"))?;
        let make = Maker { root, hook, t: &t };
        let mut cases = Vec::new();
        cases.extend(make.reference()?);
        let project_dir = project(root, "no-loop")?;
        cases.push(Case {
            label: "1. no loop (no state file)".into(),
            program: hook.to_path_buf(),
            copies: Vec::new(),
            args: Vec::new(),
            stdin: stop_input(&project_dir, &t.small, Some(PROMISELESS), false),
            project: project_dir,
            reset: Vec::new(),
            append: Vec::new(),
            late: None,
            expect: Expect::Silent,
            target: Target::Ms(NO_LOOP_TARGET_MS),
            rss_target: true,
        });
        cases.extend(make.plain_loops()?);
        let (prd_case, prd_bytes) = make.prd_loop()?;
        cases.push(prd_case);
        cases.extend(make.loops_without_breaker()?);
        cases.extend(make.status_lines(&prd_json_of(&cases))?);
        cases.extend(crate::steady::cases(root, hook, &t.small, repos, before)?);

        let size = |p: &Path| fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        Ok(Setup {
            small_transcript_bytes: size(&t.small),
            big_transcript_bytes: size(&t.big),
            long_turn_bytes: t.long_turn_bytes,
            prd_bytes,
            cases,
        })
    }
}

/// Builds the cases of one bench run.
struct Maker<'a> {
    root: &'a Path,
    hook: &'a Path,
    t: &'a Transcripts,
}

impl Maker<'_> {
    /// `/bin/true`, the floor every process pays: spawn and exec.
    fn reference(&self) -> std::io::Result<Option<Case>> {
        let Some(t) = ["/bin/true", "/usr/bin/true"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        else {
            return Ok(None);
        };
        let project = project(self.root, "reference")?;
        Ok(Some(Case {
            label: "reference: /bin/true (spawn + exec floor)".into(),
            program: t,
            copies: Vec::new(),
            args: Vec::new(),
            stdin: stop_input(&project, &self.t.small, Some(PROMISELESS), false),
            project,
            reset: Vec::new(),
            append: Vec::new(),
            late: None,
            expect: Expect::Any,
            target: Target::None,
            rss_target: false,
        }))
    }

    /// A plain loop that blocks, with `state` put back before every run.
    fn loop_case(
        &self,
        name: &str,
        label: &str,
        transcript: &Path,
        last: Option<&str>,
        state: &[u8],
    ) -> std::io::Result<Case> {
        let project = project(self.root, name)?;
        Ok(Case {
            label: label.into(),
            program: self.hook.to_path_buf(),
            copies: Vec::new(),
            args: Vec::new(),
            stdin: stop_input(&project, transcript, last, true),
            reset: vec![(project.join(STATE_FILE), state.to_vec())],
            append: Vec::new(),
            late: None,
            project,
            expect: Expect::Block,
            target: Target::Ms(LOOP_TARGET_MS),
            rss_target: true,
        })
    }

    /// Cases 2 and 3: with and without `last_assistant_message`, small and
    /// big transcripts, a turn that only talked, a long last turn.
    fn plain_loops(&self) -> std::io::Result<Vec<Case>> {
        let t = self.t;
        let state = plain_state_with("").into_bytes();
        let plain = |name: &str, label: &str, transcript: &Path, last: Option<&str>| {
            self.loop_case(name, label, transcript, last, &state)
        };
        Ok(vec![
            plain(
                "loop-msg-small",
                "2a. loop, blocks; last_assistant_message without the promise; 1 KB transcript",
                &t.small,
                Some(PROMISELESS),
            )?,
            plain(
                "loop-msg-big",
                "2b. same, 100 MB transcript",
                &t.big,
                Some(PROMISELESS),
            )?,
            plain(
                "loop-talk",
                "2c. loop, blocks; a turn that only talked (judged a stall from its tools, no git)",
                &t.talk,
                Some(PROMISELESS),
            )?,
            plain(
                "loop-fallback-small",
                "3a. loop, blocks; no last_assistant_message (transcript fallback); 1 KB transcript",
                &t.small,
                None,
            )?,
            plain(
                "loop-fallback-big",
                "3b. same, 100 MB transcript, small last turn",
                &t.big,
                None,
            )?,
            plain(
                "loop-fallback-long-turn",
                &format!(
                    "3c. same, last turn of {:.1} MiB (request blobs inside the turn; the hook reads at most 4 MiB)",
                    t.long_turn_bytes as f64 / crate::MIB as f64
                ),
                &t.long_turn,
                None,
            )?,
        ])
    }

    /// Case 4: a PRD loop of 200 stories; also the PRD's size.
    fn prd_loop(&self) -> std::io::Result<(Case, u64)> {
        let prd_project = project(self.root, "prd")?;
        let (prd_json, ids) = prd(200);
        fs::write(prd_project.join("prd.json"), &prd_json)?;
        let case = Case {
            label: "4. PRD loop, 200 stories (dependency chain, 100 passing), blocks".into(),
            program: self.hook.to_path_buf(),
            copies: Vec::new(),
            args: Vec::new(),
            stdin: stop_input(&prd_project, &self.t.small, Some(PROMISELESS), true),
            reset: vec![
                // The counter starts afresh with the data folder each run.
                (prd_project.join(STATE_FILE), prd_state(&ids).into_bytes()),
            ],
            append: Vec::new(),
            late: None,
            project: prd_project,
            expect: Expect::Block,
            target: Target::Ms(LOOP_TARGET_MS),
            rss_target: true,
        };
        Ok((case, prd_json.len() as u64))
    }

    /// Cases S1, S2: `ralph-setup statusline`, as Claude Code runs it after
    /// every message, fed the JSON the client sends (measured on 2.1.328).
    fn status_lines(&self, prd_project: &Path) -> std::io::Result<Vec<Case>> {
        let setup = self.hook.with_file_name("ralph-setup");
        if !setup.is_file() {
            return Ok(Vec::new());
        }
        let none = project(self.root, "statusline-none")?;
        let case = |label: &str, project: PathBuf, reset, expect| Case {
            label: label.into(),
            program: setup.clone(),
            copies: Vec::new(),
            args: vec!["statusline".into()],
            stdin: statusline_input(&project),
            project,
            reset,
            append: Vec::new(),
            late: None,
            expect,
            target: Target::Ms(STATUSLINE_TARGET_MS),
            rss_target: true,
        };
        let (_, ids) = prd(200);
        let state = prd_state(&ids).into_bytes();
        Ok(vec![
            case("S1. status line, no loop", none, Vec::new(), Expect::Silent),
            case(
                "S2. status line, the PRD loop of case 4 (200 stories, 142 KiB read)",
                prd_project.to_path_buf(),
                vec![(prd_project.join(STATE_FILE), state)],
                Expect::Line("\x1b[32mralph 1"),
            ),
        ])
    }

    /// Case 5: with the no-progress breaker off no turn can reach `git
    /// status`, so the transcript read is no longer lost in git's noise.
    fn loops_without_breaker(&self) -> std::io::Result<Vec<Case>> {
        let state = plain_state_with("max_stalls: 0\n").into_bytes();
        Ok(vec![
            self.loop_case(
                "loop-no-breaker-small",
                "5a. loop, blocks, no breaker (`max_stalls: 0`: no `git status`); no last_assistant_message; 1 KB transcript",
                &self.t.small,
                None,
                &state,
            )?,
            self.loop_case(
                "loop-no-breaker-big",
                "5b. same, 100 MB transcript, small last turn",
                &self.t.big,
                None,
                &state,
            )?,
        ])
    }
}

/// The PRD case's project folder.
fn prd_json_of(cases: &[Case]) -> PathBuf {
    cases
        .iter()
        .find(|c| c.label.starts_with("4. "))
        .map(|c| c.project.clone())
        .unwrap_or_default()
}

/// The status-line JSON Claude Code 2.1.328 sends (docs/client-measurements.md).
fn statusline_input(project: &Path) -> Vec<u8> {
    let dir = project.display().to_string();
    serde_json::json!({
        "session_id": "bench", "transcript_path": "/tmp/none.jsonl", "cwd": dir, "prompt_id": "p",
        "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
        "workspace": {"current_dir": dir, "project_dir": dir, "added_dirs": []}, "version": "2.1.328",
        "cost": {"total_cost_usd": 0.00024, "total_duration_ms": 11549, "total_api_duration_ms": 49,
                 "total_lines_added": 0, "total_lines_removed": 0},
        "context_window": {"total_input_tokens": 10, "total_output_tokens": 10, "context_window_size": 1_000_000,
            "current_usage": {"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            "used_percentage": 41, "remaining_percentage": 59},
        "exceeds_200k_tokens": false, "fast_mode": false, "thinking": {"enabled": true}
    })
    .to_string()
    .into_bytes()
}
