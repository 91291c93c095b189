//! ralph-setup: start, inspect and cancel Ralph loops.
//!
//! `hook-prompt` is the UserPromptSubmit hook: it sees the raw text of
//! `/ralph:ralph-loop ...` exactly as typed (no shell in between) and the
//! session id, so the prompt reaches the state file byte for byte and the loop
//! belongs to the session that started it. The slash commands' `!` lines only
//! call `show`, `cancel` and `status`, which take no user text.

use clap::{Parser, Subcommand};
use ralph_core::activity::{self, Action, Entry};
use ralph_core::args::{self, StartArgs};
use ralph_core::clock;
use ralph_core::control::{ReadState, cancel, help_text, read_state, status};
use ralph_core::fmt::relative;
use ralph_core::fmt::short_session as short;
use ralph_core::hook_input::HookInput;
use ralph_core::hook_output::{HookOutput, fail_open};
use ralph_core::paths::{LoopPaths, STATE_FILE, project_root_from_env};
use ralph_core::queue::Typed;
use ralph_core::setup::{self, Existing, StartError};
use ralph_core::store::{self, LOCK_WAIT, LoopLock};
use std::path::Path;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ralph-setup",
    version,
    about = "Start, inspect and cancel Ralph loops"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a loop: ralph-setup start PROMPT... [--max-iterations N] [--completion-promise TEXT] [--prd-file PATH] [--prompt-file PATH]
    Start {
        /// The session that owns the loop (default: $CLAUDE_CODE_SESSION_ID; empty = the first session to stop claims it)
        #[arg(long)]
        session: Option<String>,
        /// Prompt words and loop options, as for /ralph:ralph-loop
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// UserPromptSubmit hook: start a loop from `/ralph:ralph-loop ...` typed by the user
    HookPrompt,
    /// Print what the current loop will do (used by the /ralph:ralph-loop command)
    Show,
    /// Cancel the loop of this project
    Cancel,
    /// Show the loop's state, PRD progress and last decision
    Status {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Start { session, args } => {
            let session = session
                .or_else(|| std::env::var("CLAUDE_CODE_SESSION_ID").ok())
                .unwrap_or_default();
            let paths = LoopPaths::new(project_root_from_env(None));
            match args::parse_argv(&args).map_err(StartError::from) {
                Ok(a) if a.help => {
                    println!("{}", help_text());
                    ExitCode::SUCCESS
                }
                Ok(a) => match start(&paths, &a, &session) {
                    Ok(started) => {
                        print!("{}{}", started.summary, started.task);
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(&e),
                },
                Err(e) => fail(&e),
            }
        }
        Command::HookPrompt => {
            // A hook before every prompt: a bug here must never stop the
            // user's prompt. Fail open (exit 0, the prompt goes on) and say so.
            fail_open(
                "ralph: the prompt hook hit an internal error (a bug: please report it); your prompt went on unchanged.",
                hook_prompt,
            )
            .print();
            ExitCode::SUCCESS
        }
        Command::Show => show(&LoopPaths::new(project_root_from_env(None))),
        Command::Cancel => match cancel(&LoopPaths::new(project_root_from_env(None))) {
            Ok(msg) => {
                println!("{msg}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        Command::Status { json } => {
            let paths = LoopPaths::new(project_root_from_env(None));
            let status = status(&paths);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&status).unwrap_or_default()
                );
            } else {
                print!("{}", status.to_text());
            }
            ExitCode::SUCCESS
        }
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("ralph: {e}");
    println!("ralph: {e}");
    ExitCode::from(2)
}

/// UserPromptSubmit: every prompt of every session passes here, so anything
/// that is not the loop command leaves at once, printing nothing.
fn hook_prompt() -> HookOutput {
    // Claude Code writes the input and closes the pipe at once; never wait
    // longer than this on a pipe that stays silent (the prompt then goes on).
    let Ok(input) = HookInput::read_stdin_with_deadline(10) else {
        return HookOutput::Nothing;
    };
    let Some(prompt) = input.prompt.as_deref() else {
        return HookOutput::Nothing;
    };
    let paths = LoopPaths::new(project_root_from_env(input.cwd.as_deref()));
    // Status and cancel are answered here, exactly and at once: the block
    // shows the text to the user and spends no model turn. (Their command
    // files run the same binary, should this hook not be active.)
    let answer = match ralph_core::queue::classify(prompt) {
        Typed::Status => Some(status(&paths).to_text()),
        Typed::Cancel => Some(cancel(&paths).unwrap_or_else(|e| format!("ralph: {e}"))),
        Typed::Help => Some(help_text()),
        Typed::Other => None,
    };
    if let Some(text) = answer {
        return HookOutput::block(text.trim_end());
    }
    let Some(raw) = args::loop_command_args(prompt) else {
        return HookOutput::Nothing;
    };
    match args::parse_command_line(raw).map_err(StartError::from) {
        Ok(a) if a.help => HookOutput::block(help_text()),
        Ok(a) => match start(&paths, &a, input.session()) {
            Ok(started) => HookOutput::allow(started.summary.trim_end()),
            Err(e) => HookOutput::block(format!("ralph: {e}")),
        },
        Err(e) => HookOutput::block(format!("ralph: {e}")),
    }
}

/// What a start reports: to the user (header, notes, settings) and the task.
struct Started {
    summary: String,
    task: String,
}

/// Start a loop.
fn start(paths: &LoopPaths, a: &StartArgs, session: &str) -> Result<Started, StartError> {
    let prompt_file_text = match &a.prompt_file {
        Some(file) => Some(
            paths
                .read_project_file(file)
                .map_err(|e| StartError::PromptFile {
                    path: file.clone(),
                    why: e.to_string(),
                })?,
        ),
        None => None,
    };
    let prompt = setup::resolve_prompt(a, prompt_file_text.as_deref())?;
    let prd = match &a.prd_file {
        Some(file) => {
            let text = paths.read_project_file(file).map_err(|e| StartError::Prd {
                path: file.clone(),
                why: e.to_string(),
            })?;
            Some(setup::check_prd(file, &text)?)
        }
        None => None,
    };
    let io_err = |e: store::StoreError| StartError::PromptFile {
        path: STATE_FILE.into(),
        why: e.to_string(),
    };
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT).map_err(io_err)?;
    let existing = match read_state(paths) {
        ReadState::None => Existing::None,
        ReadState::Loop(state, age) => Existing::Loop {
            state,
            age_secs: age,
        },
        ReadState::Corrupt(_) => {
            let kept = store::move_aside(&paths.state, clock::unix_now()).map_err(io_err)?;
            Existing::Corrupt(relative(&paths.root, &kept))
        }
    };
    let prior = setup::check_existing(&existing, session, a.replace)?;
    let now = clock::now_rfc3339();
    // Without --verify, the policy's `[gates] full` command verifies completion.
    let mut a = a.clone();
    let mut gate_note = None;
    if a.verify.is_none()
        && let Some((file, cmd)) = policy_full_gate(&paths.root)
    {
        gate_note = Some(format!(
            "Verification command taken from the [gates] full row of {file}."
        ));
        a.verify = Some(cmd);
    }
    let mut state = setup::new_state(&a, prompt, prd.as_ref(), session, &now);
    if state.max_stalls > 0 || state.verify.is_some() {
        state.last_fingerprint = ralph_core::worktree::fingerprint(&paths.root);
    }
    store::atomic_write(&paths.state, state.render().as_bytes()).map_err(io_err)?;
    store::remove_if_present(&paths.verify).map_err(io_err)?;
    match setup::first_injection(prd.as_ref()) {
        Some(inj) => {
            store::atomic_write(&paths.last_injected, inj.render().as_bytes()).map_err(io_err)?
        }
        None => {
            store::remove_if_present(&paths.last_injected).map_err(io_err)?;
        }
    }
    let mode = if prd.is_some() { "prd" } else { "prompt" };
    let _ = activity::append(&paths.log, &Entry::now(session, 1, Action::Start, mode));

    let mut report = format!(
        "🔄 Ralph loop started{} in {}.\n",
        if session.is_empty() {
            String::new()
        } else {
            format!(" for session {}", short(session))
        },
        paths.root.display()
    );
    if let Some(note) = prior.note() {
        report.push_str(&format!("{note}\n"));
    }
    if let Some(note) = gate_note {
        report.push_str(&format!("{note}\n"));
    }
    for w in setup::warnings(&state) {
        report.push_str(&format!("{w}\n"));
    }
    if let Some(b) = paths.read_blocker() {
        report.push_str(&format!(
            "⚠️ .ralph-blocker.md is present (story {}): the loop halts at its first stop unless that story passes or you delete the file.\n",
            if b.story_id.is_empty() { "?" } else { &b.story_id }
        ));
    }
    if state.prompt != ralph_core::state::DEFAULT_PRD_PROMPT {
        report.push_str(&format!(
            "Prompt: {}\n",
            setup::prompt_preview(&state.prompt)
        ));
    }
    report.push_str(&setup::settings(&state, prd.as_ref()));
    Ok(Started {
        summary: report,
        task: setup::task(&state, prd.as_ref()),
    })
}

