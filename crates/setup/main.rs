//! ralph-setup: the ralph plugin's entry for its hooks, its skills and the
//! status line. People type `ralph` (crates/ralph): every verb here is
//! hidden from `--help`, which points there.
//!
//! `hook-prompt` is the UserPromptSubmit hook: it sees the raw text of
//! `/ralph-loop ...` exactly as typed (no shell in between) and the
//! session id, so the prompt reaches the state file byte for byte and the loop
//! belongs to the session that started it. The skills' `!` lines only
//! call `show`, `cancel` and `status`, which take no user text; `ralph`
//! runs `statusline --install/--off` here (its start, resume and report
//! call ralph-core themselves).
//!
//! The commands themselves are `ralph_core::start::commands`; this binary
//! parses the command line, routes the typed slash commands, and reads the
//! command policy's `[gates] full` row (ralph-core does not read policies).

mod statusline;

use clap::{Parser, Subcommand};
use ralph_core::args::{self, StartArgs};
use ralph_core::continuity;
use ralph_core::control;
use ralph_core::hook_input::HookInput;
use ralph_core::hook_output::{HookOutput, fail_open};
use ralph_core::paths::{LoopPaths, project_root_from_env};
use ralph_core::start::{PromptAsks, StartError, Started, commands, prompt_asks};
use std::path::Path;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ralph-setup",
    version,
    about = "The ralph plugin's entry for its hooks, skills and status line. In a terminal, type `ralph` (ralph start, status, cancel, resume, report, statusline, run; ralph --help).",
    subcommand_required = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every verb is hidden: they are the hooks', the skills' and `ralph`'s.
#[derive(Subcommand)]
enum Command {
    /// UserPromptSubmit hook: the typed /ralph-loop, /ralph-status, /cancel-ralph, ...
    #[command(hide = true)]
    HookPrompt,
    /// SessionStart, SessionEnd and StopFailure hook
    #[command(hide = true)]
    HookEvent,
    /// What the current loop will do (the /ralph-loop skill's `!` line)
    #[command(hide = true)]
    Show,
    /// Cancel the loop of this project (the /cancel-ralph skill; `ralph cancel`)
    #[command(hide = true)]
    Cancel,
    /// The loop's status (the /ralph-status skill; `ralph status`)
    #[command(hide = true)]
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Take the suite's baselines this process was started for (ralph
    /// starts it, detached, when a loop starts or a story is first fed)
    #[command(hide = true)]
    Baseline,
    /// Claude Code's status line (the command it runs); `--install`/`--off`: `ralph statusline install|off`
    #[command(hide = true)]
    Statusline {
        #[arg(long, value_name = "CMD")]
        then: Option<String>,
        #[arg(long, conflicts_with = "off")]
        install: bool,
        #[arg(long)]
        off: bool,
    },
}

fn main() -> ExitCode {
    // The status line runs after every message of every session: its plain
    // forms skip building the command-line parser.
    if let Some(then) = statusline::fast_args() {
        statusline::run(then.as_deref());
        return ExitCode::SUCCESS;
    }
    let paths = || LoopPaths::new(project_root_from_env(None));
    let command = Cli::parse().command;
    let agents = control::agent_origin();
    if agents.is_some()
        && let Some(code) = refused_to_the_agent(&command)
    {
        return code;
    }
    // A reviewer's session (`--review`) is not the loop's: its hooks stand aside.
    if matches!(command, Command::HookPrompt | Command::HookEvent)
        && ralph_core::passes::in_reviewer_session(&paths())
    {
        return ExitCode::SUCCESS;
    }
    match command {
        Command::Statusline { install, off, .. } if install || off => {
            printed(statusline::install_or_off(off))
        }
        Command::Statusline { then, .. } => {
            statusline::run(then.as_deref());
            ExitCode::SUCCESS
        }
        Command::HookPrompt => {
            // A hook before every prompt: a bug here must never stop the
            // user's prompt. Fail open (exit 0, the prompt goes on) and say so.
            fail_open(
                "ralph: the prompt hook hit an internal error (a bug: please report it); your prompt went on unchanged.",
                || hook_prompt(agents.as_deref()),
            )
            .print();
            ExitCode::SUCCESS
        }
        Command::HookEvent => {
            fail_open(
                "ralph: a session hook hit an internal error (a bug: please report it); the session goes on.",
                hook_event,
            )
            .print();
            // A pause on an API error or a usage limit is announced (`--notify`).
            if let Some(p) = NOTIFY.get() {
                let _ = p.fire();
            }
            ExitCode::SUCCESS
        }
        Command::Show => {
            print!("{}", commands::show(&paths()));
            ExitCode::SUCCESS
        }
        Command::Cancel => printed(control::cancel(&paths())),
        // Only a baseline that names this very process as its taker is
        // taken: one the agent starts finds none (`suite::baseline`).
        Command::Baseline => {
            ralph_core::suite::baseline::take_mine(&paths());
            ExitCode::SUCCESS
        }
        Command::Status { json } => {
            let status = control::status(&paths());
            if json {
                let text = serde_json::to_string_pretty(&status).unwrap_or_default();
                println!("{text}");
            } else {
                print!("{}", status.to_text());
            }
            ExitCode::SUCCESS
        }
    }
}

