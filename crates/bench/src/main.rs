//! ralph-bench: whole-process figures for the ralph Stop hook.
//!
//! Claude Code spawns the Stop hook at the end of every turn of every session,
//! so what the user pays is the wall time of a whole process (spawn, write
//! stdin, wait for exit) and its peak memory, not the speed of a library call.
//! This binary builds nothing: it runs the release `ralph-stop-hook` found in
//! `--bin-dir` against throw-away projects, prints median, p90 and max beside
//! the targets, and exits 0 even when a target is missed, because these are
//! figures to read (a busy machine moves them), not a test to go red.
//!
//! Usage: `cargo build --release && cargo run --release -p ralph-bench -- [--runs N]`

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const HOOK: &str = "ralph-stop-hook";
const SESSION: &str = "5f0c1d2e-7b3a-4a6b-9c3d-be0c4b0a0001";
const PROMISE: &str = "ALL TESTS PASS";
/// What `ralph-setup` writes as the promise of a PRD loop.
const PRD_PROMISE: &str = "RALPH-COMPLETE";
const MIB: u64 = 1 << 20;

const NO_LOOP_TARGET_MS: f64 = 1.5;
const LOOP_TARGET_MS: f64 = 3.0;
const TRANSCRIPT_DIFF_TARGET_MS: f64 = 0.5;
/// 6 MiB, in the KiB that `ru_maxrss` (and GNU time's `%M`) count in.
const RSS_TARGET_KIB: u64 = 6 * 1024;
/// Peak memory is read from a few runs and the largest kept: one run is what
/// the target is about, the repeats only guard against a lucky one.
const RSS_RUNS: usize = 3;
const GNU_TIME: &str = "/usr/bin/time";

const USAGE: &str = "\
ralph-bench: whole-process timings and peak memory of ralph-stop-hook

Usage: cargo run --release -p ralph-bench -- [OPTIONS]

Options:
  --bin-dir DIR   where the release binaries are (default: target/release
                  under the workspace root; build them with `cargo build --release`)
  --runs N        measured runs per case (default 500)
  --warmup N      unmeasured runs per case first (default 50)
  --tmp-dir DIR   where the temporary projects go (default: the system temp
                  folder). The block path fsyncs the state file, so the file
                  system under DIR matters: use one like your projects' own.
  --keep          leave the temporary projects in place (printed at the end),
                  to look at one case with strace or perf
  -h, --help      this text
";

