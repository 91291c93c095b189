//! ralph: the one command a user types in a terminal. `ralph run` drives a
//! loop headless, one fresh `claude -p` per iteration, on the same core as
//! the in-session loop (the same start, state file, log, guard and Stop
//! hook); `start`, `status`, `cancel`, `resume`, `report` and `statusline`
//! are the in-client commands' terminal forms, each a call into ralph-core
//! (`statusline` runs `ralph-setup`, whose status line it is).
//! The loop options are defined once (`ralph_core::args::options`).

mod child;
mod config;
mod installed;
mod loop_files;
mod merge;
mod prepare;
mod run_files;
mod runner;
mod signals;
mod story;
mod terminal;
mod wave;

use clap::{Parser, Subcommand};
use ralph_core::args::{self, RunArgv};
use ralph_core::control;
use ralph_core::paths::{LoopPaths, project_root_from_env};
use ralph_core::run::end::EXIT_USAGE;
use ralph_core::run::failure::Pacing;
use ralph_core::run::rotation::Thresholds;
use ralph_core::run::units::{parse_duration, parse_tokens};
use ralph_core::start::commands;
use ralph_core::store;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// `ralph statusline` typed in a terminal.
const STATUSLINE_HELP: &str = "ralph statusline install: show this project's loop in Claude Code's status line (~/.claude/settings.json; your own status line is kept after it). ralph statusline off: take it out, the file exactly as it was. In Claude Code: /ralph-statusline, /ralph-statusline off.";

const RUN_HELP: &str = "\
Each iteration runs `claude -p --input-format stream-json --output-format stream-json --verbose \
--plugin-dir <ralph> [CLIENT FLAGS]` in the project, a fresh session with the iteration's prompt. \
After it, the real ralph-stop-hook decides (promise + verify, PRD stories, cap, breaker, blocker, \
deadlock): its next prompt feeds the next iteration, or the loop ends. The state file, log and \
status are those of an in-session loop: `ralph status` or /ralph-status show the run, \
`ralph cancel` or /cancel-ralph end it.

