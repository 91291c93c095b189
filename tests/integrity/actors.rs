//! The case's other players (issue 24): a worker subagent of the loop's
//! session, played as the client plays it, and a reviewer-like session of
//! the same project. Black box, like the main thread's cases: the real
//! binaries get what the client would send them (measured on 2.1.328:
//! docs/client-measurements.md), and the judge reads only what the user
//! could (`run::judge`, plus the tree snapshot below).
//! The CI story runner (`Actor::Runner`) plays without a session or hooks:
//! `ci.rs`.

use crate::cases::{Case, Mode, Tool};
use crate::run::{self, MAIN, Outcome, Started, Who, hook_json, is_block, stop};
use crate::sandbox::{SESSION, SETUP, STOP, Sandbox};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The reviewer-like session: another session of the project.
pub(crate) const REVIEWER_SESSION: &str = "9c4e1b7a-reviewer-session";

/// Agent ids as the client makes them (hex), one per dispatched story.
const AGENT_IDS: [&str; 2] = ["a7f3c9e1d2b4a6c80", "b8e4d0f2e3c5b7d91"];

/// The main thread's Stop once the workers ran (a plain turn: it dispatched).
const DISPATCHED: &str = "Dispatched the stories to workers; waiting for them.";

/// What a worker that was sent back says when it stops again (no claim).
const GIVES_UP: &str = "I could not finish the story.";

/// One `Agent` call the feed asks for.
struct Task {
    /// `story US-1` (`--parallel`: the Stop's `background_tasks` carry it).
    description: String,
    /// The worker's task: its transcript's first line.
    prompt: String,
}

/// One worker the client started for a call.
struct Worker {
    id: &'static str,
    /// Its hook `cwd`: its worktree (`--parallel`), else the project.
    tree: PathBuf,
    /// `<session>/subagents/agent-<id>.jsonl`.
    transcript: PathBuf,
    description: String,
}

/// The feed's `subagent_type "…"` and each call's description and prompt
/// (`description "story US-1", prompt "Work story US-1 …"`).
fn dispatched(feed: &str) -> (Option<String>, Vec<Task>) {
    let quoted = |from: &str, key: &str| -> Option<(String, usize)> {
        let at = from.find(key)? + key.len();
        let len = from[at..].find('"')?;
        Some((from[at..at + len].to_string(), at + len))
    };
    let kind = quoted(feed, "subagent_type \"").map(|(k, _)| k);
    let mut tasks = Vec::new();
    let mut rest = feed;
    while let Some((prompt, end)) = quoted(rest, "prompt \"") {
        let story = prompt
            .split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .to_string();
        tasks.push(Task {
            description: format!("story {story}"),
            prompt,
        });
        rest = &rest[end..];
    }
    (kind, tasks)
}

/// The client's part for each call: the worktree (`--parallel`:
/// `git worktree add` at `.claude/worktrees/agent-<id>` on branch
/// `worktree-agent-<id>`), the worker's `SubagentStart` (before its
/// transcript exists), then its transcript, whose first line is its task.
fn launch(sb: &Sandbox, tasks: &[Task], kind: &str, isolated: bool) -> Result<Vec<Worker>, String> {
    let workers: Vec<Worker> = tasks
        .iter()
        .zip(AGENT_IDS)
        .map(|(task, id)| Worker {
            id,
            tree: if isolated {
                sb.project.join(format!(".claude/worktrees/agent-{id}"))
            } else {
                sb.project.clone()
            },
            transcript: subagent_transcript(sb, id),
            description: task.description.clone(),
        })
        .collect();
    if isolated {
        let adds: Vec<String> = workers
            .iter()
            .map(|w| {
                format!(
                    "git worktree add -q -b worktree-agent-{0} .claude/worktrees/agent-{0}",
                    w.id
                )
            })
            .collect();
        let out = sb.run(sb.user_shell(&adds.join(" && ")), b"", "worktree", None)?;
        if out.code != Some(0) {
            return Err(format!("git worktree add failed: {}", out.stderr.trim()));
        }
    }
    for (w, task) in workers.iter().zip(tasks) {
        let start = json!({
            "session_id": SESSION,
            "transcript_path": run::transcript_of(sb, SESSION),
            "cwd": w.tree,
            "hook_event_name": "SubagentStart",
            "agent_id": w.id,
            "agent_type": kind,
        });
        let who = Who {
            agent: Some((w.id, kind)),
            ..MAIN
        };
        hook_json(sb, STOP, &who, &start, "subagent-start")?;
        let line = json!({"type": "user", "message": {"role": "user", "content": task.prompt}});
        let dir = w.transcript.parent().ok_or("transcript folder")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(&w.transcript, format!("{line}\n"))
            .map_err(|e| format!("{}: {e}", w.transcript.display()))?;
    }
    Ok(workers)
}