/// For the /ralph:ralph-loop command body: the running loop, as the model
/// should start on it.
fn show(paths: &LoopPaths) -> ExitCode {
    match read_state(paths) {
        ReadState::Loop(state, _) => {
            let prd = state
                .prd_file
                .as_deref()
                .and_then(|f| paths.read_prd(f).ok());
            println!(
                "A Ralph loop is active (iteration {}).",
                state.iteration_label(state.iteration)
            );
            print!("{}", setup::describe(&state, prd.as_ref()));
            ExitCode::SUCCESS
        }
        ReadState::None => {
            println!(
                "ralph: no loop is active in {}: the start did not happen (see the message above; is the ralph plugin's UserPromptSubmit hook enabled?). Tell the user and stop.",
                paths.root.display()
            );
            ExitCode::SUCCESS
        }
        ReadState::Corrupt(e) => {
            println!("ralph: {STATE_FILE} is corrupt: {e}. Tell the user and stop.");
            ExitCode::SUCCESS
        }
    }
}

/// The `full` gate of the project's command policy, if any: (file, command).
fn policy_full_gate(root: &Path) -> Option<(&'static str, String)> {
    [
        ralph_core::paths::POLICY_FILE,
        ralph_core::paths::POLICY_FILE_ALT,
    ]
    .into_iter()
    .find_map(|file| Some((file, store::read_optional(&root.join(file)).ok()??)))
    .and_then(|(file, text)| {
        let policy = ralph_policy::Policy::parse(&text).ok()?;
        Some((file, policy.gate(ralph_policy::Tier::Full)?.to_string()))
    })
}
