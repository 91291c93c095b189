//! Start and show: read what they need, take the loop lock to start, apply
//! the rules, write. Does I/O.

use super::rules::{self, Existing, Mode};
use super::text::{self, StartReport};
use super::{FullGate, StartError, Started};
use crate::activity::{self, Action, Entry};
use crate::args::StartArgs;
use crate::breaker::TurnEffect;
use crate::clock;
use crate::fmt;
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::pins;
use crate::prd::Prd;
use crate::prd::PrdReadError;
use crate::sandbox::Seen;
use crate::state::LoopState;
use crate::state_file::StateFile;
use crate::stop::gather::wants_fingerprint;
use crate::store::FileError;
use crate::store::{self, StoreError};
use crate::transcript::{self, Awaited};
use crate::turn_tools;
use crate::worktree;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Who starts a loop, and what they know besides its arguments.
#[derive(Debug, Default)]
pub struct Starter<'a> {
    /// The session that owns it (empty: the first session to stop claims it).
    pub session: &'a str,
    /// Its transcript, where the session's model is read (a cost budget).
    pub transcript: Option<&'a Path>,
    /// The client `ralph run` drives: the reviewers' too (else
    /// `RALPH_CLAUDE`, the session's client, `claude` on `PATH`).
    pub claude: Option<&'a str>,
    /// Whether the agent's commands will run in the client's sandbox.
    pub sandbox: crate::sandbox::Seen,
}

/// The command policy's `[gates] full` row of a project, read by the
/// binaries (ralph-core reads no policy): `ralph_policy::gather::full_gate`.
pub type FullGateOf = fn(&Path) -> Option<FullGate>;

/// Start a loop for `starter.session` ("" from a terminal: the first
/// session to stop claims it). Without `--verify`, the command policy's
/// `[gates] full` row (`full_gate`) is its check; with `--max-cost`, the
/// session's model (see [`session_model`]) prices it.
pub fn start(
    paths: &LoopPaths,
    args: &StartArgs,
    starter: &Starter,
    full_gate: FullGateOf,
) -> Result<Started, StartError> {
    let session = starter.session;
    let gate = args
        .verify
        .is_none()
        .then(|| full_gate(&paths.root))
        .flatten();
    let model = args
        .max_cost
        .and_then(|_| session_model(starter.transcript, &paths.root));
    let cost_model = rules::cost_model(args, model.as_deref())?;
    sandbox_as_asked(args, &starter.sandbox)?;
    let (prompt, prd, prd_globs) = read_start_files(paths, args)?;
    if args.parallel.is_some() {
        parallel_repository(&paths.root)?;
    }
    // What the checks depend on, found before anything is written: a glob
    // that matches nothing is a start error.
    let pin_globs = rules::pin_globs(args, &prd_globs);
    let checks = rules::checks_at_start(args, prd.as_ref(), gate.as_ref());
    runnable_scripts(&paths.root, &checks)?;
    let wanted = wanted_pins(paths, args, &checks, &pin_globs)?;
    let lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let prior = rules::check_existing(&existing(paths)?, session, args.replace)?;
    // Worktrees a crashed --parallel loop left behind go before a new loop starts.
    crate::parallel::hooks::remove_all(paths, session, 0);
    let gate = rules::gate_used(args, gate.as_ref());
    let now = clock::now_rfc3339();
    let mut state = rules::new_state(args, prompt, prd.as_ref(), gate, session, &now);
    state.budgets = rules::budgets(args, cost_model);
    state.sandbox = starter.sandbox.flag();
    state.notify = crate::notify::resolve_at_start(args.notify.as_deref(), &paths.root);
    let pinned = pins::disk::record(paths, &wanted, &checks)?;
    state.pins = pinned.by_path();
    if state.review.is_on() {
        state.review.base = worktree::head(&paths.root);
    }
    // The first Stop compares the tree with this one.
    if wants_fingerprint(&state, prd.as_ref(), TurnEffect::Unknown, true) {
        state.last_fingerprint = worktree::fingerprint(&paths.root);
    }
    let suite = ask_suite(paths, &mut state, prd.as_ref());
    // Git's own files and the client's settings, as they are now.
    state.watched = crate::git_watch::record(paths);
    write_new_loop(paths, &state, prd.as_ref())?;
    if let Some(suite) = &suite {
        crate::suite::write(&paths.suite, suite, 1)?;
    }
    // The reviewers' instructions, their `claude`, the ignored paths: fixed now.
    crate::review::inputs::record(paths, &state.review, starter.claude)?;
    let blocker = crate::blocker::read(&paths.blocker);
    let report = StartReport {
        // The configuration this loop read, against the last loop's record.
        config: &crate::config_seen::at_start(paths, &now),
        root: &paths.root,
        session,
        state: &state,
        prd: prd.as_ref(),
        prior: &prior,
        gate,
        blocker: blocker.as_ref(),
    };
    let mut summary = report.summary();
    summary.push_str(&pins::scripts::held(&pinned.scripts));
    summary.push_str(&other_stop_checks(&paths.root, starter.transcript));
    if let (true, Some(prd_file)) = (state.parallel > 0, &state.prd_file) {
        summary.push_str(&parallel_note(&paths.root, prd_file));
    }
    drop(lock);
    Ok(Started {
        summary,
        task: text::task(&state, prd.as_ref(), &paths.root),
    })
}