fn main() -> ExitCode {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("ralph-bench: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ralph-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Args {
    bin_dir: PathBuf,
    runs: usize,
    warmup: usize,
    tmp_dir: PathBuf,
    keep: bool,
}

impl Args {
    fn parse() -> Result<Args, String> {
        let mut args = Args {
            bin_dir: workspace_root().join("target").join("release"),
            runs: 500,
            warmup: 50,
            tmp_dir: std::env::temp_dir(),
            keep: false,
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let (key, inline) = match arg.split_once('=') {
                Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or_else(|| format!("{key} needs a value\n\n{USAGE}"))
            };
            match key.as_str() {
                "--bin-dir" => args.bin_dir = absolute(value()?),
                "--tmp-dir" => args.tmp_dir = absolute(value()?),
                "--runs" => args.runs = count(&key, &value()?)?,
                "--warmup" => args.warmup = count(&key, &value()?)?,
                "--keep" => args.keep = true,
                "-h" | "--help" => {
                    print!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
            }
        }
        if args.runs == 0 {
            return Err("--runs must be at least 1".into());
        }
        Ok(args)
    }
}

fn count(key: &str, v: &str) -> Result<usize, String> {
    v.parse()
        .map_err(|_| format!("{key} takes a whole number, not `{v}`"))
}

/// A path the user typed is taken from where they stand, as a shell would.
fn absolute(p: String) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// The default binaries are the workspace's, wherever `cargo run` was typed.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}

fn run(args: &Args) -> Result<(), String> {
    let hook = args.bin_dir.join(HOOK);
    if !hook.is_file() {
        return Err(format!(
            "{} not found. This bench builds nothing and measures the release binaries: run `cargo build --release` in the workspace first (or pass --bin-dir).",
            hook.display()
        ));
    }
    let root = TempRoot::create(&args.tmp_dir, args.keep)?;
    eprintln!(
        "ralph-bench: preparing projects and transcripts in {} ...",
        root.0.display()
    );
    let setup = Setup::prepare(&root.0, &hook).map_err(|e| format!("preparing: {e}"))?;
    let cases = &setup.cases;
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();

    eprintln!(
        "ralph-bench: {} cases, {} warm-up + {} measured runs each, interleaved ...",
        cases.len(),
        args.warmup,
        args.runs
    );
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(args.runs); cases.len()];
    let mut wrong: Vec<(usize, Option<String>)> = vec![(0, None); cases.len()];
    // Round-robin over the cases rather than one case after another, so a
    // burst of load from elsewhere on the machine lands on every case alike
    // and the differences between cases (100 MB vs 1 KB) stay fair.
    for round in 0..args.warmup + args.runs {
        for (i, case) in cases.iter().enumerate() {
            let (took, out) = case
                .run_once()
                .map_err(|e| format!("{}: {e}", case.label))?;
            if !case.expect.matches(&out) {
                wrong[i].0 += 1;
                wrong[i]
                    .1
                    .get_or_insert(String::from_utf8_lossy(&out).into_owned());
            }
            if round >= args.warmup {
                samples[i].push(took);
            }
        }
        if (round + 1) % 100 == 0 {
            eprintln!("  {} / {} rounds", round + 1, args.warmup + args.runs);
        }
    }

    let rss: Vec<Option<u64>> = cases.iter().map(Case::peak_rss_kib).collect();
    let stats: Vec<Stats> = samples.iter_mut().map(|s| Stats::of(s)).collect();

    let mut report = String::new();
    header(&mut report, args, &hook, &root.0, &load, &setup);
    table(&mut report, cases, &stats, &rss);
    differences(&mut report, cases, &stats);
    for (case, (n, sample)) in cases.iter().zip(&wrong) {
        if let Some(sample) = sample {
            let _ = writeln!(
                report,
                "\nWARNING: {} gave unexpected output in {n} runs (the figures may not measure the path named). First one:\n{}",
                case.label,
                sample.trim()
            );
        }
    }
    print!("{report}");
    Ok(())
}

/// The temp folder of one bench run, removed at the end (also on error)
/// unless `--keep` asked to look at it.
struct TempRoot(PathBuf, bool);

impl TempRoot {
    fn create(base: &Path, keep: bool) -> Result<TempRoot, String> {
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

// ---------------------------------------------------------------- cases ---

#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// Prints nothing: the session stops.
    Silent,
    /// Prints `{"decision":"block",...}`: the loop goes on.
    Block,
    /// The reference process: whatever it does.
    Any,
}

impl Expect {
    fn matches(self, out: &[u8]) -> bool {
        match self {
            Expect::Any => true,
            Expect::Silent => out.iter().all(u8::is_ascii_whitespace),
            Expect::Block => {
                serde_json::from_slice::<Value>(out)
                    .ok()
                    .and_then(|v| v.get("decision").cloned())
                    == Some(json!("block"))
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Target {
    None,
    Ms(f64),
}

struct Case {
    label: String,
    program: PathBuf,
    project: PathBuf,
    stdin: Vec<u8>,
    /// Files written back before every run, outside the timing: the block path
    /// advances the iteration (and, in PRD mode, the re-injection counter), so
    /// without this each run would take a slightly different path and a PRD
    /// loop would halt after `max_story_attempts` runs.
    reset: Vec<(PathBuf, Vec<u8>)>,
    expect: Expect,
    target: Target,
    /// Whether the RSS target applies (not to the reference process).
    rss_target: bool,
}

impl Case {
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.project)
            .env("CLAUDE_PROJECT_DIR", &self.project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd
    }

    fn reset(&self) -> std::io::Result<()> {
        for (path, bytes) in &self.reset {
            fs::write(path, bytes)?;
        }
        Ok(())
    }

    /// One run, timed from spawn to exit, as the client would see it.
    fn run_once(&self) -> std::io::Result<(Duration, Vec<u8>)> {
        self.reset()?;
        let start = Instant::now();
        let out = feed(self.command(&self.program), &self.stdin)?;
        Ok((start.elapsed(), out))
    }

    /// Peak resident memory of the hook in KiB, via GNU time.
    ///
    /// Why not `wait4` on our own child: std spawns with vfork semantics
    /// (CLONE_VM), and at exec Linux folds the old address space's high-water
    /// mark into the child's `ru_maxrss`, so the child would inherit this
    /// bench's own RSS (tens of MB while it holds request-blob templates).
    /// GNU time forks from a process of about 1 MB, below the hook's figure;
    /// the `/bin/true` row shows that floor. Its figure is the largest of the
    /// hook and the children it waited for (`git status` in loop cases).
    fn peak_rss_kib(&self) -> Option<u64> {
        if !Path::new(GNU_TIME).is_file() {
            return None;
        }
        let out_file = self.project.join(".ralph-bench-rss");
        let mut peak = None;
        for _ in 0..RSS_RUNS {
            self.reset().ok()?;
            let mut cmd = self.command(Path::new(GNU_TIME));
            cmd.arg("-f").arg("%M").arg("-o").arg(&out_file);
            cmd.arg(&self.program);
            feed(cmd, &self.stdin).ok()?;
            let kib: u64 = fs::read_to_string(&out_file).ok()?.trim().parse().ok()?;
            peak = peak.max(Some(kib));
        }
        let _ = fs::remove_file(&out_file);
        peak
    }
}

/// Spawn, write all of stdin and close it, read stdout to the end, wait.
fn feed(mut cmd: Command, stdin: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut child = cmd.spawn()?;
    if let Some(mut pipe) = child.stdin.take() {
        // A hook may exit without reading all of stdin; that is its right.
        let _ = pipe.write_all(stdin);
    }
    let mut out = Vec::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_end(&mut out)?;
    }
    child.wait()?;
    Ok(out)
}

// ---------------------------------------------------------------- setup ---

/// The temp projects, transcripts and the cases that use them.
struct Setup {
    cases: Vec<Case>,
    small_transcript_bytes: u64,
    big_transcript_bytes: u64,
    long_turn_bytes: u64,
    prd_bytes: u64,
}

impl Setup {
    fn prepare(root: &Path, hook: &Path) -> std::io::Result<Setup> {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let pool = BlobPool::new(&mut rng);
        let tdir = root.join("transcripts");
        fs::create_dir_all(&tdir)?;

        let last = last_turn(&mut Tx::new(&mut rng));
        let small = tdir.join("small.jsonl");
        fs::write(&small, &last)?;
        let big = tdir.join("big.jsonl");
        write_transcript(&big, 100 * MIB, &last, &pool, &mut rng)?;
        let talk = tdir.join("talk.jsonl");
        fs::write(&talk, talk_turn(&mut Tx::new(&mut rng)))?;
        let long_turn = tdir.join("long-last-turn.jsonl");
        let long_turn_bytes = write_long_last_turn(&long_turn, &pool, &mut rng)?;

        let mut cases = Vec::new();
        if let Some(t) = ["/bin/true", "/usr/bin/true"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        {
            let project = project(root, "reference")?;
            cases.push(Case {
                label: "reference: /bin/true (spawn + exec floor)".into(),
                program: t,
                stdin: stop_input(&project, &small, Some(PROMISELESS), false),
                project,
                reset: Vec::new(),
                expect: Expect::Any,
                target: Target::None,
                rss_target: false,
            });
        }

        let project_dir = project(root, "no-loop")?;
        cases.push(Case {
            label: "1. no loop (no state file)".into(),
            program: hook.to_path_buf(),
            stdin: stop_input(&project_dir, &small, Some(PROMISELESS), false),
            project: project_dir,
            reset: Vec::new(),
            expect: Expect::Silent,
            target: Target::Ms(NO_LOOP_TARGET_MS),
            rss_target: true,
        });

        let plain_state = plain_state_with("").into_bytes();
        // The no-progress breaker spawns `git status` at every loop Stop; with
        // it off, the transcript read is no longer lost in git's noise.
        let no_breaker_state = plain_state_with("max_stalls: 0\n").into_bytes();
        let loop_case =
            |name: &str, label: &str, transcript: &Path, last: Option<&str>, state: &[u8]| {
                let project = project(root, name)?;
                Ok::<Case, std::io::Error>(Case {
                    label: label.into(),
                    program: hook.to_path_buf(),
                    stdin: stop_input(&project, transcript, last, true),
                    reset: vec![(project.join(".claude/ralph-loop.local.md"), state.to_vec())],
                    project,
                    expect: Expect::Block,
                    target: Target::Ms(LOOP_TARGET_MS),
                    rss_target: true,
                })
            };
        let plain = |name: &str, label: &str, transcript: &Path, last: Option<&str>| {
            loop_case(name, label, transcript, last, &plain_state)
        };
        cases.push(plain(
            "loop-msg-small",
            "2a. loop, blocks; last_assistant_message without the promise; 1 KB transcript",
            &small,
            Some(PROMISELESS),
        )?);
        cases.push(plain(
            "loop-msg-big",
            "2b. same, 100 MB transcript",
            &big,
            Some(PROMISELESS),
        )?);
        cases.push(plain(
            "loop-talk",
            "2c. loop, blocks; a turn that only talked (judged a stall from its tools, no git)",
            &talk,
            Some(PROMISELESS),
        )?);
        cases.push(plain(
            "loop-fallback-small",
            "3a. loop, blocks; no last_assistant_message (transcript fallback); 1 KB transcript",
            &small,
            None,
        )?);
        cases.push(plain(
            "loop-fallback-big",
            "3b. same, 100 MB transcript, small last turn",
            &big,
            None,
        )?);
        cases.push(plain(
            "loop-fallback-long-turn",
            &format!(
                "3c. same, last turn of {:.1} MiB (request blobs inside the turn; the hook reads at most 4 MiB)",
                long_turn_bytes as f64 / MIB as f64
            ),
            &long_turn,
            None,
        )?);

        let prd_project = project(root, "prd")?;
        let (prd_json, ids) = prd(200);
        fs::write(prd_project.join("prd.json"), &prd_json)?;
        cases.push(Case {
            label: "4. PRD loop, 200 stories (dependency chain, 100 passing), blocks".into(),
            program: hook.to_path_buf(),
            stdin: stop_input(&prd_project, &small, Some(PROMISELESS), true),
            reset: vec![
                (
                    prd_project.join(".claude/ralph-loop.local.md"),
                    prd_state(&ids).into_bytes(),
                ),
                // What setup leaves: the first runnable story counted as fed once.
                (
                    prd_project.join(".claude/ralph-loop.last-injected"),
                    b"US-101 1\n".to_vec(),
                ),
            ],
            project: prd_project,
            expect: Expect::Block,
            target: Target::Ms(LOOP_TARGET_MS),
            rss_target: true,
        });

        cases.push(loop_case(
            "loop-no-breaker-small",
            "5a. loop, blocks, no breaker (`max_stalls: 0`: no `git status`); no last_assistant_message; 1 KB transcript",
            &small,
            None,
            &no_breaker_state,
        )?);
        cases.push(loop_case(
            "loop-no-breaker-big",
            "5b. same, 100 MB transcript, small last turn",
            &big,
            None,
            &no_breaker_state,
        )?);

        let size = |p: &Path| fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        Ok(Setup {
            small_transcript_bytes: size(&small),
            big_transcript_bytes: size(&big),
            long_turn_bytes,
            prd_bytes: prd_json.len() as u64,
            cases,
        })
    }
}

/// Source files in each temp project, and how many of them the agent has
/// changed since the last commit (plus as many new, untracked ones).
const PROJECT_FILES: usize = 300;
const PROJECT_CHANGED: usize = 3;

/// A project as the hook meets it: a git repository with a few hundred
/// committed files and some uncommitted work. It matters because in a loop
/// the hook fingerprints the working tree with `git status` (the no-progress
/// breaker), whose cost grows with the tree.
fn project(root: &Path, name: &str) -> std::io::Result<PathBuf> {
    let dir = root.join("projects").join(name);
    // A real project has `.claude/` (settings) whether or not a loop runs.
    fs::create_dir_all(dir.join(".claude"))?;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let source = |i: usize| dir.join(format!("src/mod{:02}/file{:03}.rs", i % 20, i));
    for i in 0..PROJECT_FILES {
        let path = source(i);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let len = rng.range(500, 6_000);
        fs::write(path, filler(&mut rng, len))?;
    }
    if git(&dir, &["init", "-q"]) && git(&dir, &["add", "-A"]) {
        git(
            &dir,
            &[
                "-c",
                "user.name=ralph-bench",
                "-c",
                "user.email=ralph-bench@example.invalid",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "-m",
                "initial",
            ],
        );
    }
    for i in 0..PROJECT_CHANGED {
        fs::write(source(i * 7), filler(&mut rng, 3_000))?;
        fs::write(dir.join(format!("src/new{i}.rs")), filler(&mut rng, 1_000))?;
    }
    Ok(dir)
}

/// Run git quietly in `dir`; `false` when git is missing or fails (the
/// project then stays a plain folder, which the report says).
fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The assistant's last words in the loop cases: work reported, no promise.
const PROMISELESS: &str = "I split the tokenizer into its own module and the parser tests pass now. Two integration tests still fail on nested quotes; I will look at those next.";

/// Stop input as Claude Code 2.1 sends it (see shared/claude-code-facts.md).
fn stop_input(project: &Path, transcript: &Path, last: Option<&str>, after_block: bool) -> Vec<u8> {
    let mut v = json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": project,
        "prompt_id": "bd17655d-2f4e-4c41-9a0e-3c1f9d2b7e10",
        "permission_mode": "default",
        "effort": {"level": "medium"},
        "hook_event_name": "Stop",
        "stop_hook_active": after_block,
        "background_tasks": [],
        "session_crons": [],
    });
    if let Some(text) = last {
        v["last_assistant_message"] = json!(text);
    }
    v.to_string().into_bytes()
}

/// A plain loop as setup writes it, at iteration 1 of no cap.
/// `extra` holds more frontmatter lines (or nothing, for setup's defaults).
fn plain_state_with(extra: &str) -> String {
    format!(
        "---\nactive: true\niteration: 1\nsession_id: \"{SESSION}\"\nmax_iterations: 0\ncompletion_promise: \"{PROMISE}\"\nstarted_at: \"2026-11-29T23:00:00Z\"\n{extra}---\n\n{}",
        "Make every test in tests/ pass without weakening any test.\n\n\
         Work in small steps: run `cargo test`, pick the first failure, fix its cause (not its symptom), \
         run the tests again, and commit each fix with a message that says why. Keep the public API \
         stable; if a test seems wrong, write down why in NOTES.md instead of changing it.\n\n\
         When every test passes and `cargo clippy -- -D warnings` is clean, print \
         <promise>ALL TESTS PASS</promise>. Do not print it before that is completely true.\n"
    )
}

fn prd_state(ids: &[String]) -> String {
    let ids: Vec<String> = ids.iter().map(|id| format!("\"{id}\"")).collect();
    format!(
        "---\nactive: true\niteration: 1\nsession_id: \"{SESSION}\"\nmax_iterations: 0\ncompletion_promise: \"{PRD_PROMISE}\"\nstarted_at: \"2026-11-29T23:00:00Z\"\nprd_file: \"prd.json\"\nstory_ids: [{}]\n---\n\nWork through the stories of the PRD one at a time, as the Ralph loop feeds them.\n",
        ids.join(", ")
    )
}

/// A PRD of `n` stories in a dependency chain (each on the one before), with
/// priorities, the first half passing: the next story is found only after
/// walking the whole list and its dependencies.
fn prd(n: usize) -> (String, Vec<String>) {
    let ids: Vec<String> = (1..=n).map(|i| format!("US-{i:03}")).collect();
    let stories: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            json!({
                "id": id,
                "title": format!("Story {}: handle case {} of the import format", i + 1, i + 1),
                "description": format!(
                    "As a user importing legacy files, I want record type {} to be read with its \
                     optional fields and its escaped separators, so that nothing is lost when I \
                     move my data over from the old tool.", i + 1),
                "acceptanceCriteria": [
                    format!("Records of type {} with every optional field are imported", i + 1),
                    "Escaped separators inside quoted fields are kept verbatim",
                    "A malformed record is reported with its line number and skipped",
                    "Typecheck passes and `cargo test` passes",
                ],
                "priority": i + 1,
                "passes": i < n / 2,
                "notes": "",
                "depends_on": if i == 0 { json!([]) } else { json!([ids[i - 1]]) },
            })
        })
        .collect();
    let doc = json!({
        "project": "legacy-import",
        "branchName": "ralph/legacy-import",
        "description": "Import every record type of the legacy export format",
        "userStories": stories,
    });
    // Pretty, as people and agents write PRDs.
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    (text, ids)
}

// ----------------------------------------------------------- transcripts ---

/// Deterministic filler, so every bench run writes the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: plenty for picking sizes and ids.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }
}