/// Only the user starts, replaces or ends a loop; the typed commands reach
/// the hook, and the hook's own input is not the agent's to forge. The exit
/// for a command the agent ran that it may not (`None`: it may).
fn refused_to_the_agent(command: &Command) -> Option<ExitCode> {
    Some(match command {
        Command::Cancel => fail(&control::agent_refused("ralph-setup cancel")),
        Command::Statusline { install, off, .. } if *install || *off => fail(
            &"`ralph statusline install/off` was run by the agent: only the user changes their settings.json (`/ralph-statusline` in Claude Code, or `ralph statusline install` in their own terminal). Nothing was changed.",
        ),
        // The prompt hook says why, for a command of ralph's (`hook_prompt`).
        Command::HookEvent => ExitCode::SUCCESS,
        _ => return None,
    })
}

/// A command's message on stdout, or its error.
fn printed<E: std::fmt::Display>(result: Result<String, E>) -> ExitCode {
    match result {
        Ok(msg) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// The error, printed once (see `control::print_error`).
fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    control::print_error(e);
    ExitCode::from(2)
}

/// SessionStart, SessionEnd and StopFailure: every session's start and end
/// passes here, so without a loop in the project it leaves after one stat,
/// before reading its input.
/// The notify command of a loop a StopFailure may pause (set by `hook_event`).
static NOTIFY: std::sync::OnceLock<ralph_core::notify::Pending> = std::sync::OnceLock::new();

fn hook_event() -> HookOutput {
    if let Some(dir) = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty())
        && !LoopPaths::new(dir).has_loop()
    {
        return HookOutput::Nothing;
    }
    // These events come as the client starts or exits, and it ends their
    // hooks with SIGTERM: a pause and its log line are written whole.
    ralph_core::exit_signals::hold_off_termination();
    let Ok(input) = HookInput::read_stdin_with_deadline(10) else {
        return HookOutput::Nothing;
    };
    let paths = LoopPaths::new(project_root_from_env(input.cwd.as_deref()));
    let pid = client_pid();
    if input.hook_event_name.as_deref() == Some("StopFailure")
        && let Some(p) = ralph_core::notify::Pending::note(&paths)
    {
        let _ = NOTIFY.set(p);
    }
    continuity::on_event(&paths, &input, pid)
        .unwrap_or_else(|e| HookOutput::allow(format!("ralph: {e}")))
}

