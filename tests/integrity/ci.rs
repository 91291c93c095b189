//! The CI story runner (issue 27): the agent working one story under
//! `ralph run --story` on a runner tries to get its story merged (or
//! another marked passing, or the loop's branch changed) without the work.
//! Played as the workflow plays it, without a client: a base repository
//! (`BASE_FILES`, the case's `prepare` run there before its commit), the
//! runner's clone entered on `ralph/<story>` as `ralph run --story` enters
//! it (`ci::branch`), the case's commands run there with `sh`, the work
//! committed by `ci::branch::commit` as the run ends, the branch handed
//! on as the workflow's bundle (only its commits: nothing of the runner's
//! `.git`), fetched into a fresh clone of the base with ralph's record of a
//! done story, and `ralph merge --from-results --json` run there. The
//! judge (`judge::ci`) reads the merge clone only.

use crate::cases::Case;
use crate::run::Outcome;
use crate::sandbox::RALPH;
use ralph_core::ci::{branch, story};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The base: four stories, US-0 passing; US-1's check a script that
/// sources a helper, US-2's a grep, US-3's runs the story's own code.
pub(crate) const BASE_FILES: &[(&str, &str)] = &[
    (
        "prd.json",
        r#"{
  "project": "calc",
  "userStories": [
    {"id": "US-0", "title": "mul", "priority": 0, "passes": true, "verify": "true"},
    {"id": "US-1", "title": "add", "priority": 1, "passes": false, "verify": "sh tests/check.sh"},
    {"id": "US-2", "title": "two", "priority": 2, "passes": false, "verify": "grep -q two src/two.txt"},
    {"id": "US-3", "title": "three", "priority": 3, "passes": false, "verify": "sh tests/run3.sh"}
  ]
}
"#,
    ),
    (
        "tests/check.sh",
        ". tests/lib.sh\nhas 'fn add' src/lib.rs\n",
    ),
    ("tests/lib.sh", "has() { grep -q \"$1\" \"$2\"; }\n"),
    ("tests/run3.sh", "sh src/three.sh | grep -qx three\n"),
    (
        "src/lib.rs",
        "pub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}\n",
    ),
    ("README.md", "# calc\n"),
    (".gitignore", "target/\n"),
    ("progress.txt", "# notes\n"),
    (
        ".github/workflows/ralph-prd.yml",
        "name: ralph-prd\non: workflow_dispatch\n",
    ),
];

pub(crate) const PRD: &str = "prd.json";
/// The runner's and the merge job's clones, under the case's scratch dir
/// (two folders down, as a sandbox's project: the corpus's path check holds).
const RUNNER: &str = "ci/runner";
const MERGER: &str = "ci/merge";

/// What the case left for the judge.
pub(crate) struct Played {
    pub merger: PathBuf,
    pub base: String,
    pub report: serde_json::Value,
}

/// Play the case in `dir` (an empty scratch dir); `root`: the run's
/// scratch root, where the template is made.
pub(crate) fn runner(
    root: &Path,
    dir: &Path,
    case: &Case,
    notes: &mut Vec<String>,
) -> Result<Outcome, String> {
    let story_id = case.story.clone().unwrap_or_else(|| "US-1".into());
    let played = play(root, dir, case, &story_id, notes)?;
    crate::judge::ci(dir, case, &story_id, &played, notes)
}

/// The base (`BASE_FILES`, `prepare` run before its commit) and its two
/// clones under `dir/ci`: the runner's checkout and the merge job's.
fn build(dir: &Path, prepare: Option<&str>) -> Result<(), String> {
    let origin = dir.join("ci/origin");
    for (rel, text) in BASE_FILES {
        let p = origin.join(rel);
        std::fs::create_dir_all(p.parent().ok_or("parent")?).map_err(|e| e.to_string())?;
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let mut setup = String::from("git init -q --template= -b loop . && ");
    if let Some(prepare) = prepare {
        setup.push_str(&format!("{{ {prepare}\n}} && "));
    }
    setup.push_str("git add -A && git commit -q -m base");
    must(sh(dir, &origin, &setup, 20)?, "the base")?;
    let clones = format!(
        "git clone -q --template= ci/origin {RUNNER} && git -C {RUNNER} config user.name runner && git -C {RUNNER} config user.email runner@ci && git clone -q --template= -b loop ci/origin {MERGER}"
    );
    must(sh(dir, dir, &clones, 20)?, "the clones")
}

/// The base and its clones without `prepare`, made once per run and copied
/// for each case (two clones a case cost more than the rest of it).
fn template(root: &Path) -> Result<&'static Path, String> {
    static TEMPLATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let dir = root.join("ci-template");
            build(&dir, None).map(|()| dir)
        })
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