/// Code-like text with quotes, backslashes and newlines, so JSON escaping
/// (and the hook's byte scan over it) is as in a real transcript.
const CODE: &str = "fn parse_field(input: &str) -> Result<Field, ParseError> {\n    let (name, rest) = input.split_once('=').ok_or(ParseError::NoEquals)?;\n    if rest.starts_with('\"') {\n        return Ok(Field::Quoted(unescape(&rest[1..rest.len() - 1])?));\n    }\n    // \\t and \\n inside values are kept as typed\n    Ok(Field::Plain(name.trim().to_string(), rest.to_string()))\n}\n";

fn filler(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + CODE.len());
    while s.len() < len {
        let _ = write!(s, "// chunk {}\n{CODE}", rng.next() % 10_000);
    }
    s.truncate(len);
    s
}

/// Request blobs of a few sizes, JSON-escaped once: a 100 MB transcript is
/// made of hundreds of them and re-escaping each would dominate setup.
struct BlobPool(Vec<String>);

impl BlobPool {
    fn new(rng: &mut Rng) -> BlobPool {
        let sizes = [150_000, 300_000, 450_000, 600_000, 800_000, 1_100_000];
        BlobPool(
            sizes
                .iter()
                .map(|&size| {
                    let mut messages = Vec::new();
                    let mut len = 0;
                    while len < size {
                        let chunk_len = rng.range(2_000, 20_000);
                        let chunk = filler(rng, chunk_len);
                        len += chunk.len();
                        let id = format!("toolu_{:016x}", rng.next());
                        messages.push(json!({"role": "assistant", "content": [
                            {"type": "text", "text": "Let me look at the failing case."},
                            {"type": "tool_use", "id": id, "name": "Read",
                             "input": {"file_path": "/home/me/proj/src/parse.rs"}},
                        ]}));
                        messages.push(json!({"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": id, "content": chunk},
                        ]}));
                    }
                    let body = json!({
                        "model": "claude-sonnet-4-5",
                        "max_tokens": 32000,
                        "stream": true,
                        "system": [{"type": "text", "text": filler(rng, 12_000)}],
                        "messages": messages,
                    });
                    serde_json::to_string(&body.to_string()).unwrap_or_default()
                })
                .collect(),
        )
    }

    fn pick(&self, rng: &mut Rng) -> &str {
        &self.0[rng.range(0, self.0.len())]
    }
}