fn subagent_transcript(sb: &Sandbox, id: &str) -> PathBuf {
    sb.home.join(format!(
        ".claude/projects/-proj/{SESSION}/subagents/agent-{id}.jsonl"
    ))
}

/// A worker's `SubagentStop`.
fn subagent_stop(
    sb: &Sandbox,
    who: &Who,
    w: &Worker,
    said: &str,
    again: bool,
) -> Result<Option<Value>, String> {
    let body = json!({
        "session_id": SESSION,
        "transcript_path": run::transcript_of(sb, SESSION),
        "cwd": w.tree,
        "permission_mode": "bypassPermissions",
        "hook_event_name": "SubagentStop",
        "agent_id": w.id,
        "agent_type": who.agent.map(|(_, k)| k),
        "stop_hook_active": again,
        "agent_transcript_path": w.transcript,
        "last_assistant_message": said,
        "background_tasks": [],
    });
    hook_json(sb, STOP, who, &body, "subagent-stop")
}

/// The Stop's `background_tasks` for workers still running.
fn running(workers: &[&Worker], kind: &str) -> Value {
    workers
        .iter()
        .map(|w| {
            json!({"id": w.id, "type": "subagent", "status": "running",
                   "description": w.description, "agent_type": kind})
        })
        .collect()
}

/// A worker plays the case: the main thread's feed dispatches (the first
/// Stop's), the client starts a worker per call (`--fresh`: the one), the
/// case's calls come from the worker the case names (`story`, else the
/// first) with its `agent_id`, `agent_type` and `cwd`, then its
/// `SubagentStop` says the case's message, then the main thread's Stop
/// (the other workers still running) is judged (`judge::judge`). A
/// `--parallel` worker's calls must also leave everything outside its
/// worktree as it was (`snapshot`). Only the worker type the feed asks for
/// gets a worktree (its agent file asks for `isolation: worktree`); another
/// type the case plays runs in the project.
pub(crate) fn worker(
    sb: &Sandbox,
    case: &Case,
    started: &Started,
    notes: &mut Vec<String>,
) -> Result<Outcome, String> {
    let (asked, mut tasks) = dispatched(&started.feed);
    let parallel = case.mode == Mode::Parallel;
    if !parallel {
        tasks.truncate(1);
    }
    let kind = case
        .agent_type
        .clone()
        .or_else(|| asked.clone())
        .ok_or_else(|| format!("the feed asks for no worker: {}", started.feed))?;
    if tasks.is_empty() {
        return Err(format!("the feed dispatches nothing: {}", started.feed));
    }
    let isolated = parallel && asked.as_deref() == Some(kind.as_str());
    let workers = launch(sb, &tasks, &kind, isolated)?;
    let me = match &case.story {
        Some(s) => workers
            .iter()
            .position(|w| w.description == format!("story {s}"))
            .ok_or_else(|| format!("story {s} was not dispatched: {}", started.feed))?,
        None => 0,
    };
    let w = &workers[me];
    let other = workers.iter().find(|o| o.id != w.id).unwrap_or(w);
    let places = [
        ("{tree}", w.tree.to_string_lossy().into_owned()),
        ("{other}", other.tree.to_string_lossy().into_owned()),
        ("{transcript}", w.transcript.to_string_lossy().into_owned()),
        ("{agent}", w.id.to_string()),
        ("{other_agent}", other.id.to_string()),
    ];
    let env: Vec<(String, String)> = case.env.clone().into_iter().collect();
    let who = Who {
        session: SESSION,
        agent: Some((w.id, &kind)),
        env: &env,
        places: &places,
    };
    let before = parallel.then(|| snapshot(sb, &own(sb, w)));
    for (n, step) in case.calls().iter().enumerate() {
        if let Some(denied) = run::play(sb, &who, case, step, n, &w.tree, notes)? {
            return Ok(denied);
        }
    }
    if let Some(before) = before
        && let Some(changed) = changed(&before, &snapshot(sb, &own(sb, w)), &sb.dir)
    {
        return Ok(Outcome::Tampered(format!(
            "a write outside its worktree landed: {changed}"
        )));
    }
    let out = subagent_stop(sb, &who, w, &case.final_message(), false)?;
    let mut still: Vec<&Worker> = workers.iter().filter(|o| o.id != w.id).collect();
    if is_block(out.as_ref()) {
        notes.push(format!(
            "its SubagentStop sent it back: {}",
            first_line(run::reason_of(out.as_ref()))
        ));
        if parallel {
            // A sent-back worker goes on working: still running at the Stop.
            still.push(w);
        } else {
            // A foreground worker ends before the main thread's Stop.
            subagent_stop(sb, &who, w, GIVES_UP, true)?;
        }
    }
    let main = stop(sb, DISPATCHED, true, running(&still, &kind))?;
    crate::judge::judge(sb, case, started.iteration, main.as_ref())
}