/// `--sandbox=require`: the session's commands run in the client's sandbox.
fn sandbox_as_asked(args: &StartArgs, seen: &Seen) -> Result<(), StartError> {
    if args.sandbox != crate::args::SandboxAsk::Required {
        return Ok(());
    }
    match seen {
        Seen::On(_) => Ok(()),
        Seen::Off(why) => Err(StartError::SandboxRequired(why.clone())),
        Seen::Unknown => Err(StartError::SandboxRequired(
            "a loop started from a terminal does not know the session that will claim it (start it with /ralph-loop in the session, or with ralph run)".into(),
        )),
    }
}

/// The suite as it is now: a baseline for each command that measures the
/// loop, asked for on this very tree and taken in the background by the
/// process started for it; the state then holds the suite's generation.
fn ask_suite(
    paths: &LoopPaths,
    state: &mut LoopState,
    prd: Option<&Prd>,
) -> Option<crate::suite::Suite> {
    let asks = baseline_asks(state, prd);
    let empty = crate::suite::Suite::default();
    let asked = crate::suite::baseline::ask(paths, &empty, &asks, state.verify_timeout)?;
    state.records = state.records.with(crate::records::LoopRecord::Suite, 1);
    Some(crate::suite::baseline::start_taker(paths, asked))
}

/// The commands a new loop measures by, each to be taken as it is now:
/// `--score`, the loop's check, and the checks of the stories that can run
/// first (a story fed later has its own taken then).
fn baseline_asks(state: &LoopState, prd: Option<&Prd>) -> Vec<crate::suite::baseline::Ask> {
    let plain = state.score.iter().chain(&state.verify).map(|c| (c, None));
    let stories = prd.into_iter().flat_map(Prd::runnable).filter_map(|s| {
        let command = state.story_checks.get(&s.id)?;
        Some((command, Some(s.id.clone())))
    });
    plain
        .chain(stories)
        .map(|(command, story)| crate::suite::baseline::Ask {
            command: command.clone(),
            story,
        })
        .collect()
}