/// Writes transcript lines in Claude Code's shape (compact JSON, one object a
/// line, envelope fields around `type` and `message`).
struct Tx<'a> {
    rng: &'a mut Rng,
    n: u64,
}

impl<'a> Tx<'a> {
    fn new(rng: &'a mut Rng) -> Tx<'a> {
        Tx { rng, n: 0 }
    }

    fn uuid(&mut self) -> String {
        let a = self.rng.next();
        let b = self.rng.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }

    fn stamp(&mut self) -> String {
        self.n += 1;
        let s = self.n;
        format!(
            "2026-11-29T{:02}:{:02}:{:02}.{:03}Z",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            s % 1000
        )
    }

    fn envelope(&mut self, kind: &str, mut extra: Value) -> String {
        let mut v = json!({
            "parentUuid": self.uuid(),
            "isSidechain": false,
            "userType": "external",
            "cwd": "/home/me/proj",
            "sessionId": SESSION,
            "version": "2.1.328",
            "gitBranch": "main",
            "type": kind,
            "uuid": self.uuid(),
            "timestamp": self.stamp(),
        });
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object_mut()) {
            v.append(extra);
        }
        let mut line = v.to_string();
        line.push('\n');
        line
    }

    fn prompt(&mut self, text: &str) -> String {
        self.envelope(
            "user",
            json!({"message": {"role": "user", "content": text}}),
        )
    }