/// A reviewer-like session plays the case: its tool calls go through the
/// guard, its prompts and session events through `ralph-setup`, its Stop
/// says the case's message, all with its own `session_id` and the case's
/// `env` (a forged marker) but no pass of ralph's; then the loop's own
/// Stop is judged as after a main thread's case.
pub(crate) fn reviewer(
    sb: &Sandbox,
    case: &Case,
    before: u64,
    notes: &mut Vec<String>,
) -> Result<Outcome, String> {
    let env: Vec<(String, String)> = case.env.clone().into_iter().collect();
    let who = Who {
        session: REVIEWER_SESSION,
        agent: None,
        env: &env,
        places: &[],
    };
    let base = json!({
        "session_id": REVIEWER_SESSION,
        "transcript_path": run::transcript_of(sb, REVIEWER_SESSION),
        "cwd": sb.project,
        "permission_mode": "bypassPermissions",
    });
    for (n, step) in case.calls().iter().enumerate() {
        let (verb, mut body) = match step.tool {
            Tool::Prompt => {
                let prompt = sb.expand(step.input.as_str().unwrap_or_default());
                let extra = json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt});
                ("hook-prompt", extra)
            }
            Tool::Event => {
                let mut v = serde_json::to_value(&step.input).map_err(|e| e.to_string())?;
                run::expand(sb, &mut v, &[]);
                ("hook-event", v)
            }
            _ => {
                if let Some(denied) = run::play(sb, &who, case, step, n, &sb.project, notes)? {
                    return Ok(denied);
                }
                continue;
            }
        };
        for (k, v) in base.as_object().into_iter().flatten() {
            body.as_object_mut()
                .ok_or("an event's input is a mapping")?
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        // The Stop hook's events (a subagent's start and stop) go to it.
        let event = body["hook_event_name"].as_str().unwrap_or_default();
        let (program, verb) = if event.starts_with("Subagent") {
            (STOP, "subagent")
        } else {
            (SETUP, verb)
        };
        if let Some(said) = hook_json(sb, program, &who, &body, verb)? {
            notes.push(format!("{verb}: {}", first_line(&said.to_string())));
        }
    }
    let mut body = base.clone();
    body["hook_event_name"] = json!("Stop");
    body["stop_hook_active"] = json!(false);
    body["last_assistant_message"] = json!(case.final_message());
    body["background_tasks"] = json!([]);
    if let Some(said) = hook_json(sb, STOP, &who, &body, "stop")? {
        notes.push(format!("its Stop: {}", first_line(&said.to_string())));
    }
    let out = stop(
        sb,
        "Made some progress; continuing with the task.",
        true,
        json!([]),
    )?;
    crate::judge::judge(sb, case, before, out.as_ref())
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(160)
        .collect()
}

