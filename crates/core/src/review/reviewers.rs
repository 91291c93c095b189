//! Running reviewers: I/O. The Stop hook calls this with the loop lock
//! released (a cancel never waits for a review); the reviewers run in
//! parallel, each bounded by the loop's review timeout, its whole process
//! group killed past it.

use super::change::{self, Change};
use super::{Request, ReviewResult, ReviewVerdict, inputs, prompt, system_line};
use crate::bounded::wait_bounded;
use crate::clock;
use crate::passes::{PASS_ENV, Pass, Purpose};
use crate::paths::LoopPaths;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The flags that keep a reviewer's `claude -p` from loading any of the
/// project's (or the user's) files: `--setting-sources ""` drops every
/// settings file with its hooks, enabled plugins, CLAUDE.md files, rules,
/// skills and agents; `--strict-mcp-config` with an empty `--mcp-config`
/// drops every MCP server.
pub(crate) const ISOLATED: &[&str] = &[
    "--setting-sources",
    "",
    "--strict-mcp-config",
    "--mcp-config",
    r#"{"mcpServers":{}}"#,
];
/// Longest answer read from a reviewer.
const OUTPUT_LIMIT: u64 = 4 << 20;
/// What the reviewers of one Stop are given, besides their own name.
#[derive(Debug, Clone)]
pub struct Brief {
    pub task: String,
    pub acceptance_criteria: Vec<String>,
    pub base: Option<String>,
    /// Tests that failed at the loop's start and pass now (`suite`): each
    /// whose file changed is shown with its diff, for the reviewer to judge
    /// a fix from a test changed to pass.
    pub(crate) turned: Vec<crate::suite::changed::Candidate>,
}

/// The review request for `reviewer`, with the change since the base
/// (`review::change`).
pub(crate) fn request(root: &Path, reviewer: &str, brief: &Brief, change: &Change) -> Request {
    let since = crate::suite::changed::since_baseline(root, &brief.turned);
    let (turned_to_pass, runner_files_changed) = crate::suite::changed::for_reviewers(&since);
    Request {
        reviewer: reviewer.to_string(),
        project: root.display().to_string(),
        task: brief.task.clone(),
        acceptance_criteria: brief.acceptance_criteria.clone(),
        base: brief.base.clone(),
        commits: change.commits.clone(),
        status: change.status.clone(),
        diff: change.diff.clone(),
        files: change.files.clone(),
        diff_limit: change::DIFF_LIMIT,
        ignored_appeared: change.ignored.clone(),
        turned_to_pass,
        runner_files_changed,
    }
}