    fn assistant(&mut self, content: Value) -> String {
        let id = format!("msg_{:016x}", self.rng.next());
        let req = format!("req_{:016x}", self.rng.next());
        self.envelope(
            "assistant",
            json!({"message": {"id": id, "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [content], "stop_reason": null,
                "usage": {"input_tokens": 4, "output_tokens": 120}}, "requestId": req}),
        )
    }

    fn text(&mut self, text: &str) -> String {
        self.assistant(json!({"type": "text", "text": text}))
    }

    fn edit(&mut self) -> (String, String) {
        let id = format!("toolu_{:016x}", self.rng.next());
        let line = self.assistant(json!({"type": "tool_use", "id": id, "name": "Edit",
            "input": {"file_path": "src/parse.rs", "old_string": "a", "new_string": "b"}}));
        (line, id)
    }

    fn tool_use(&mut self) -> (String, String) {
        let id = format!("toolu_{:016x}", self.rng.next());
        let line = self.assistant(json!({"type": "tool_use", "id": id, "name": "Bash",
            "input": {"command": "cargo test -p parser 2>&1 | tail -40", "description": "Run the parser tests"}}));
        (line, id)
    }

    fn tool_result(&mut self, id: &str, len: usize) -> String {
        let out = filler(self.rng, len);
        self.envelope(
            "user",
            json!({"message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": out}]}}),
        )
    }

    fn attachment(&mut self, len: usize) -> String {
        let content = filler(self.rng, len);
        self.envelope(
            "attachment",
            json!({"attachment": {"type": "file", "filename": "src/parse.rs", "content": content}}),
        )
    }

    fn blob(&mut self, pool: &BlobPool) -> String {
        let uuid = self.uuid();
        let stamp = self.stamp();
        // Built by hand around the pre-escaped body (see BlobPool).
        format!(
            "{{\"type\":\"api-request-blob\",\"uuid\":\"{uuid}\",\"timestamp\":\"{stamp}\",\"sessionId\":\"{SESSION}\",\"blob\":{}}}\n",
            pool.pick(self.rng)
        )
    }

    fn small(&mut self, kind: &str) -> String {
        self.envelope(kind, json!({"costUSD": 0.0421, "durationMs": 5120}))
    }

    /// One past turn: a prompt, tool steps each with its request blob, a final text.
    fn turn(&mut self, pool: &BlobPool) -> String {
        let mut out = self.prompt("Ralph loop: keep going. Fix the next failing test.");
        for _ in 0..self.rng.range(2, 7) {
            out += &self.blob(pool);
            if self.rng.next().is_multiple_of(2) {
                let len = self.rng.range(2_000, 30_000);
                out += &self.attachment(len);
            }
            out += &self.text("Running the parser tests to see what fails.");
            let (line, id) = self.tool_use();
            out += &line;
            let len = self.rng.range(500, 8_000);
            out += &self.tool_result(&id, len);
        }
        out += &self.blob(pool);
        out += &self.text("Fixed the escaped-quote case; one more failure remains.");
        out += &self.small("cost-state");
        out
    }
}

