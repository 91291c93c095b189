//! ralph: one name for the user. `ralph run` drives a loop headless, one
//! fresh `claude -p` per iteration, on the same core as the in-session loop
//! (the same start, state file, log, guard and Stop hook); `start`, `status`
//! and `cancel` mirror `ralph-setup`.

mod child;
mod config;
mod edge;
mod merge;
mod plan;
mod prepare;
mod runner;
mod story;

use clap::{Args, Parser, Subcommand};
use ralph_core::control;
use ralph_core::paths::{LoopPaths, project_root_from_env};
use ralph_core::run::failure::Pacing;
use ralph_core::run::options::{parse_duration, parse_tokens};
use ralph_core::run::outcome::EXIT_USAGE;
use ralph_core::run::rotation::Thresholds;
use std::process::ExitCode;
use std::time::Duration;

const RUN_HELP: &str = "\
Each iteration runs `claude -p --input-format stream-json --output-format stream-json --verbose \
--plugin-dir <ralph> [CLIENT FLAGS]` in the project, a fresh session with the iteration's prompt. \
After it, the real ralph-stop-hook decides (promise + verify, PRD stories, cap, breaker, blocker, \
deadlock): its next prompt feeds the next iteration, or the loop ends. The state file, log and \
status are those of an in-session loop: `ralph status` or /ralph:ralph-status show the run, \
`ralph cancel` or /ralph:cancel-ralph end it.

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
    about = "Ralph loops for Claude Code: run one headless, or start, inspect and cancel one"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a loop headless: one fresh `claude -p` per iteration until the task is really done
    #[command(
        after_help = "Exit codes: 0 complete, 1 ended without completion, 2 usage error, 130 interrupted (--help for more)",
        after_long_help = RUN_HELP
    )]
    Run(Box<RunArgs>),
    /// Start a loop for the next Claude Code session that stops here (as `ralph-setup start`)
    Start {
        /// The session that owns the loop (default: $CLAUDE_CODE_SESSION_ID, else the first to stop)
        #[arg(long)]
        session: Option<String>,
        /// Prompt words and loop options, as for /ralph:ralph-loop
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Show the loop's state (and a running `ralph run`)
    Status {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Cancel the loop of this project (a running `ralph run` stops within a second)
    Cancel,
    /// Claude Code status line for this project's loop (as `ralph-setup statusline [--then CMD]`)
    Statusline {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The loop's story from its activity log (as `ralph-setup report [--html FILE]`)
    Report {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The PRD's stories that can run now, as a GitHub Actions matrix (docs/github-actions.md)
    #[command(after_help = plan::PLAN_HELP)]
    Plan(plan::PlanArgs),
    /// Merge story branches into the loop's branch checked out here, each checked, marked passing or sent back
    #[command(after_help = merge::MERGE_HELP)]
    Merge(merge::MergeArgs),
}

#[derive(Args)]
struct RunArgs {
    /// The task, as words (or --prompt-file / --prd-file)
    #[arg(value_name = "PROMPT")]
    prompt: Vec<String>,
    /// Read the task from a file (its frontmatter is not part of it)
    #[arg(long, value_name = "PATH")]
    prompt_file: Option<String>,
    /// PRD mode: feed the stories of a prd.json one by one
    #[arg(long, value_name = "PATH")]
    prd_file: Option<String>,
    /// The loop ends when the agent prints <promise>TEXT</promise> (PRD default: RALPH-COMPLETE)
    #[arg(long, value_name = "TEXT")]
    completion_promise: Option<String>,
    /// Iterations in all (0 = no cap)
    #[arg(long, value_name = "N")]
    max_iterations: Option<String>,
    /// Completion counts only when CMD exits 0
    #[arg(long, value_name = "CMD")]
    verify: Option<String>,
    /// How long --verify may run, in seconds (default 300)
    #[arg(long, value_name = "SECS")]
    verify_timeout: Option<String>,
    /// Stop after N iterations in a row that change nothing (default 3; 0 = off)
    #[arg(long, value_name = "N")]
    max_stalls: Option<String>,
    /// Stop when one story is fed N times in a row without passing (default 5)
    #[arg(long, value_name = "N")]
    max_story_attempts: Option<String>,
    /// PRD mode: up to N stories at once, each by a worker in its own git worktree, merged before it counts
    #[arg(long, value_name = "N")]
    parallel: Option<String>,
    /// Pin more files (repeatable, e.g. 'tests/**'): checks run with them as at start, the agent may not write them
    #[arg(long, value_name = "GLOB")]
    pin: Vec<String>,
    /// Take over another session's running loop in this project
    #[arg(long)]
    replace: bool,
    /// The Claude Code client to run (default: $RALPH_CLAUDE, else `claude` on PATH)
    #[arg(long, value_name = "PATH")]
    claude: Option<String>,
    /// End the run after N client failures in a row (crash, non-zero exit, API error)
    #[arg(long, value_name = "N", default_value_t = 3)]
    max_failures: u32,
    /// The longest the run waits out rate and usage limits in a row (e.g. 90m, 6h)
    #[arg(long, value_name = "DURATION", default_value = "6h")]
    max_wait: String,
    /// Run CMD (sh -c) once when the run ends, or `desktop` (default: notify in .claude/ralph.toml); env: RALPH_OUTCOME, RALPH_ITERATIONS, RALPH_MESSAGE
    #[arg(long, value_name = "CMD")]
    notify: Option<String>,
    /// Ask the agent for a hand-off when its context reaches TOKENS (e.g. 120k; 0 = off)
    #[arg(long, value_name = "TOKENS", default_value = "120k")]
    rotate_at: String,
    /// Stop the client when its context reaches TOKENS (0 = off)
    #[arg(long, value_name = "TOKENS", default_value = "160k")]
    rotate_hard: String,
    /// Stop an iteration that runs longer than this (0 = no limit)
    #[arg(long, value_name = "DURATION", default_value = "2h")]
    iteration_timeout: String,
    /// Flags for the client, after `--` (e.g. -- --model sonnet --permission-mode acceptEdits)
    #[arg(last = true, value_name = "CLIENT FLAGS")]
    client_args: Vec<String>,
    #[command(flatten)]
    story: story::StoryArgs,
}

fn main() -> ExitCode {
    let command = Cli::parse().command;
    if control::this_process_run_by_agent() {
        let refused = match &command {
            Command::Run(_) => Some("ralph run"),
            Command::Start { .. } => Some("ralph start"),
            Command::Cancel => Some("ralph cancel"),
            Command::Merge(_) => Some("ralph merge"),
            _ => None,
        };
        if let Some(what) = refused {
            eprintln!("ralph: {}", control::agent_refused(what));
            println!("ralph: {}", control::agent_refused(what));
            return ExitCode::from(EXIT_USAGE);
        }
    }
    match command {
        Command::Run(args) if args.story.story.is_some() => story::run(*args),
        Command::Run(args) => match config(*args) {
            Ok(cfg) => runner::run(&cfg),
            Err(e) => usage_error(&e),
        },
        Command::Start { session, args } => edge::exec_setup_start(session, &args),
        Command::Statusline { args } => edge::exec_setup("statusline", &args),
        Command::Report { args } => edge::exec_setup("report", &args),
        Command::Plan(args) => plan::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Status { json } => {
            let paths = LoopPaths::new(project_root_from_env(None));
            let status = control::status(&paths);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&status).unwrap_or_default()
                );
            } else {
                print!("{}", status.to_text());
                if let Some(holder) = edge::run_lock_holder(&paths.root) {
                    println!("ralph run: running ({holder})");
                }
            }
            ExitCode::SUCCESS
        }
        Command::Cancel => match control::cancel(&LoopPaths::new(project_root_from_env(None))) {
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

fn usage_error(e: &str) -> ExitCode {
    eprintln!("ralph: {e}");
    ExitCode::from(EXIT_USAGE)
}

/// The run's settings, checked before anything starts.
fn config(a: RunArgs) -> Result<config::Config, String> {
    let option = |name: &str| format!("--{name}: ");
    let thresholds = Thresholds {
        soft: parse_tokens(&a.rotate_at).map_err(|e| option("rotate-at") + &e)?,
        hard: parse_tokens(&a.rotate_hard).map_err(|e| option("rotate-hard") + &e)?,
    };
    thresholds.validate()?;
    if a.max_failures == 0 {
        return Err("--max-failures must be at least 1".into());
    }
    let mut start = Vec::new();
    let mut pass = |flag: &str, value: Option<String>| {
        if let Some(v) = value {
            start.push(format!("--{flag}"));
            start.push(v);
        }
    };
    pass("prompt-file", a.prompt_file);
    pass("prd-file", a.prd_file);
    pass("completion-promise", a.completion_promise);
    pass("max-iterations", a.max_iterations);
    pass("verify", a.verify);
    pass("verify-timeout", a.verify_timeout);
    pass("max-stalls", a.max_stalls);
    pass("max-story-attempts", a.max_story_attempts);
    pass("parallel", a.parallel);
    for glob in a.pin {
        start.push("--pin".into());
        start.push(glob);
    }
    if a.replace {
        start.push("--replace".into());
    }
    start.push("--".into());
    start.extend(a.prompt);
    Ok(config::Config {
        start_args: start,
        claude: a
            .claude
            .or_else(|| std::env::var("RALPH_CLAUDE").ok().filter(|c| !c.is_empty()))
            .unwrap_or_else(|| "claude".into()),
        client_args: a.client_args,
        max_failures: a.max_failures,
        max_wait: parse_duration(&a.max_wait).map_err(|e| option("max-wait") + &e)?,
        notify: a.notify.filter(|c| !c.trim().is_empty()),
        thresholds,
        iteration_timeout: Some(
            parse_duration(&a.iteration_timeout).map_err(|e| option("iteration-timeout") + &e)?,
        )
        .filter(|d| !d.is_zero()),
        pacing: pacing_from_env(),
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
