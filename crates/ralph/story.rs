//! `ralph run --story ID`: the headless loop on one story of the PRD, in the
//! checkout it is started in (a CI runner), on branch `ralph/<ID>`. The
//! loop is the ordinary `ralph run` over a one-story PRD
//! (`ci::story::one_story_prd`): its check is recorded and its files
//! pinned at start as in a session, and it ends when the check passes, at
//! the cap or a budget. The work is committed on the branch (PRD and notes
//! as the base has them) and `--result FILE` records the run for `ralph
//! merge`. docs/github-actions.md.

use ralph_core::args::RunArgv;
use ralph_core::ci::branch;
use ralph_core::ci::story::{
    CheckTail, EXIT_USAGE, Ended, STORY_PRD, StoryResult, Tokens, cost_usd, kept_out, may_run,
    model_in, one_story_prd, with_prd_file,
};
use ralph_core::paths::{LoopPaths, project_root_from_env};
use ralph_core::prd::Prd;
use ralph_core::run::events::Usage;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

/// The parts of a record known before the run.
struct Record {
    story: String,
    title: String,
    branch: String,
    base: String,
    result_file: Option<String>,
    started: Instant,
}

pub(crate) fn run(mut a: RunArgv) -> ExitCode {
    let root = project_root_from_env(None);
    let prd_file = a.args.prd_file.clone().unwrap_or_else(|| "prd.json".into());
    let record = match begin(&a, &root, &prd_file) {
        Ok(r) => r,
        Err(code) => return code,
    };
    // The loop runs on the one-story PRD; every other option goes on as typed.
    a.start = with_prd_file(&a.start, STORY_PRD);
    let model = model_in(&a.client).or_else(|| std::env::var("ANTHROPIC_MODEL").ok());
    let cfg = match crate::config(a) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let since = SystemTime::now();
    crate::runner::run(&cfg);
    let ran = Ran::read(&root, since);
    let commit = branch::commit(
        &root,
        &record.base,
        &kept_out(&prd_file),
        &format!("ralph: story {} {}", record.story, record.title),
    );
    let (ended, message) = match commit {
        Ok(_) => (ran.ended, ran.message.clone()),
        Err(why) => (
            Ended::Error,
            format!("{}; the work could not be committed: {why}", ran.message),
        ),
    };
    let mut result = record.result(ended, Some(&ran), message);
    result.cost_usd = cost_usd(model.as_deref(), result.tokens);
    result.check = check_tail(&root, &record.story);
    record.write(&result)
}

/// Before the loop: the story read from the base's PRD, the branch entered,
/// the one-story PRD written. `Err`: the exit (usage, nothing to do, an error).
fn begin(a: &RunArgv, root: &Path, prd_file: &str) -> Result<Record, ExitCode> {
    let story = a.value("--story").unwrap_or_default().to_string();
    if a.args.parallel.is_some() || !a.args.prompt.is_empty() || a.args.prompt_file.is_some() {
        return Err(usage(
            "--story runs one story of --prd-file: no prompt, --prompt-file or --parallel",
        ));
    }
    let text = std::fs::read_to_string(root.join(prd_file))
        .map_err(|e| usage(&format!("cannot read {prd_file}: {e}")))?;
    let prd = Prd::parse(&text)
        .and_then(|p| p.validate().map(|()| p))
        .map_err(|e| usage(&format!("{prd_file}: {e}")))?;
    let mut record = Record {
        title: prd
            .story(&story)
            .map(|s| s.title.clone())
            .unwrap_or_default(),
        branch: ralph_core::parallel::story_branch(&story),
        base: ralph_core::worktree::head(root).unwrap_or_default(),
        result_file: a.value("--result").map(str::to_string),
        started: Instant::now(),
        story,
    };
    match may_run(&prd, &record.story) {
        Err(why) => return Err(usage(&why)),
        Ok(true) => {
            let message = format!(
                "story {} passes on this base already: nothing to do",
                record.story
            );
            println!("ralph: {message}");
            return Err(record.finish(Ended::AlreadyPassing, None, message));
        }
        Ok(false) => can_start(root, &prd, &record).map_err(|why| usage(&why))?,
    }
    let entered = branch::exclude_ralph_files(root)
        .and_then(|()| branch::enter(root, &record.story))
        .map_err(|why| record.finish(Ended::Error, None, why))?;
    record.base = entered.base.clone();
    if entered.continued {
        println!(
            "ralph: continuing {} (the loop's branch merged in{})",
            entered.branch,
            if entered.conflicts.is_empty() {
                String::new()
            } else {
                format!(
                    "; conflicts left to resolve in {}",
                    entered.conflicts.join(", ")
                )
            }
        );
    }
    let note = (!entered.conflicts.is_empty()).then(|| {
        format!(
            "Your earlier work on this story conflicts with the loop's branch, merged into yours: resolve the conflict markers in {} (keep what both sides meant), then finish the story.",
            entered.conflicts.join(", ")
        )
    });
    let path = root.join(STORY_PRD);
    one_story_prd(&text, &record.story, note.as_deref())
        .and_then(|t| {
            let write = |p: &Path| {
                std::fs::create_dir_all(p.parent().unwrap_or(root))?;
                std::fs::write(p, t)
            };
            write(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))
        })
        .map_err(|why| record.finish(Ended::Error, None, why))?;
    Ok(record)
}