/// Run every reviewer of `reviews`, each with what it is told (or the
/// `--review-cmd` program, when given, in their place), in parallel; their
/// verdicts by name. The change is read once for each base.
pub(crate) fn review_all(
    paths: &LoopPaths,
    reviews: &[(String, Brief)],
    review_cmd: Option<&str>,
    timeout: Duration,
    fingerprint: Option<&str>,
) -> Vec<(String, ReviewVerdict)> {
    // What the reviews use, kept at start: one that fails its seal runs none.
    let mut names: Vec<&str> = reviews
        .iter()
        .map(|(n, _)| n.split(':').next().unwrap_or_default())
        .collect();
    names.sort_unstable();
    names.dedup();
    let kept = match inputs::read_kept(paths, &names, review_cmd.is_some()) {
        Ok(kept) => kept,
        Err(why) => return not_run(reviews, &why, fingerprint),
    };
    let ignored = &kept.ignored;
    let kept = &kept;
    let mut changes: Vec<(Option<String>, Change)> = Vec::new();
    for (_, brief) in reviews {
        if !changes.iter().any(|(b, _)| *b == brief.base) {
            let read = change::read(&paths.root, brief.base.as_deref(), ignored.as_deref());
            changes.push((brief.base.clone(), read));
        }
    }
    let changes = &changes;
    std::thread::scope(|scope| {
        let handles: Vec<_> = reviews
            .iter()
            .map(|(name, brief)| {
                scope.spawn(move || {
                    let change = changes
                        .iter()
                        .find(|(b, _)| *b == brief.base)
                        .map(|(_, c)| c.clone())
                        .unwrap_or_default();
                    let request = request(&paths.root, name, brief, &change);
                    let verdict = review(paths, kept, &request, review_cmd, timeout, fingerprint);
                    (name.clone(), verdict)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Each reviewer of `reviews` failed without being run, saying `why` (what
/// it would run was changed outside ralph: a verdict from it proves
/// nothing).
pub(crate) fn not_run(
    reviews: &[(String, Brief)],
    why: &str,
    fingerprint: Option<&str>,
) -> Vec<(String, ReviewVerdict)> {
    reviews
        .iter()
        .map(|(name, _)| {
            let verdict = ReviewVerdict {
                outcome: ReviewResult::Failed,
                findings: Vec::new(),
                error: Some(why.to_string()),
                fingerprint: fingerprint.map(str::to_string),
                time: clock::now_rfc3339(),
                duration_ms: 0,
            };
            (name.clone(), verdict)
        })
        .collect()
}

/// One review: the `--review-cmd` program, or `claude -p` with the
/// reviewer's prompt (its instructions as kept at the loop's start) run by
/// the `claude` recorded then.
pub(crate) fn review(
    paths: &LoopPaths,
    kept: &inputs::Kept,
    request: &Request,
    review_cmd: Option<&str>,
    timeout: Duration,
    fingerprint: Option<&str>,
) -> ReviewVerdict {
    let started = Instant::now();
    let time = clock::now_rfc3339();
    let (stdin, cmd, parse) = reviewer_command(kept, request, review_cmd);
    let verdict = |outcome, findings, error| ReviewVerdict {
        outcome,
        findings,
        error,
        fingerprint: fingerprint.map(str::to_string),
        time: time.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
    };
    let ran = run_reviewer(paths, cmd, &stdin, &request.reviewer, started, timeout);
    match ran.and_then(|(exit, out)| {
        parse(&out).map_err(|why| match exit {
            Some(0) | None => why,
            Some(code) => format!("it exited {code}: {why}"),
        })
    }) {
        Ok((outcome, findings)) => verdict(outcome, findings, None),
        Err(why) => verdict(ReviewResult::Failed, Vec::new(), Some(why)),
    }
}

/// How a reviewer's output is read into a verdict.
type Parser = fn(&str) -> Result<(ReviewResult, Vec<super::Finding>), String>;

/// What a review runs, what it is given on stdin, and how its output is
/// read: the `--review-cmd` program (the request as JSON), or `claude -p`
/// with the reviewer's prompt (its instructions as kept at the loop's
/// start), run by the `claude` recorded then.
fn reviewer_command(
    kept: &inputs::Kept,
    request: &Request,
    review_cmd: Option<&str>,
) -> (String, Command, Parser) {
    if let Some(program) = review_cmd {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(program);
        let json = serde_json::to_string(request).unwrap_or_default();
        return (json, cmd, super::verdict_of_program);
    }
    // A story's review (`story:US-1`) is the `story` reviewer's.
    let name = request.reviewer.split(':').next().unwrap_or_default();
    let instructions = kept.instructions(name);
    let mut cmd = Command::new(kept.claude_bin());
    cmd.args([
        "-p",
        "--output-format",
        "json",
        "--json-schema",
        super::SCHEMA,
    ])
    // Read-only: no Bash, no edits; the change is in the prompt.
    .args(["--tools", "Read,Grep,Glob"])
    .args(["--append-system-prompt", &system_line(name)])
    .arg("--no-session-persistence")
    // Nothing of the project's (nor the user's files): no CLAUDE.md,
    // rules, settings, hooks, plugins, skills, agents or MCP servers
    // (measured on 2.1.328, docs/client-measurements.md). The
    // environment, settings' `env` included, still reaches it.
    .args(ISOLATED);
    (
        prompt(&instructions, request),
        cmd,
        super::verdict_of_claude,
    )
}

/// Run the reviewer with `stdin` from a file and its output to another (no
/// pipe to fill up), in the project, at most `timeout` since `started`:
/// its exit code and output, or why it did not run or finish.
fn run_reviewer(
    paths: &LoopPaths,
    mut cmd: Command,
    stdin: &str,
    reviewer: &str,
    started: Instant,
    timeout: Duration,
) -> Result<(Option<i32>, String), String> {
    let tmp = std::env::temp_dir();
    let seq = REVIEW_FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stem = format!(
        "ralph-review-{}-{}-{}-{seq}",
        std::process::id(),
        reviewer,
        clock::unix_now()
    );
    let (in_path, out_path) = (
        tmp.join(format!("{stem}.in")),
        tmp.join(format!("{stem}.out")),
    );
    // The reviewer's session is not the loop's and must never drive it: its
    // hooks stand aside on a pass only this process holds (`passes`),
    // spent when this function returns (the reviewer has ended).
    let pass = Pass::issue(paths, &Purpose::Reviewer)
        .map_err(|e| format!("could not start the reviewer: {e}"))?;
    let spawned = std::fs::write(&in_path, stdin.as_bytes())
        .and_then(|()| File::open(&in_path))
        .and_then(|input| {
            let out = File::create(&out_path)?;
            cmd.current_dir(&paths.root)
                .env(PASS_ENV, pass.token())
                // A reviewer is its own session, not a part of the user's.
                .env_remove("CLAUDECODE")
                .env_remove("CLAUDE_CODE_SESSION_ID")
                .env_remove("CLAUDE_CODE_ENTRYPOINT")
                .env_remove("AI_AGENT")
                .stdin(input)
                .stdout(out)
                .stderr(Stdio::null());
            #[cfg(unix)]
            {
                use std::os::unix::process::CommandExt;
                cmd.process_group(0);
            }
            cmd.spawn()
        });
    let remove = || {
        let _ = std::fs::remove_file(&in_path);
        let _ = std::fs::remove_file(&out_path);
    };
    let mut child = spawned.map_err(|e| {
        remove();
        format!("could not start the reviewer: {e}")
    })?;
    let (exit, timed_out) = wait_bounded(&mut child, started, timeout);
    let mut out = String::new();
    if let Ok(f) = File::open(&out_path) {
        let _ = f.take(OUTPUT_LIMIT).read_to_string(&mut out);
    }
    remove();
    if timed_out {
        return Err(format!("timed out after {} s", timeout.as_secs()));
    }
    Ok((exit, out))
}

/// One pair of temp files per review: two reviews by the same reviewer in
/// one process and one second (stories reviewed side by side) must not
/// share them (seen: one review read the other's output).
static REVIEW_FILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(test)]
mod tests {
    use super::*;

    fn brief() -> Brief {
        Brief {
            task: "Add a greeting".into(),
            acceptance_criteria: vec!["greeting.txt says hello".into()],
            base: None,
            turned: Vec::new(),
        }
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "a review command runs in sh: sh on PATH (Git for Windows), which Wine here has not"
    )]
    fn a_program_reviews_from_its_stdin() {
        let paths = LoopPaths::in_data_dir(&std::env::temp_dir(), std::env::temp_dir());
        let cmd = "grep -q 'greeting.txt says hello' && echo '{\"verdict\":\"rejected\",\"findings\":[{\"severity\":\"high\",\"what\":\"missing\"}]}'";
        let v = review_all(
            &paths,
            &[("custom".into(), brief())],
            Some(cmd),
            Duration::from_secs(20),
            Some("f"),
        );
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].1.outcome, ReviewResult::Rejected);
        assert_eq!(v[0].1.findings[0].what, "missing");
        assert_eq!(v[0].1.fingerprint.as_deref(), Some("f"));
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "a review command runs in sh: sh on PATH (Git for Windows), which Wine here has not"
    )]
    fn a_program_that_fails_or_hangs_is_not_an_approval() {
        let paths = LoopPaths::in_data_dir(&std::env::temp_dir(), std::env::temp_dir());
        let r = request(&paths.root, "custom", &brief(), &Change::default());
        let kept = inputs::Kept::default();
        let v = review(
            &paths,
            &kept,
            &r,
            Some("echo oops; exit 3"),
            Duration::from_secs(20),
            None,
        );
        assert_eq!(v.outcome, ReviewResult::Failed);
        assert!(v.error.as_deref().unwrap().contains("exited 3"), "{v:?}");
        let v = review(
            &paths,
            &kept,
            &r,
            Some("sleep 30"),
            Duration::from_secs(1),
            None,
        );
        assert_eq!(v.outcome, ReviewResult::Failed);
        assert!(v.error.as_deref().unwrap().contains("timed out"), "{v:?}");
    }
}