/// Every file a caller must leave alone, by content: the project (the main
/// tree, the workers' worktrees, the repository's shared files), the
/// client's transcripts, ralph's binaries and the plugin, minus `skip`.
/// Always left out: git's object store and reflogs (content-addressed and
/// append-only: a worker's own commit writes there), and the main index's
/// bytes (a read like `git status` refreshes its stat data): its staged
/// content is compared instead (`git ls-files -s`).
pub(crate) type Snapshot = BTreeMap<PathBuf, u64>;

pub(crate) fn snapshot(sb: &Sandbox, skip: &[PathBuf]) -> Snapshot {
    let git = sb.project.join(".git");
    let mut skip = skip.to_vec();
    skip.extend(["objects", "logs", "index"].map(|p| git.join(p)));
    let mut out = Snapshot::new();
    for root in [
        sb.project.clone(),
        sb.home.join(".claude/projects"),
        sb.dir.join("bin"),
        sb.dir.join("plugin"),
    ] {
        walk(&root, &skip, &mut out);
    }
    // This harness's own git never runs a planted fsmonitor either.
    let staged = sb
        .run(
            sb.user_shell("git -c core.fsmonitor=false ls-files -s"),
            b"",
            "ls-files",
            None,
        )
        .map(|o| o.stdout)
        .unwrap_or_default();
    out.insert(git.join("index"), digest(staged.as_bytes()));
    out
}

/// What a `--parallel` worker may change besides: its own worktree, git's
/// records of its own work (its branch, its worktree's admin folder), the
/// repository's config (a `git config` there is the user's repository's,
/// judged as on the main thread: allowed, never run by ralph, `absent` says
/// whether it ran), the shared notes (`progress.txt`, the one main-tree file
/// a worker appends to) and its own transcript (the client writes it).
fn own(sb: &Sandbox, w: &Worker) -> Vec<PathBuf> {
    let git = sb.project.join(".git");
    let tree = (w.tree != sb.project).then(|| w.tree.clone());
    tree.into_iter()
        .chain([
            git.join(format!("worktrees/agent-{}", w.id)),
            git.join(format!("refs/heads/worktree-agent-{}", w.id)),
            git.join("config"),
            sb.project.join("progress.txt"),
            w.transcript.clone(),
        ])
        .collect()
}

fn digest(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn walk(dir: &Path, skip: &[PathBuf], out: &mut Snapshot) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if skip.contains(&path) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, skip, out);
            continue;
        }
        let bytes = if kind.is_symlink() {
            let to = std::fs::read_link(&path).unwrap_or_default();
            format!("link {}", to.display()).into_bytes()
        } else {
            std::fs::read(&path).unwrap_or_default()
        };
        out.insert(path, digest(&bytes));
    }
}

/// The first file added, removed or changed, relative to the scratch dir.
/// A new ref (`git checkout -b` in a worktree makes a branch every worktree
/// shares) is not a change: one that existed (the main branch, another
/// worker's) moved or removed is.
pub(crate) fn changed(before: &Snapshot, after: &Snapshot, base: &Path) -> Option<String> {
    let rel = |p: &PathBuf| p.strip_prefix(base).unwrap_or(p).display().to_string();
    let new_ref = |p: &PathBuf| p.to_string_lossy().contains("/.git/refs/");
    before
        .iter()
        .find(|(p, h)| after.get(*p) != Some(h))
        .map(|(p, _)| rel(p))
        .or_else(|| {
            after
                .keys()
                .find(|p| !before.contains_key(*p) && !new_ref(p))
                .map(rel)
        })
}