/// The last turn, shared by the 1 KB and the 100 MB transcripts so the hook
/// finds the same words in both: the loop's feedback as the prompt, a file
/// edit (what a working iteration does), then the final text without the
/// promise.
fn last_turn(tx: &mut Tx) -> String {
    let mut out = tx.prompt("Stop hook feedback:\nMake every test in tests/ pass. (iteration 7)");
    let (line, id) = tx.edit();
    out += &line;
    out += &tx.tool_result(&id, 40);
    out += &tx.text(PROMISELESS);
    out
}

/// A turn that only talked: a stall, judged from its tools without git.
fn talk_turn(tx: &mut Tx) -> String {
    let mut out = tx.prompt("Stop hook feedback:\nMake every test in tests/ pass. (iteration 7)");
    out += &tx.text(PROMISELESS);
    out
}

fn write_transcript(
    path: &Path,
    size: u64,
    last: &str,
    pool: &BlobPool,
    rng: &mut Rng,
) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut written = 0u64;
    let mut tx = Tx::new(rng);
    while written + (last.len() as u64) < size {
        let turn = tx.turn(pool);
        written += turn.len() as u64;
        w.write_all(turn.as_bytes())?;
    }
    w.write_all(last.as_bytes())?;
    w.flush()
}

/// A transcript whose last turn holds over 6 MiB of request blobs after its
/// prompt: past the hook's 4 MiB read bound, the worst the fallback can meet.
/// Returns the size of that last turn.
fn write_long_last_turn(path: &Path, pool: &BlobPool, rng: &mut Rng) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut tx = Tx::new(rng);
    w.write_all(tx.turn(pool).as_bytes())?;
    w.write_all(
        tx.prompt("Stop hook feedback:\nMake every test in tests/ pass. (iteration 7)")
            .as_bytes(),
    )?;
    let mut turn_bytes = 0;
    while turn_bytes < 6 * MIB as usize {
        let mut step = tx.blob(pool);
        step += &tx.text("Running the parser tests to see what fails.");
        let (line, id) = tx.tool_use();
        step += &line;
        step += &tx.tool_result(&id, 4_000);
        turn_bytes += step.len();
        w.write_all(step.as_bytes())?;
    }
    let last = tx.text(PROMISELESS);
    w.write_all(last.as_bytes())?;
    w.flush()?;
    Ok((turn_bytes + last.len()) as u64)
}