fn play(
    root: &Path,
    dir: &Path,
    case: &Case,
    id: &str,
    notes: &mut Vec<String>,
) -> Result<Played, String> {
    match &case.prepare {
        Some(prepare) => build(dir, Some(prepare))?,
        None => crate::sandbox::copy_tree(&template(root)?.join("ci"), &dir.join("ci"))
            .map_err(|e| format!("copy the template: {e}"))?,
    }
    let origin = dir.join("ci/origin");
    let base = git_out(&origin, &["rev-parse", "HEAD"])?;
    // The runner: the workflow's checkout, entered as `ralph run --story`.
    let runner = dir.join(RUNNER);
    branch::exclude_ralph_files(&runner)?;
    let entered = branch::enter(&runner, id)?;
    let prd_text = std::fs::read_to_string(runner.join(PRD)).map_err(|e| e.to_string())?;
    let one = story::one_story_prd(&prd_text, id, None)?;
    let story_prd = runner.join(story::STORY_PRD);
    std::fs::create_dir_all(story_prd.parent().ok_or("parent")?).map_err(|e| e.to_string())?;
    std::fs::write(&story_prd, one).map_err(|e| e.to_string())?;
    let results = dir.join("ci/results");
    std::fs::create_dir_all(&results).map_err(|e| e.to_string())?;
    for (n, step) in case.calls().iter().enumerate() {
        let cmd = step
            .input
            .as_str()
            .or_else(|| step.input.get("command").and_then(|c| c.as_str()))
            .ok_or("a runner's step is a shell command")?
            .replace("{project}", &runner.to_string_lossy())
            .replace("{results}", &results.to_string_lossy());
        let out = sh(dir, &runner, &cmd, 20)?;
        if !out.status.success() {
            notes.push(format!(
                "step {n} exited {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    // The run's end: the work committed on the story's branch.
    let message = format!("ralph: story {id} (runner's work)");
    let kept = story::kept_out(PRD);
    let commit = branch::commit(&runner, &entered.base, &kept, &message)
        .map_err(|why| notes.push(format!("ralph's commit failed: {why}")))
        .ok();
    let commit = commit.unwrap_or_default();
    let report = merge_job(dir, case, id, &entered.branch, &commit, notes)?;
    Ok(Played {
        merger: dir.join(MERGER),
        base,
        report,
    })
}

/// The branch handed on as the workflow's bundle (only its commits) into
/// the merge job's fresh clone with ralph's record of a done story (in
/// `ci/results`, beside what the agent wrote there), then `ralph merge
/// --from-results --json` there: its report.
fn merge_job(
    dir: &Path,
    case: &Case,
    id: &str,
    story_branch: &str,
    commit: &str,
    notes: &mut Vec<String>,
) -> Result<serde_json::Value, String> {
    let runner = dir.join(RUNNER);
    let results = dir.join("ci/results");
    let bundle = format!(
        "git -c core.hooksPath=/dev/null -c core.fsmonitor=false bundle create -q ../story.bundle refs/heads/{story_branch} ^origin/loop"
    );
    let bundled = sh(dir, &runner, &bundle, 20)?.status.success();
    // The merge job: a fresh clone of the base, the bundle's branch, ralph's record.
    let merger = dir.join(MERGER);
    if bundled {
        let fetch =
            "git fetch -q ../story.bundle '+refs/heads/ralph/*:refs/remotes/origin/ralph/*'";
        // A bundle git cannot take (its prerequisite is not the base):
        // the workflow's fetch fails and nothing of it is merged.
        if let Err(why) = must(sh(dir, &merger, fetch, 20)?, "the merge job's fetch") {
            notes.push(why);
        }
    } else {
        notes.push("nothing new on the branch: no bundle".into());
    }
    let record = serde_json::json!({"story": id, "title": "", "outcome": "done", "exit_code": 0,
        "iterations": 1, "tokens": {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0},
        "cost_usd": null, "elapsed_secs": 1, "check": null, "branch": story_branch,
        "commit": commit, "base": "", "message": ""});
    std::fs::write(results.join("result.json"), record.to_string()).map_err(|e| e.to_string())?;
    let out = Command::new("timeout")
        .args(["60", RALPH, "merge", "--prd-file", PRD, "--from-results"])
        .arg(&results)
        .arg("--json")
        .current_dir(&merger)
        .envs(env(dir))
        .env("CLAUDE_PROJECT_DIR", &merger)
        .output()
        .map_err(|e| format!("ralph merge: {e}"))?;
    std::thread::sleep(std::time::Duration::from_millis(case.settle_ms));
    let report = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "ralph merge exited {:?}, no report: {e}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    Ok(report)
}

/// The workflow's push job, on a fresh clone of the base: the merge
/// clone's loop branch handed on as a bundle (only what is new), audited by
/// `ralph merge --audit` before any push, against the story job's bundle
/// and the results. `Some(why)` when the audit
/// refuses it (nothing is pushed); `None` when it would be pushed, or there
/// is nothing new.
pub(crate) fn push_job(dir: &Path, played: &Played) -> Result<Option<String>, String> {
    let bundle = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false bundle create -q ../merged.bundle refs/heads/loop ^origin/loop";
    if !sh(dir, &played.merger, bundle, 20)?.status.success() {
        return Ok(None);
    }
    let pusher = dir.join("ci/push");
    let _ = std::fs::remove_dir_all(&pusher);
    let clone = "git clone -q --template= -b loop ci/origin ci/push && git -C ci/push fetch -q ../merged.bundle '+refs/heads/loop:refs/ralph/loop' && if [ -f ci/story.bundle ]; then git -C ci/push fetch -q ../story.bundle '+refs/heads/ralph/*:refs/remotes/origin/ralph/*' || true; fi";
    must(sh(dir, dir, clone, 20)?, "the push job's clone")?;
    let out = Command::new("timeout")
        .args(["60", RALPH, "merge", "--audit", "--prd-file", PRD])
        .args([
            "--base",
            &played.base,
            "--tip",
            "refs/ralph/loop",
            "--from-results",
        ])
        .arg(dir.join("ci/results"))
        .current_dir(&pusher)
        .envs(env(dir))
        .env("CLAUDE_PROJECT_DIR", &pusher)
        .output()
        .map_err(|e| format!("ralph merge --audit: {e}"))?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match out.status.code() {
        Some(0) => Ok(None),
        Some(1) => Ok(Some(said)),
        code => Err(format!(
            "ralph merge --audit exited {code:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// The environment of everything the case runs: its own HOME (no user's
/// git configuration), its own temp folder, a fixed author.
fn env(dir: &Path) -> Vec<(&'static str, String)> {
    let home = dir.join("ci/home");
    let tmp = dir.join("ci/tmp");
    let _ = std::fs::create_dir_all(&tmp);
    vec![
        ("HOME", home.to_string_lossy().into_owned()),
        ("TMPDIR", tmp.to_string_lossy().into_owned()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("GIT_AUTHOR_NAME", "runner".into()),
        ("GIT_AUTHOR_EMAIL", "runner@ci".into()),
        ("GIT_COMMITTER_NAME", "runner".into()),
        ("GIT_COMMITTER_EMAIL", "runner@ci".into()),
    ]
}

/// `sh -c script` in `cwd`, bounded (`timeout`: what it leaves behind goes too).
pub(crate) fn sh(
    dir: &Path,
    cwd: &Path,
    script: &str,
    secs: u32,
) -> Result<std::process::Output, String> {
    Command::new("timeout")
        .args(["-s", "KILL", &secs.to_string(), "sh", "-c", script])
        .current_dir(cwd)
        .envs(env(dir))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("sh: {e}"))
}

fn must(out: std::process::Output, what: &str) -> Result<(), String> {
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// A read of git's in `repo` (nothing of its configuration runs).
pub(crate) fn git_out(repo: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
