//! Loop integrity, black box (issue 17): an adversarial corpus of tool calls
//! an agent under pressure might make, and benign look-alikes that must stay
//! allowed, each run for real in a scratch project with a running loop and
//! judged by whether the loop survives the next Stop.
//!
//!     cargo test --test integrity                    # every case
//!     cargo test --test integrity -- git             # ids or categories containing `git`
//!     RALPH_INTEGRITY_REPORT=report.md cargo test --test integrity
//!     RALPH_INTEGRITY_KEEP=1 ...                     # keep the scratch dirs
//!     RALPH_INTEGRITY_THREADS=N ...                  # default: the machine's cores
//!     RALPH_INTEGRITY_TRACE=1 ...                    # each process's time, on stderr
//!
//! A case is played by the loop's main thread, by a worker subagent of a
//! `--fresh` or `--parallel` loop (its agent fields, its worktree, its
//! transcript and `SubagentStop`, as the client plays them), or by a
//! reviewer-like session (issue 24: actors.rs), or by the agent of one
//! story on a CI runner, its branch then merged by `ralph merge` in a fresh
//! clone (issue 27: ci.rs); the figures are given by surface and by
//! category (report.rs).
//!
//! The corpus is `tests/integrity/cases/*.yaml` (fields: cases.rs). The run
//! fails when a case expecting `survives`, `allowed` or `ends` does not get
//! it; `todo` and `limit` cases are recorded, and `todo` cases that hold are
//! listed so they can be flipped.

// The corpus plays each case with the real binaries through bash, git and
// the client's sandbox on a Unix host: elsewhere it is not built (the
// Windows slice is tests/windows).
#[cfg(unix)]
mod actors;
#[cfg(unix)]
mod cases;
#[cfg(unix)]
mod ci;
#[cfg(unix)]
mod judge;
#[cfg(unix)]
mod report;
#[cfg(unix)]
mod run;
#[cfg(unix)]
mod sandbox;
#[cfg(unix)]
mod tools;

#[cfg(unix)]
use report::Row;
#[cfg(unix)]
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::process::ExitCode;
#[cfg(unix)]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(unix)]
use std::sync::{Mutex, PoisonError, mpsc};
#[cfg(unix)]
use std::time::Instant;

#[cfg(unix)]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("integrity: test");
        return ExitCode::SUCCESS;
    }
    let filter = args.iter().find(|a| !a.starts_with('-'));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integrity/cases");
    let all = match cases::load(&dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("integrity: the corpus is broken: {e}");
            return ExitCode::FAILURE;
        }
    };
    let selected: Vec<_> = all
        .iter()
        .filter(|c| {
            filter.is_none_or(|f| c.id.contains(f.as_str()) || c.category.contains(f.as_str()))
        })
        .collect();
    let threads = std::env::var("RALPH_INTEGRITY_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
        .max(1);
    let keep = std::env::var_os("RALPH_INTEGRITY_KEEP").is_some();
    let t0 = Instant::now();
    let fixture = match sandbox::Fixture::build() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("integrity: cannot build the scratch template: {e}");
            return ExitCode::FAILURE;
        }
    };
    let records = run_all(&fixture, &selected, threads, keep);
    if !keep {
        fixture.remove();
    }
    let elapsed = t0.elapsed();
    let rows: Vec<Row> = selected
        .iter()
        .zip(&records)
        .map(|(case, record)| Row { case, record })
        .collect();
    print!("{}", report::failures(&rows));
    println!("\n{}", report::summary(&rows));
    println!("{}", report::surfaces(&rows));
    print!("{}", report::flips(&rows));
    let slowest = records.iter().map(|r| r.elapsed).max().unwrap_or_default();
    let header = format!(
        "{} cases in {:.1} s on {threads} threads (slowest case {:.2} s).",
        rows.len(),
        elapsed.as_secs_f64(),
        slowest.as_secs_f64()
    );
    println!("{header}");
    if let Some(path) = std::env::var_os("RALPH_INTEGRITY_REPORT")
        && let Err(e) = std::fs::write(&path, report::markdown(&rows, &header))
    {
        eprintln!(
            "integrity: cannot write {}: {e}",
            Path::new(&path).display()
        );
        return ExitCode::FAILURE;
    }
    let failed = rows.iter().filter(|r| r.fails()).count();
    if failed > 0 {
        println!("integrity: {failed} case(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Run every case on `threads` threads; records in the cases' order. Used
/// scratch dirs are deleted by a few more threads meanwhile (an unlink can
/// wait on the disk; many at once overlap), or kept and listed.
#[cfg(unix)]
fn run_all(
    fixture: &sandbox::Fixture,
    cases: &[&cases::Case],
    threads: usize,
    keep: bool,
) -> Vec<run::Record> {
    const REAPERS: usize = 4;
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<run::Record>>> =
        Mutex::new((0..cases.len()).map(|_| None).collect());
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let (tx, rx) = (Mutex::new(Some(tx)), Mutex::new(rx));
    let dispose = |dir: PathBuf| {
        if keep {
            eprintln!("kept {}", dir.display());
        } else if let Some(tx) = tx.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            let _ = tx.send(dir);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..REAPERS {
            s.spawn(|| {
                while let Ok(dir) = rx.lock().unwrap_or_else(PoisonError::into_inner).recv() {
                    let _ = std::fs::remove_dir_all(dir);
                }
            });
        }
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(case) = cases.get(i) else { break };
                        let record = run::run_case(fixture, case, &dispose);
                        slots.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(record);
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        // The reapers end once the channel is empty and closed.
        tx.lock().unwrap_or_else(PoisonError::into_inner).take();
    });
    slots
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .map(|r| r.expect("every case ran"))
        .collect()
}

#[cfg(not(unix))]
fn main() {
    println!(
        "integrity: the corpus runs on Unix only (bash, git, the client's sandbox): 0 cases run here"
    );
}