/// What a story's run needs before it takes its branch: a commit to start
/// from, and a check whose scripts `sh` can run (the start's own refusal,
/// asked before anything is changed here).
fn can_start(root: &Path, prd: &Prd, record: &Record) -> Result<(), String> {
    if record.base.is_empty() {
        return Err(format!(
            "ralph run --story works on the loop's branch, and {} has no commit yet: check the loop's branch out here (or commit the PRD: git add -A && git commit -m start), then run again",
            root.display()
        ));
    }
    let check: Vec<String> = prd
        .story(&record.story)
        .and_then(|s| s.verify.clone())
        .into_iter()
        .collect();
    ralph_core::start::commands::runnable_scripts(root, &check).map_err(|e| e.to_string())
}

/// What the run left in its folder and the log.
struct Ran {
    ended: Ended,
    iterations: u64,
    tokens: Tokens,
    message: String,
}

impl Ran {
    /// This run's `outcome.json` (the newest, written since `since`: an
    /// earlier run's in the same checkout is not this one's) and the
    /// activity log's last entry.
    fn read(root: &Path, since: SystemTime) -> Ran {
        let runs = root.join(crate::run_files::RUNS_DIR);
        let newest = std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|d| d.path())
            .filter(|p| {
                std::fs::metadata(p.join("outcome.json"))
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t >= since)
            })
            .max();
        let outcome: Value = newest
            .and_then(|d| std::fs::read_to_string(d.join("outcome.json")).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let last: Value = std::fs::read_to_string(root.join(ralph_core::paths::LOG_FILE))
            .ok()
            .and_then(|t| t.lines().last().and_then(|l| serde_json::from_str(l).ok()))
            .unwrap_or(Value::Null);
        let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
        let message = text(&outcome, "message");
        let ended = Ended::of_run(&text(&outcome, "outcome"), &text(&last, "reason"), &message);
        Ran {
            ended,
            iterations: outcome["iterations"].as_u64().unwrap_or(0),
            tokens: Usage::from_json(&serde_json::json!({
                "input_tokens": outcome["tokens"]["input"],
                "output_tokens": outcome["tokens"]["output"],
                "cache_read_input_tokens": outcome["tokens"]["cache_read"],
                "cache_creation_input_tokens": outcome["tokens"]["cache_creation"],
            }))
            .into(),
            message: if message.is_empty() {
                "the run left no outcome (it did not start)".into()
            } else {
                message
            },
        }
    }
}

/// The story check's last run in the loop's folder, if it is still there.
fn check_tail(root: &Path, story: &str) -> Option<CheckTail> {
    let log = ralph_core::verify::read_log(&LoopPaths::new(root).verify)?;
    let r = log.stories.get(story)?;
    Some(CheckTail {
        command: r.command.clone(),
        passed: r.passed(),
        output_tail: r.output_tail.clone(),
    })
}

impl Record {
    fn result(&self, ended: Ended, ran: Option<&Ran>, message: String) -> StoryResult {
        let root = project_root_from_env(None);
        StoryResult {
            story: self.story.clone(),
            title: self.title.clone(),
            outcome: ended,
            exit_code: ended.exit_code(),
            iterations: ran.map_or(0, |r| r.iterations),
            tokens: ran.map(|r| r.tokens).unwrap_or_default(),
            cost_usd: None,
            elapsed_secs: self.started.elapsed().as_secs(),
            check: None,
            branch: self.branch.clone(),
            commit: (ended != Ended::AlreadyPassing)
                .then(|| ralph_core::worktree::head(&root))
                .flatten(),
            base: self.base.clone(),
            message,
        }
    }

    fn finish(&self, ended: Ended, ran: Option<&Ran>, message: String) -> ExitCode {
        if ended == Ended::Error {
            eprintln!("ralph: {message}");
        }
        self.write(&self.result(ended, ran, message))
    }

    /// `--result FILE`, and the exit code of the outcome.
    fn write(&self, result: &StoryResult) -> ExitCode {
        if let Some(file) = &self.result_file {
            let text = serde_json::to_string_pretty(result).unwrap_or_default() + "\n";
            if let Err(e) = ralph_core::store::atomic_write(Path::new(file), text.as_bytes()) {
                eprintln!("ralph: cannot write {file}: {e}");
                return ExitCode::from(ralph_core::ci::story::EXIT_ERROR);
            }
        }
        ExitCode::from(result.exit_code)
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("ralph: {why}");
    ExitCode::from(EXIT_USAGE)
}