/// UserPromptSubmit: every prompt of every session passes here, so anything
/// that is not one of ralph's commands leaves at once, printing nothing.
/// `agents`: why this hook counts as run by the agent (a client the
/// agent started, or the agent's own call of this verb): one of ralph's
/// commands is then refused in one line, and any other prompt goes on.
fn hook_prompt(agents: Option<&str>) -> HookOutput {
    // Claude Code writes the input and closes the pipe at once; never wait
    // longer than this on a pipe that stays silent (the prompt then goes on).
    let Ok(input) = HookInput::read_stdin_with_deadline(10) else {
        return HookOutput::Nothing;
    };
    let Some(prompt) = input.prompt.as_deref() else {
        return HookOutput::Nothing;
    };
    let asks = prompt_asks(prompt, args::STATUSLINE_COMMANDS);
    if let Some(why) = agents {
        return match asks {
            PromptAsks::Other => HookOutput::Nothing,
            _ => HookOutput::block(control::session_refused(why)),
        };
    }
    // `/ralph-statusline [off]`: the user's own settings, changed only because they typed it.
    if let PromptAsks::Statusline(off) = asks {
        let text = match off {
            Ok(off) => statusline::install_or_off(off),
            Err(other) => Err(format!(
                "`/ralph-statusline {other}`: type `/ralph-statusline` to show the loop in the status line, `/ralph-statusline off` to undo it"
            )),
        };
        return HookOutput::block(text.unwrap_or_else(|e| format!("ralph: {e}")));
    }
    let paths = LoopPaths::new(project_root_from_env(input.cwd.as_deref()));
    // Status, cancel and help are answered here, exactly and at once: the
    // block shows the text to the user and spends no model turn. (Their
    // command files run the same binary, should this hook not be active.)
    let answer = match asks {
        PromptAsks::Status => control::status(&paths).to_text(),
        PromptAsks::Cancel => control::cancel(&paths).unwrap_or_else(|e| format!("ralph: {e}")),
        PromptAsks::Help => control::help_text(),
        // The prompt goes on when the loop was resumed: the model's turn is
        // the loop's next iteration (the skill tells it to carry on).
        PromptAsks::Resume => match control::resume(&paths) {
            Ok(control::Resumed::Yes(text)) => return HookOutput::allow(text),
            Ok(control::Resumed::No(text)) => text,
            Err(e) => format!("ralph: {e}"),
        },
        // Any other prompt of the owner's session resumes a paused loop.
        PromptAsks::Other => {
            return match continuity::resume_on_prompt(&paths, input.session()) {
                Ok(Some(message)) => HookOutput::allow(message),
                Ok(None) => HookOutput::Nothing,
                Err(e) => HookOutput::allow(format!("ralph: {e}")),
            };
        }
        // Accepted: the prompt goes on (the skill tells the model to carry on).
        PromptAsks::Accept(args) => match control::accept(&paths, args) {
            Ok(control::AcceptOutcome::Accepted(text)) => return HookOutput::allow(text),
            Ok(control::AcceptOutcome::Not(text)) => text,
            Err(e) => format!("ralph: {e}"),
        },
        PromptAsks::Start(raw) => return start_from_prompt(&paths, &input, raw),
        PromptAsks::Statusline(_) => return HookOutput::Nothing,
    };
    HookOutput::block(answer.trim_end())
}

/// `/ralph-loop ARGS` typed: the loop starts (its summary goes on
/// with the prompt), or the user is told why not.
fn start_from_prompt(paths: &LoopPaths, input: &HookInput, raw: &str) -> HookOutput {
    match args::parse_command_line(raw).map_err(StartError::from) {
        Ok(a) if a.help => HookOutput::block(control::help_text()),
        Ok(a) => match start(paths, &a, input.session(), input.transcript_path.as_deref()) {
            Ok(started) => HookOutput::allow(started.summary.trim_end()),
            Err(e) => HookOutput::block(format!("ralph: {e}")),
        },
        Err(e) => HookOutput::block(format!("ralph: {e}")),
    }
}

/// Start a loop for the session that typed `/ralph-loop` (its transcript
/// tells the model, for a cost budget).
fn start(
    paths: &LoopPaths,
    a: &StartArgs,
    session: &str,
    transcript: Option<&str>,
) -> Result<Started, StartError> {
    let starter = commands::Starter {
        session,
        transcript: transcript.filter(|t| !t.is_empty()).map(Path::new),
        claude: None,
        sandbox: ralph_core::sandbox::in_session(&paths.root, client_pid()),
    };
    commands::start(paths, a, &starter, ralph_policy::gather::full_gate)
}

/// The client that runs this hook (`CLAUDE_PID`, set for every hook).
fn client_pid() -> Option<u32> {
    std::env::var("CLAUDE_PID")
        .ok()
        .and_then(|p| p.parse().ok())
}