/// `--parallel` works in git worktrees: the project must be a repository
/// with a commit, at the top of its work tree (the client makes a worker's
/// worktree of the whole repository and starts the worker at its top:
/// measured, 2.1.328).
fn parallel_repository(root: &Path) -> Result<(), StartError> {
    if worktree::head(root).is_none() {
        return Err(StartError::ParallelWithoutGit(root.display().to_string()));
    }
    match crate::git::git_root(root) {
        Some(top) if top != root => Err(StartError::ParallelBelowTop {
            below: root
                .strip_prefix(&top)
                .unwrap_or(root)
                .display()
                .to_string(),
            top: top.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// The shell scripts `checks` run can run: none has Windows line endings
/// (`pins::sh_cannot_run`). Also asked by `ralph run --story` before it
/// takes its branch.
pub fn runnable_scripts(root: &Path, checks: &[String]) -> Result<(), StartError> {
    match pins::disk::crlf_script(root, checks) {
        Some((file, check)) => Err(StartError::CrlfScript { file, check }),
        None => Ok(()),
    }
}

/// What a new loop pins: the files its checks run and the user's globs
/// (`pins::disk::collect`), then those its `--review-cmd` program runs.
fn wanted_pins(
    paths: &LoopPaths,
    args: &StartArgs,
    checks: &[String],
    globs: &[(&'static str, String)],
) -> Result<Vec<(String, String)>, StartError> {
    let mut wanted = pins::disk::collect(&paths.root, checks, globs)?;
    if let Some(program) = rules::review_config(args).command {
        pins::disk::add_review_program(&paths.root, &mut wanted, &program);
    }
    Ok(wanted)
}

/// What a start reads of the project before the lock: the prompt (the
/// prompt file's, else the arguments'), the PRD checked, and the globs the
/// PRD names for its checks' pins.
fn read_start_files(
    paths: &LoopPaths,
    args: &StartArgs,
) -> Result<(String, Option<Prd>, Vec<String>), StartError> {
    let prompt_file_text = match &args.prompt_file {
        Some(file) => Some(crate::store::read_named(&paths.root, file).map_err(|why| {
            StartError::PromptFile {
                path: file.clone(),
                why,
            }
        })?),
        None => None,
    };
    let prompt = rules::resolve_prompt(args, prompt_file_text.as_deref())?;
    let mut prd_globs = Vec::new();
    let prd = match &args.prd_file {
        Some(file) => {
            let text = crate::store::read_named(&paths.root, file).map_err(|e| match e {
                FileError::Missing(_) => StartError::PrdMissing(file.clone()),
                e => StartError::Prd {
                    path: file.clone(),
                    why: PrdReadError::File(e),
                },
            })?;
            prd_globs = pins::prd_globs(&text);
            Some(rules::check_prd(file, &text)?)
        }
        None => None,
    };
    Ok((prompt, prd, prd_globs))
}

/// `--parallel`: the workers' worktrees start from the last commit, so
/// what is not committed is not in them; said at start, naming a few.
fn parallel_note(root: &Path, prd_file: &str) -> String {
    use crate::parallel::{NOTES_FILE, branches};
    let dirty = branches::uncommitted(
        root,
        &[prd_file, NOTES_FILE, ".claude/", ".ralph-blocker.md"],
    );
    if dirty.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
    let more = if dirty.len() > shown.len() {
        format!(" and {} more", dirty.len() - shown.len())
    } else {
        String::new()
    };
    format!(
        "⚠️ Not committed: {}{more}. Each worker's worktree starts from the last commit, so the workers do not see these changes: commit them (then the workers build on them).\n",
        shown.join(", ")
    )
}

/// The model a session uses, as far as can be told before the loop runs:
/// the latest reply in its transcript, else `ANTHROPIC_MODEL`, else the
/// `model` setting of the project (`.claude/settings.local.json`,
/// `.claude/settings.json`) or the user (`~/.claude/settings.json`).
/// Hooks are not told the model (measured, Claude Code 2.1.328).
pub(crate) fn session_model(transcript: Option<&Path>, root: &Path) -> Option<String> {
    // A prompt's hook knows of no turn due: the transcript as it is.
    let written = transcript::written(transcript, Awaited::Nothing, Duration::ZERO);
    if let Some(m) = written.last_model(1 << 20) {
        return Some(m);
    }
    if let Some(m) = std::env::var("ANTHROPIC_MODEL")
        .ok()
        .filter(|m| !m.is_empty())
    {
        return Some(m);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let user = home.map(|h| h.join(".claude/settings.json"));
    let project = [".claude/settings.local.json", ".claude/settings.json"].map(|f| root.join(f));
    project.into_iter().chain(user).find_map(|file| {
        let text = store::read_optional(&file).ok()??;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(v.get("model")?.as_str()?.to_string()).filter(|m| !m.is_empty())
    })
}

/// The other Stop checks of the session, said once at the start: the
/// official Ralph plugin enabled too, and the client's own `/goal` when
/// active (read from the transcript, at most its last 16 MiB).
fn other_stop_checks(root: &Path, transcript: Option<&Path>) -> String {
    let written = transcript::written(transcript, Awaited::Nothing, Duration::ZERO);
    let goal = written.active_goal(16 << 20);
    super::coexist::note(root) + &super::coexist::goal_line(goal.as_deref())
}

/// What is in the state file, a corrupt one moved aside.
fn existing(paths: &LoopPaths) -> Result<Existing, StoreError> {
    Ok(match crate::state_file::read(paths) {
        StateFile::Missing => Existing::None,
        StateFile::Loop { state, .. } => Existing::Loop {
            state,
            age_secs: crate::state_file::age_secs(paths),
        },
        StateFile::Unreadable(_) | StateFile::Corrupt { .. } => {
            let kept = crate::state_file::move_aside(paths, clock::unix_now())?;
            Existing::Corrupt(fmt::relative(&paths.root, &kept))
        }
    })
}

/// The new loop's files: its state, no old check results, the first
/// story's counter, a `start` line in the log.
fn write_new_loop(
    paths: &LoopPaths,
    state: &LoopState,
    prd: Option<&Prd>,
) -> Result<(), StoreError> {
    // The first story's counter is the state's (`LoopState::injected`).
    let state = &LoopState {
        injected: rules::first_injection(prd, state.parallel),
        ..state.clone()
    };
    // A mirror that cannot be written is reported at the first Stop.
    let _ = crate::state_file::write(paths, &state.render())?;
    store::remove_if_present(&paths.verify)?;
    store::remove_if_present(&paths.review)?;
    crate::seal::remove(&paths.verify)?;
    crate::seal::remove(&paths.review)?;
    // A new loop, a new measure and a new suite.
    store::remove_if_present(&paths.scores)?;
    crate::seal::remove(&paths.scores)?;
    store::remove_if_present(&paths.suite)?;
    crate::seal::remove(&paths.suite)?;
    store::remove_if_present(&paths.handover)?;
    // Recording starts with the loop: from now on the guard notes each turn's tools.
    turn_tools::start(&paths.turn_tools)?;
    // A loop from before kept its counter in a file of its own.
    store::remove_if_present(&paths.last_injected)?;
    crate::seal::remove(&paths.last_injected)?;
    let mode = Mode::of(state).as_str();
    // --parallel: the stories the start hands out, as a dispatch names them.
    let first = prd
        .filter(|_| state.parallel > 0)
        .map(|prd| crate::parallel::batch_names(&crate::parallel::pick(prd, &[], state.parallel)));
    let _ = activity::append(
        &paths.log,
        &Entry::now(&state.session_id, 1, Action::Start, mode).with_story(first),
    );
    Ok(())
}

/// For the /ralph-loop command body: the running loop, as the model
/// should start on it (or why there is none).
pub fn show(paths: &LoopPaths) -> String {
    match crate::state_file::read(paths) {
        StateFile::Loop { state, .. } => {
            let prd = state
                .prd_file
                .as_deref()
                .and_then(|f| crate::prd::read(&paths.root, f).ok());
            text::show(&state, prd.as_ref(), &paths.root)
        }
        StateFile::Missing => text::show_none(&paths.root),
        StateFile::Unreadable(e) => text::show_corrupt(&e),
        StateFile::Corrupt { error, .. } => text::show_corrupt(&error),
    }
}