// ---------------------------------------------------------------- report ---

struct Stats {
    median: Duration,
    p90: Duration,
    max: Duration,
}

impl Stats {
    fn of(samples: &mut [Duration]) -> Stats {
        samples.sort_unstable();
        let at = |q: usize| samples[(samples.len() * q).div_ceil(100).max(1) - 1];
        Stats {
            median: at(50),
            p90: at(90),
            max: samples[samples.len() - 1],
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

fn header(out: &mut String, args: &Args, hook: &Path, tmp: &Path, load: &str, setup: &Setup) {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let _ = writeln!(out, "# ralph-stop-hook, whole-process figures\n");
    let _ = writeln!(out, "- date: {}", utc_now());
    let _ = writeln!(
        out,
        "- machine: {cpus} CPUs, {cpu}, Linux {}; load average at start: {}",
        kernel.trim(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(out, "- hook: {}", hook.display());
    let _ = writeln!(out, "- temp projects: {} ({})", tmp.display(), fs_type(tmp));
    let _ = writeln!(
        out,
        "- each project: {}, {PROJECT_FILES} source files, {PROJECT_CHANGED} changed and {PROJECT_CHANGED} untracked",
        if tmp.join("projects/no-loop/.git").is_dir() {
            "a git repository"
        } else {
            "a plain folder (git missing: no `git status` cost is measured)"
        }
    );
    let _ = writeln!(
        out,
        "- {} measured runs per case after {} warm-up runs, cases interleaved; times are spawn + write stdin + read stdout + wait",
        args.runs, args.warmup
    );
    let _ = writeln!(
        out,
        "- transcripts: small {} B; big {:.1} MiB (history of past turns, then the small transcript's lines); long last turn {:.1} MiB. PRD: {} KiB",
        setup.small_transcript_bytes,
        setup.big_transcript_bytes as f64 / MIB as f64,
        setup.long_turn_bytes as f64 / MIB as f64,
        setup.prd_bytes / 1024
    );
    let _ = writeln!(
        out,
        "- verdicts compare the median with the target; peak RSS is the largest of {RSS_RUNS} runs under GNU time (`%M`, KiB; target {RSS_TARGET_KIB} KiB)\n"
    );
}

fn table(out: &mut String, cases: &[Case], stats: &[Stats], rss: &[Option<u64>]) {
    let _ = writeln!(
        out,
        "| case | median ms | p90 ms | max ms | target | verdict | peak RSS KiB | RSS verdict |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|---|---:|---|");
    for ((case, s), rss) in cases.iter().zip(stats).zip(rss) {
        let (target, v) = match case.target {
            Target::None => ("-".to_string(), "-"),
            Target::Ms(t) => (format!("≤ {t} ms"), verdict(ms(s.median) <= t)),
        };
        let (rss_text, rss_v) = match rss {
            None => ("n/a (no GNU time)".to_string(), "-"),
            Some(k) if case.rss_target => (k.to_string(), verdict(*k <= RSS_TARGET_KIB)),
            Some(k) => (k.to_string(), "-"),
        };
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.3} | {target} | {v} | {rss_text} | {rss_v} |",
            case.label,
            ms(s.median),
            ms(s.p90),
            ms(s.max)
        );
    }
}

/// Transcript size must not matter: compare the cases that differ only by it.
fn differences(out: &mut String, cases: &[Case], stats: &[Stats]) {
    let find = |prefix: &str| cases.iter().position(|c| c.label.starts_with(prefix));
    let pairs = [
        (
            "5b",
            "5a",
            "100 MB vs 1 KB transcript, no breaker, no last_assistant_message (5b - 5a)",
        ),
        (
            "3b",
            "3a",
            "100 MB vs 1 KB transcript, no last_assistant_message (3b - 3a)",
        ),
        (
            "2b",
            "2a",
            "100 MB vs 1 KB transcript, last_assistant_message without the promise (2b - 2a)",
        ),
    ];
    let _ = writeln!(
        out,
        "\n| comparison | median difference | p90 difference | target | verdict |"
    );
    let _ = writeln!(out, "|---|---:|---:|---|---|");
    for (big, small, label) in pairs {
        let (Some(b), Some(s)) = (find(big), find(small)) else {
            continue;
        };
        let diff = ms(stats[b].median) - ms(stats[s].median);
        let diff90 = ms(stats[b].p90) - ms(stats[s].p90);
        let _ = writeln!(
            out,
            "| {label} | {diff:+.3} ms | {diff90:+.3} ms | ≤ {TRANSCRIPT_DIFF_TARGET_MS} ms | {} |",
            verdict(diff <= TRANSCRIPT_DIFF_TARGET_MS)
        );
    }
}

/// The file system the temp projects live on: fsync costs differ by orders
/// of magnitude between tmpfs and a disk.
fn fs_type(path: &Path) -> String {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, mount, kind) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), kind.to_string()))
        })
        .max()
        .map(|(_, kind)| kind)
        .unwrap_or_else(|| "unknown file system".into())
}

/// "YYYY-MM-DD HH:MM UTC" without a date crate (civil-from-days, H. Hinnant).
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem / 60) % 60
    )
}