Kept in the project: .claude/ralph-runs/<run-id>/ (iter-N.jsonl: each iteration's raw stream; \
iter-N.prompt.md, iter-N.stderr, progress.log, outcome.json), .claude/ralph-handoff.md (the hand-off \
between iterations), .claude/ralph-run.lock (held while a run goes on: a second run is refused).

Exit codes:
  0    complete: the promise was printed (and verified), or every story passes
  1    ended without completion: cap, no-progress breaker, blocker, deadlock, stuck story,
       cancelled, the client failed --max-failures times in a row, or a wait past --max-wait
  2    usage error, or the run was refused (nothing was started)
  130  interrupted (SIGINT, SIGTERM): the client is stopped and the loop cancelled

Examples:
  ralph run \"Make the failing tests pass\" --completion-promise DONE --verify \"cargo test\" --max-iterations 20
  ralph run --prd-file prd.json --max-iterations 40 --notify 'notify-send ralph \"$RALPH_MESSAGE\"' -- --model sonnet";

#[derive(Parser)]
#[command(
    name = "ralph",
    version,
    about = "Ralph loops for Claude Code: start, watch and stop one from a terminal, or run one headless",
    after_help = "The loop options (ralph start --help, ralph run --help) are those of /ralph-loop; all of them: docs/options.md. In Claude Code: /ralph-loop, /ralph-status, /cancel-ralph, /ralph-resume, /ralph-help."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a loop for the next Claude Code session that stops here (the options of /ralph-loop)
    #[command(disable_help_flag = true)]
    Start {
        /// The session that owns the loop (default: $CLAUDE_CODE_SESSION_ID, else the first to stop)
        #[arg(long)]
        session: Option<String>,
        /// Prompt words and loop options, as for /ralph-loop (--help: all of them)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Show the loop's state, PRD progress and last decision (and a running `ralph run`)
    Status {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Cancel the loop of this project (a running `ralph run` stops within a second)
    Cancel,
    /// Resume the loop of this project after it paused for you (a blocker, a changed file)
    Resume,
    /// Accept the removal of tests from the suite (their ids, or --all): a claim is no longer refused for them
    Accept {
        /// The tests' ids, as the refusal or status names them; --all: every test gone now
        #[arg(required = true, allow_hyphen_values = true)]
        tests: Vec<String>,
    },
    /// The loop's story from its activity log: how it ended, iterations, stories, checks
    Report {
        /// Write it as one self-contained HTML page (with a chart) to FILE
        #[arg(long, value_name = "FILE")]
        html: Option<String>,
    },
    /// Claude Code's status line: `install` puts ralph's into ~/.claude/settings.json, `off` takes it out exactly
    Statusline {
        #[arg(value_parser = ["install", "off"])]
        action: Option<String>,
        /// (As the status line itself) your own status-line command, its output after ralph's
        #[arg(long, value_name = "CMD", hide = true)]
        then: Option<String>,
    },
    /// Run a loop headless: one fresh `claude -p` per iteration until the task is really done
    #[command(disable_help_flag = true)]
    Run {
        /// Prompt words, loop options (those of /ralph-loop), ralph run's own, then `--` and the client's flags (--help: all of them)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The PRD's stories that can run now, as a GitHub Actions matrix (docs/github-actions.md)
    #[command(after_help = wave::PLAN_HELP)]
    Plan(wave::PlanArgs),
    /// Merge story branches into the loop's branch checked out here, each checked, marked passing or sent back
    #[command(after_help = merge::MERGE_HELP)]
    Merge(merge::MergeArgs),
}

fn main() -> ExitCode {
    let command = Cli::parse().command;
    if control::this_process_run_by_agent() {
        let refused = match &command {
            Command::Run { .. } => Some("ralph run"),
            Command::Start { .. } => Some("ralph start"),
            Command::Cancel => Some("ralph cancel"),
            Command::Resume => Some("ralph resume"),
            Command::Accept { .. } => Some("ralph accept"),
            Command::Merge(_) => Some("ralph merge"),
            // A file written wherever the agent points (the loop's state,
            // the command policy, the user's settings): it reads stdout.
            Command::Report { html: Some(_) } => Some("ralph report --html"),
            _ => None,
        };
        if let Some(what) = refused {
            control::print_error(&control::agent_refused(what));
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let paths = || LoopPaths::new(project_root_from_env(None));
    match command {
        Command::Run { args } => run(&args),
        Command::Start { session, args } => start(&paths(), session, &args),
        Command::Resume => printed(control::resume(&paths()).map(|r| r.message().to_string())),
        Command::Accept { tests } => accept(&paths(), &tests),
        Command::Report { html } => report(&paths(), html.as_deref().map(Path::new)),
        Command::Statusline { action, then } => {
            let args: Vec<String> = match (action.as_deref(), then) {
                (Some("install"), _) => vec!["--install".into()],
                (Some(_), _) => vec!["--off".into()],
                (None, Some(cmd)) => vec!["--then".into(), cmd],
                // Typed in a terminal (the client pipes its JSON): say what to type.
                (None, None) if std::io::IsTerminal::is_terminal(&std::io::stdin()) => {
                    println!("{STATUSLINE_HELP}");
                    return ExitCode::SUCCESS;
                }
                (None, None) => Vec::new(),
            };
            installed::exec_setup("statusline", &args)
        }
        Command::Plan(args) => wave::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Status { json } => {
            let paths = paths();
            let status = control::status(&paths);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&status).unwrap_or_default()
                );
            } else {
                print!("{}", status.to_text());
                if let Some(holder) = run_files::run_lock_holder(&paths.root) {
                    println!("ralph run: running ({holder})");
                }
            }
            ExitCode::SUCCESS
        }
        Command::Cancel => match control::cancel(&paths()) {
            Ok(msg) => {
                println!("{msg}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ralph: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// `ralph accept TEST... | --all`: the user accepts the removal of tests.
fn accept(paths: &LoopPaths, tests: &[String]) -> ExitCode {
    // Each id as one word again, whatever it holds.
    let quoted: Vec<String> = tests.iter().map(|t| format!("\"{t}\"")).collect();
    match control::accept(paths, &quoted.join(" ")) {
        Ok(control::AcceptOutcome::Accepted(msg)) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Ok(control::AcceptOutcome::Not(msg)) => usage_error(&msg),
        Err(e) => usage_error(&e.to_string()),
    }
}

/// `ralph start [--session ID] ARGS...`: a loop started from the terminal
/// for the first session that stops here (or the one named), or its help.
/// Without `--verify`, the command policy's `[gates] full` row is its check.
fn start(paths: &LoopPaths, session: Option<String>, argv: &[String]) -> ExitCode {
    let session = session
        .or_else(|| std::env::var("CLAUDE_CODE_SESSION_ID").ok())
        .unwrap_or_default();
    let a = match args::parse_argv(argv) {
        Ok(a) if a.help => {
            println!("{}", control::terminal_help(false));
            return ExitCode::SUCCESS;
        }
        Ok(a) => a,
        Err(e) => return usage_error(&e.to_string()),
    };
    if let Err(e) = named_from_the_root(&paths.root, &files_named(&a)) {
        return usage_error(&e);
    }
    let starter = commands::Starter {
        session: &session,
        ..commands::Starter::default()
    };
    match commands::start(paths, &a, &starter, ralph_policy::gather::full_gate) {
        Ok(started) => {
            print!("{}{}", started.summary, started.task);
            ExitCode::SUCCESS
        }
        Err(e) => usage_error(&e.to_string()),
    }
}

/// `ralph report [--html FILE]`: the last loop of the activity log, as text
/// or one HTML page.
fn report(paths: &LoopPaths, html: Option<&Path>) -> ExitCode {
    let log = store::read_optional(&paths.log)
        .ok()
        .flatten()
        .unwrap_or_default();
    let Some(mut r) =
        ralph_core::loop_report::Report::of_log(&log, ralph_core::verify::read_log(&paths.verify))
    else {
        println!(
            "No Ralph loop has run here yet ({} is empty).",
            paths.log.display()
        );
        return ExitCode::SUCCESS;
    };
    r.suite = ralph_core::suite::overview::SuiteSummary::of_loop(paths);
    let Some(file) = html else {
        print!("{}", r.to_text());
        return ExitCode::SUCCESS;
    };
    printed(store::atomic_write(file, r.to_html().as_bytes()).map(|()| {
        format!(
            "The loop's report is in {} ({}).",
            file.display(),
            r.ending()
        )
    }))
}

/// A command's message on stdout, or its error on stderr.
fn printed<E: std::fmt::Display>(result: Result<String, E>) -> ExitCode {
    match result {
        Ok(msg) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Err(e) => usage_error(&e.to_string()),
    }
}

/// `ralph run ARGS`: its help, or the run.
fn run(argv: &[String]) -> ExitCode {
    let split = match args::split_run_argv(argv) {
        Ok(split) => split,
        Err(e) => return usage_error(&e.to_string()),
    };
    if split.args.help {
        println!("{}\n{RUN_HELP}", control::terminal_help(true));
        return ExitCode::SUCCESS;
    }
    if let Err(e) = named_from_the_root(&project_root_from_env(None), &files_named(&split.args)) {
        return usage_error(&e);
    }
    if split.given("--story") {
        return story::run(split);
    }
    match config(split) {
        Ok(cfg) => runner::run(&cfg),
        Err(e) => usage_error(&e),
    }
}

/// The files a loop's options name.
fn files_named(a: &args::StartArgs) -> [(&'static str, Option<&str>); 2] {
    [
        ("--prd-file", a.prd_file.as_deref()),
        ("--prompt-file", a.prompt_file.as_deref()),
    ]
}

/// A file named on the command line is the project's, read from its root:
/// the top of the git repository, where ralph runs the loop (and its
/// checks). Typed below it, a name found from here and not from the root
/// is refused, saying what to type (read from the root, it named no file,
/// or another one).
pub(crate) fn named_from_the_root(
    root: &Path,
    named: &[(&str, Option<&str>)],
) -> Result<(), String> {
    let Ok(here) = std::env::current_dir() else {
        return Ok(());
    };
    let below = match here.strip_prefix(root) {
        Ok(b) if !b.as_os_str().is_empty() => b,
        _ => return Ok(()),
    };
    for (option, file) in named {
        let Some(file) = file.filter(|f| Path::new(f).is_relative()) else {
            continue;
        };
        if !root.join(file).exists() && here.join(file).exists() {
            return Err(format!(
                "{option} {file}: ralph runs the loop at the top of this git repository, {}, and reads {file} there (the checks run there too): give {option} {}",
                root.display(),
                below.join(file).display()
            ));
        }
    }
    Ok(())
}

/// A usage error, on stderr once (`ralph`'s output is read by people and
/// scripts, not by a skill's `!` line).
fn usage_error(e: &str) -> ExitCode {
    eprintln!("ralph: {e}");
    ExitCode::from(EXIT_USAGE)
}

/// The run's settings, checked before anything starts (the values are
/// checked by `split_run_argv` already; their defaults are the table's).
fn config(a: RunArgv) -> Result<config::Config, String> {
    let value = |name: &str| a.value(name).unwrap_or_default().to_string();
    let option = |name: &str| format!("{name}: ");
    let thresholds = Thresholds {
        soft: parse_tokens(&value("--rotate-at")).map_err(|e| option("--rotate-at") + &e)?,
        hard: parse_tokens(&value("--rotate-hard")).map_err(|e| option("--rotate-hard") + &e)?,
    };
    thresholds.validate()?;
    let max_failures = value("--max-failures")
        .parse()
        .map_err(|_| "--max-failures takes a whole number".to_string())?;
    let duration = |name: &str| parse_duration(&value(name)).map_err(|e| option(name) + &e);
    Ok(config::Config {
        claude: a
            .value("--claude")
            .map(str::to_string)
            .or_else(|| std::env::var("RALPH_CLAUDE").ok().filter(|c| !c.is_empty()))
            .unwrap_or_else(|| "claude".into()),
        max_failures,
        max_wait: duration("--max-wait")?,
        notify: a
            .value("--notify")
            .filter(|c| !c.trim().is_empty())
            .map(str::to_string),
        thresholds,
        iteration_timeout: Some(duration("--iteration-timeout")?).filter(|d| !d.is_zero()),
        pacing: pacing_from_env(),
        sandbox: !a.given("--no-sandbox"),
        start_args: a.start,
        client_args: a.client,
    })
}

/// The unit of the retry waits: one second, or `RALPH_RUN_WAIT_UNIT_MS`
/// (the tests' way to wait milliseconds where a user waits minutes).
fn pacing_from_env() -> Pacing {
    std::env::var("RALPH_RUN_WAIT_UNIT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(|ms| Pacing {
            unit: Duration::from_millis(ms),
        })
        .unwrap_or_default()
}
