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
//!
//! [`args`] reads the command line, [`fixtures`] and [`transcripts`] write
//! what the hook meets, [`cases`] builds the cases and times them, and
//! [`figures`] prints the figures.

mod args;
mod case;
mod cases;
mod figures;
mod fixtures;
mod steady;
mod transcripts;

use std::fs;
use std::process::ExitCode;

use args::Args;
use case::Case;
use cases::{Setup, TempRoot};
use figures::Stats;

const HOOK: &str = "ralph-stop-hook";
const MIB: u64 = 1 << 20;

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
    let mut setup = Setup::prepare(&root.0, &hook, &args.repos, args.versus.as_deref())
        .map_err(|e| format!("preparing: {e}"))?;
    if !args.only.is_empty() {
        setup.cases.retain(|c| {
            // A twin (`--versus`) goes with its case.
            let label = c.label.strip_prefix(steady::BEFORE).unwrap_or(&c.label);
            args.only.iter().any(|p| label.starts_with(p.as_str()))
        });
    }
    if let Some(before) = &args.versus {
        steady::pair_with(&mut setup.cases, before);
    }
    for (i, case) in setup.cases.iter_mut().enumerate() {
        case.spread_over_copies(&root.0.join("copies").join(i.to_string()), args.copies)
            .map_err(|e| format!("copying {}: {e}", case.program.display()))?;
    }
    let cases = &setup.cases;
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();

    eprintln!(
        "ralph-bench: {} cases, {} warm-up + {} measured runs each, interleaved ...",
        cases.len(),
        args.warmup,
        args.runs
    );
    let mut measured = cases::measure(cases, args.warmup, args.runs)?;
    let paired = steady::paired(cases, &measured.samples);
    let rss: Vec<Option<u64>> = cases.iter().map(Case::peak_rss_kib).collect();
    let stats: Vec<Stats> = measured.samples.iter_mut().map(|s| Stats::of(s)).collect();

    let mut report = String::new();
    figures::header(&mut report, args, &hook, &root.0, &load, &setup);
    figures::table(&mut report, cases, &stats, &rss);
    figures::differences(&mut report, cases, &stats);
    figures::late_transcript(&mut report, cases, &stats);
    figures::warnings(&mut report, cases, &measured.wrong);
    print!("{report}{paired}");
    Ok(())
}
