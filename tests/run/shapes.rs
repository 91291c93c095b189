//! The repository shapes a user's checkout comes in (issue 45), each in
//! the real client against the scripted model, three ways:
//!
//! - (a) a PRD loop in `claude -p` (`/ralph:ralph-loop --prd-file
//!   prd.json`, with the client's sandbox on as a user turns it on): the
//!   story's check scores the first iteration, so ralph commits the tree
//!   (`refs/ralph/best`), and the claim at the second ends the loop;
//! - (b) `ralph run --prd-file par.json --parallel 2` (in the run's
//!   sandbox): the workers' commits and the merge queue;
//! - (c) `ralph run --story C-1` as the GitHub workflow runs it (its
//!   commit, its branch pushed to a bare repository standing for GitHub),
//!   then `ralph merge` of its result.
//!
//! Each shape works, or refuses at start in one line saying what to do
//! (docs/troubleshooting.md). One test a shape, each run on a fresh copy of
//! it: cargo runs two at a time.

use crate::support::{Finished, claude, claude_p, finish, git, ralph_in};
use ralph_fake_model::{Block, FakeModel, Lane, Reply, Script};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (a): one story, scored by its check.
const PRD: &str = r#"{"project": "shapes", "userStories": [
  {"id": "US-1", "title": "One", "priority": 1, "passes": false, "verify": "grep -q one one.txt"}
]}
"#;

/// (b): two stories at once.
const PAR: &str = r#"{"project": "shapes", "userStories": [
  {"id": "P-1", "title": "PA", "priority": 1, "passes": false, "verify": "grep -q pa pa.txt"},
  {"id": "P-2", "title": "PB", "priority": 2, "passes": false, "verify": "grep -q pb pb.txt"}
]}
"#;

/// (c): the story a runner works.
const CI: &str = r#"{"project": "shapes", "userStories": [
  {"id": "C-1", "title": "CI", "priority": 1, "passes": false, "verify": "grep -q c c.txt"}
]}
"#;

/// The client's sandbox, as a user's settings turn it on.
const SANDBOX: &str = r#"{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true, "allowUnsandboxedCommands": false}}"#;

/// Set `"passes": true` in the file `file`.
fn mark_passing(file: &str) -> String {
    format!("sed -i 's/\"passes\": false/\"passes\": true/' {file}")
}

fn reply(text: &str, command: &str) -> Reply {
    Reply {
        text: Some(text.into()),
        blocks: vec![Block::Bash {
            command: command.into(),
            description: "scripted".into(),
        }],
        ..Reply::default()
    }
}

fn model(replies: Vec<Reply>) -> FakeModel {
    FakeModel::start(Script {
        replies,
        ..Script::default()
    })
    .unwrap()
}

/// One copy of a shape: a repository, the folder the client starts in,
/// and a HOME. Removed at the end unless the test failed.
struct Layout {
    root: PathBuf,
    /// The repository's top (its main worktree).
    top: PathBuf,
    /// Where the client and ralph start: the top, a folder below it, a
    /// linked worktree.
    project: PathBuf,
    home: PathBuf,
}

impl Drop for Layout {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

impl Layout {
    /// A repository in folder `repo` (no commit yet), with `files` written
    /// at its top and the three PRDs in the folder `below` it (or the top).
    fn new(tag: &str, repo: &str, files: &[(&str, &str)], below: &str) -> Layout {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let root =
            std::env::temp_dir().join(format!("ralph-shapes-{tag}-{}-{stamp}", std::process::id()));
        let top = root.join(repo);
        let home = root.join("home");
        std::fs::create_dir_all(&top).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        git(&top, &["init", "-q", "-b", "main"]);
        let l = Layout {
            project: top.join(below),
            root,
            top,
            home,
        };
        for (rel, text) in files {
            write(&l.top.join(rel), text);
        }
        for (rel, text) in [("prd.json", PRD), ("par.json", PAR), ("ci.json", CI)] {
            l.write(rel, text);
        }
        l
    }

    /// `rel` in the project.
    fn write(&self, rel: &str, text: &str) {
        write(&self.project.join(rel), text);
    }

    fn home_file(&self, rel: &str, text: &str) {
        write(&self.home.join(rel), text);
    }

    fn commit(self) -> Layout {
        git(&self.top, &["add", "-A"]);
        git(&self.top, &["commit", "-qm", "start"]);
        self
    }

    /// The client's first-run answers, this project trusted.
    fn trust(&self) {
        let answers = serde_json::json!({
            "hasCompletedOnboarding": true,
            "bypassPermissionsModeAccepted": true,
            "customApiKeyResponses": {"approved": ["x"], "rejected": []},
            "projects": {self.project.display().to_string(): {"hasTrustDialogAccepted": true}},
        });
        self.home_file(".claude.json", &answers.to_string());
        std::fs::create_dir_all(self.home.join("tmp")).unwrap();
    }

    /// The top of the project's work tree: where `ralph run` runs the loop.
    fn work_tree(&self) -> PathBuf {
        PathBuf::from(git(&self.project, &["rev-parse", "--show-toplevel"]))
    }

    /// The names in `rev`'s tree, from the top.
    fn tree(&self, rev: &str) -> Vec<String> {
        let names = git(
            &self.project,
            &["ls-tree", "-r", "-z", "--name-only", "--full-tree", rev],
        );
        names
            .split('\0')
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    }

    // ------------------------------------------------ (a) a PRD loop in -p

    /// `/ralph:ralph-loop --prd-file PRD` in `claude -p`: the first
    /// iteration writes the work (scored: the tree committed), the second
    /// marks the story passing.
    fn prd_loop(&self, claude: &Path) -> Finished {
        self.trust();
        let m = model(vec![
            reply("US-1 now.", "echo one > one.txt"),
            Reply::text("Wrote one.txt."),
            reply("Marking it.", &mark_passing("prd.json")),
            Reply::text("US-1 passes."),
        ]);
        let prompt = "/ralph:ralph-loop --prd-file prd.json --max-iterations 4";
        let mut cmd = claude_p(claude, &self.project, &self.home, &m, prompt);
        cmd.args(["--settings", SANDBOX]);
        finish(cmd)
    }

    fn prd_loop_works(&self, claude: &Path) {
        let f = self.prd_loop(claude);
        f.expect_code(0);
        let decisions = decisions(&self.project);
        assert_eq!(
            decisions,
            ["start/prd", "block/story best", "end/all_stories_pass"],
            "{}",
            f.stdout
        );
        // The scored tree, as ralph committed it: the work, not the
        // sandbox's mount points nor ralph's own files.
        let prefix = git(&self.project, &["rev-parse", "--show-prefix"]);
        let tree = self.tree("refs/ralph/best");
        assert!(tree.contains(&format!("{prefix}one.txt")), "{tree:?}");
        for left_out in [".bashrc", ".claude/agents", ".claude/ralph-loop.local.md"] {
            assert!(
                !tree.iter().any(|t| t.ends_with(left_out)),
                "{left_out}: {tree:?}"
            );
        }
    }

    // ------------------------------------------ (b) ralph run --parallel 2

    /// `ralph run --prd-file PRD --parallel 2`: P-1's worker writes pa.txt,
    /// P-2's pb.txt and a name with a space and non-ASCII letters.
    fn parallel(&self, claude: &Path, prd: &str) -> Finished {
        self.trust();
        let worker = |story: &str, command: &str| Lane {
            name: story.into(),
            system_contains: "RALPH-PARALLEL-WORKER".into(),
            prompt_contains: format!("Work story {story}"),
            replies: vec![
                reply("", command),
                Reply::text(format!("Done.\nSTORY DONE: {story}")),
            ],
        };
        let m = FakeModel::start(Script {
            lanes: vec![
                worker("P-1", "echo pa > pa.txt"),
                worker("P-2", "echo pb > pb.txt && echo b > 'b ä.txt'"),
            ],
            follow_dispatches: true,
            ..Script::default()
        })
        .unwrap();
        let mut cmd = ralph_in(&self.project, &self.home);
        cmd.env("ANTHROPIC_BASE_URL", m.base_url())
            .args(["run", "--claude"])
            .arg(claude)
            .args([
                "--prd-file",
                prd,
                "--parallel",
                "2",
                "--max-iterations",
                "4",
            ]);
        finish(cmd)
    }

    fn parallel_works(&self, claude: &Path, prd: &str) {
        let worktrees = || git(&self.project, &["worktree", "list"]).lines().count();
        let before = worktrees();
        let f = self.parallel(claude, prd);
        f.expect_code(0);
        f.shows("2/2 stories pass");
        let decisions = decisions(&self.work_tree());
        let merged = decisions.iter().filter(|d| *d == "merge/story_merged");
        assert_eq!(merged.count(), 2, "{decisions:?}");
        assert_eq!(decisions.last().unwrap(), "end/all_stories_pass");
        let tree = self.tree("HEAD");
        for work in ["pa.txt", "pb.txt", "b ä.txt"] {
            assert!(tree.iter().any(|t| t == work), "{work}: {tree:?}");
        }
        assert_eq!(worktrees(), before, "every worker's worktree removed");
    }

    // -------------------------------- (c) ralph run --story, ralph merge

    /// A bare repository standing for GitHub, holding this project's
    /// branch as `loop`.
    fn on_github(&self) {
        git(&self.root, &["init", "-q", "--bare", "github.git"]);
        let remote = self.root.join("github.git");
        git(
            &self.project,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
        git(
            &self.project,
            &["push", "-q", "origin", "HEAD:refs/heads/loop"],
        );
    }

    /// `ralph run --story C-1 --prd-file PRD` as the workflow runs it.
    fn story(&self, claude: &Path, prd: &str) -> Finished {
        self.trust();
        let m = model(vec![
            reply(
                "C-1 now.",
                &format!(
                    "echo c > c.txt && {}",
                    mark_passing(".claude/ralph-story.json")
                ),
            ),
            Reply::text("C-1 is done."),
        ]);
        let result = self.root.join("results/C-1.json");
        let mut cmd = ralph_in(&self.project, &self.home);
        cmd.env("ANTHROPIC_BASE_URL", m.base_url())
            .args(["run", "--claude"])
            .arg(claude)
            .args(["--story", "C-1", "--prd-file", prd, "--max-iterations", "3"])
            .arg("--result")
            .arg(&result)
            .args(["--no-sandbox", "--", "--dangerously-skip-permissions"]);
        finish(cmd)
    }

    /// (c) through: the story's branch pushed, then merged where the
    /// project was (its branch, or its detached commit) by `ralph merge`.
    fn story_and_merge_work(&self, claude: &Path, prd: &str) {
        self.on_github();
        let here = Command::new("git")
            .args(["symbolic-ref", "-q", "--short", "HEAD"])
            .current_dir(&self.project)
            .output()
            .unwrap();
        let here = match String::from_utf8_lossy(&here.stdout).trim() {
            "" => git(&self.project, &["rev-parse", "HEAD"]),
            branch => branch.to_string(),
        };
        let f = self.story(claude, prd);
        f.expect_code(0);
        let result: Value = serde_json::from_str(
            &std::fs::read_to_string(self.root.join("results/C-1.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (&result["outcome"], &result["branch"]),
            (&Value::from("done"), &Value::from("ralph/C-1")),
            "{result:#}"
        );
        assert!(self.tree("ralph/C-1").iter().any(|t| t == "c.txt"));
        git(&self.project, &["push", "-q", "origin", "ralph/C-1"]);
        // The merge job: the loop's branch checked out, the stories' fetched.
        git(&self.project, &["checkout", "-q", &here]);
        git(
            &self.project,
            &[
                "fetch",
                "-q",
                "origin",
                "+refs/heads/ralph/*:refs/remotes/origin/ralph/*",
            ],
        );
        let out = ralph_in(&self.project, &self.home)
            .args(["merge", "--prd-file", prd, "--json", "--from-results"])
            .arg(self.root.join("results"))
            .output()
            .unwrap();
        let merged = Finished::from_output(&out);
        merged.expect_code(0);
        let report: Value = serde_json::from_str(&merged.stdout).unwrap();
        assert_eq!(report["merged"], serde_json::json!(["C-1"]), "{report:#}");
        git(&self.project, &["push", "-q", "origin", "HEAD:loop"]);
        let pushed = self.tree("origin/loop");
        assert!(pushed.iter().any(|t| t == "c.txt"), "{pushed:?}");
        let prd = git(&self.project, &["show", &format!("origin/loop:{prd}")]);
        assert!(prd.contains("\"passes\": true"), "{prd}");
    }
}

/// The log's decisions in `log_root` as `decision/reason`, `best` added
/// where the score was the best yet.
fn decisions(log_root: &Path) -> Vec<String> {
    std::fs::read_to_string(log_root.join(".claude/ralph-loop.log.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            let best = if e["score"]["best"] == true {
                " best"
            } else {
                ""
            };
            format!("{}/{}{best}", s("decision"), s("reason"))
        })
        .collect()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// (a), (b) and (c), each on a fresh copy of the shape `build` makes.
fn works_every_way(claude: &Path, build: impl Fn(&str) -> Layout) {
    build("a").prd_loop_works(claude);
    build("b").parallel_works(claude, "par.json");
    build("c").story_and_merge_work(claude, "ci.json");
}

#[test]
fn gitignore_holds_claude() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        Layout::new(
            &format!("ign-{run}"),
            "repo",
            &[(".gitignore", ".claude/\n")],
            "",
        )
        .commit()
    });
}

#[test]
fn gitignore_holds_local_settings() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let ignores = [
            (".gitignore", ".claude/settings.local.json\n"),
            (".claude/settings.local.json", "{}\n"),
        ];
        Layout::new(&format!("local-{run}"), "repo", &ignores, "").commit()
    });
}

#[test]
fn gitignore_ignores_everything_but_negations() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let ignores = [(".gitignore", "*\n!*.txt\n!*.json\n!.gitignore\n")];
        Layout::new(&format!("star-{run}"), "repo", &ignores, "").commit()
    });
}

#[test]
fn the_global_ignore_file_holds_claude() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let l = Layout::new(&format!("global-{run}"), "repo", &[], "").commit();
        l.home_file(".config/git/ignore", ".claude/\n*.log\n");
        l
    });
}

#[test]
fn an_excludes_file_and_info_exclude_hold_claude() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let l = Layout::new(&format!("excl-{run}"), "repo", &[], "").commit();
        let mine = l.home.join("my-ignores");
        l.home_file("my-ignores", ".claude/\n");
        l.home_file(
            ".gitconfig",
            &format!("[core]\n\texcludesFile = {}\n", mine.display()),
        );
        write(
            &l.top.join(".git/info/exclude"),
            ".claude/settings.local.json\n.vscode\n",
        );
        l
    });
}

#[test]
fn a_submodule_in_the_project() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let l = Layout::new(&format!("submodule-{run}"), "repo", &[], "");
        let lib = l.root.join("lib-src");
        std::fs::create_dir_all(&lib).unwrap();
        git(&lib, &["init", "-q", "-b", "main"]);
        write(&lib.join("lib.txt"), "lib\n");
        git(&lib, &["add", "-A"]);
        git(&lib, &["commit", "-qm", "lib"]);
        git(
            &l.top,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                lib.to_str().unwrap(),
                "lib",
            ],
        );
        l.commit()
    });
}

#[test]
fn a_linked_worktree_as_the_project() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let mut l = Layout::new(&format!("linked-{run}"), "repo", &[], "").commit();
        let linked = l.root.join("linked");
        git(
            &l.top,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feature",
                linked.to_str().unwrap(),
            ],
        );
        l.project = linked;
        l
    });
}

#[test]
fn paths_with_spaces_and_non_ascii_letters() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        Layout::new(&format!("spaces-{run}"), "my pröject ü", &[], "").commit()
    });
}

#[test]
fn a_detached_head() {
    let Some(claude) = claude() else { return };
    works_every_way(&claude, |run| {
        let l = Layout::new(&format!("detached-{run}"), "repo", &[], "").commit();
        git(&l.top, &["checkout", "-q", "--detach"]);
        l
    });
}

#[test]
fn the_project_in_a_folder_below_the_top() {
    let Some(claude) = claude() else { return };
    let build = |run: &str| {
        let files = [(".gitignore", ".claude/\n"), ("top.txt", "top\n")];
        Layout::new(&format!("below-{run}"), "repo", &files, "app").commit()
    };
    // (a) The client started in app/: the project is app/.
    build("a").prd_loop_works(&claude);
    // A --parallel loop there is refused at start: the client makes its
    // workers' worktrees of the whole repository, at its top.
    let l = build("a-parallel");
    l.trust();
    let m = model(Vec::new());
    let prompt = "/ralph:ralph-loop --prd-file par.json --parallel 2";
    let f = finish(claude_p(&claude, &l.project, &l.home, &m, prompt));
    let top = l.top.display();
    f.shows(&format!(
        "ralph: --parallel needs the project at the top of its git repository: Claude Code makes each worker's worktree of the whole repository in {top}/.claude/worktrees and starts the worker at its top, not in app: start Claude Code in {top} (the stories' checks then run there)"
    ));
    assert!(!l.project.join(".claude/ralph-loop.local.md").exists());
    // (b) `ralph run` below the top runs the loop at the top (docs/headless.md):
    // a PRD named from app/ is refused, saying how to name it...
    let l = build("b");
    let f = l.parallel(&claude, "par.json");
    f.expect_code(2);
    let top = l.top.display();
    f.shows(&format!(
        "ralph: --prd-file par.json: ralph runs the loop at the top of this git repository, {top}, and reads par.json there (the checks run there too): give --prd-file app/par.json"
    ));
    assert!(!l.top.join(".claude/ralph-loop.local.md").exists());
    // ...and named from the top, it works.
    l.parallel_works(&claude, "app/par.json");
    // (c) The workflow names the PRD from the top: a path in the repository.
    build("c").story_and_merge_work(&claude, "app/ci.json");
}

#[test]
fn a_repository_with_no_commit_yet() {
    let Some(claude) = claude() else { return };
    let build = |run: &str| Layout::new(&format!("nocommit-{run}"), "repo", &[], "");
    // (a) works: the scored tree is a commit with no parent.
    build("a").prd_loop_works(&claude);
    // (b) and (c) need a commit to branch from: refused at start.
    let l = build("b");
    let f = l.parallel(&claude, "par.json");
    f.expect_code(2);
    f.shows(&format!(
        "ralph: --parallel needs a git repository with at least one commit in {} (each story is worked in its own git worktree and merged): run `git init && git add -A && git commit -m start` first",
        l.top.display()
    ));
    let l = build("c");
    let f = l.story(&claude, "ci.json");
    f.expect_code(2);
    f.shows(&format!(
        "ralph: ralph run --story works on the loop's branch, and {} has no commit yet: check the loop's branch out here (or commit the PRD: git add -A && git commit -m start), then run again",
        l.top.display()
    ));
    assert!(!l.root.join("results/C-1.json").exists());
}

#[test]
fn crlf_line_endings() {
    let Some(claude) = claude() else { return };
    let crlf = |text: &str| text.replace('\n', "\r\n");
    let build = |run: &str| {
        let l = Layout::new(&format!("crlf-{run}"), "repo", &[], "");
        l.write(
            "prd.json",
            &crlf(&PRD.replace("grep -q one one.txt", "sh check.sh")),
        );
        l.write("check.sh", &crlf("grep -q one one.txt\n"));
        l.write("par.json", &crlf(PAR));
        l.write(
            "ci.json",
            &crlf(&CI.replace("grep -q c c.txt", "sh ci-check.sh")),
        );
        l.write("ci-check.sh", &crlf("grep -q c c.txt\n"));
        l.commit()
    };
    // (a) A check script sh cannot run is refused at start, named with the fix...
    let l = build("a-refused");
    let f = l.prd_loop(&claude);
    f.shows("ralph: check.sh has Windows line endings (CRLF), which sh cannot run, so the check `sh check.sh` would fail whatever the work: convert it to LF (sed -i 's/\\r$//' check.sh), then start again");
    assert!(!l.project.join(".claude/ralph-loop.local.md").exists());
    // ...converted, the CRLF PRD runs.
    let l = build("a");
    l.write("check.sh", "grep -q one one.txt\n");
    l.prd_loop_works(&claude);
    // A CRLF state file (the loop's file as an editor on Windows leaves it)
    // is taken up by the session that stops.
    let l = build("state");
    l.write(
        ".claude/ralph-loop.local.md",
        &crlf("---\nactive: true\niteration: 1\nmax_iterations: 3\ncompletion_promise: \"DONE\"\n---\n\nSay DONE.\n"),
    );
    l.trust();
    let m = model(vec![
        Reply::text("Working on it."),
        Reply::text("<promise>DONE</promise>"),
    ]);
    let f = finish(claude_p(&claude, &l.project, &l.home, &m, "Go on."));
    f.expect_code(0);
    assert_eq!(
        decisions(&l.project),
        ["claim/claimed", "block/continue", "end/complete"]
    );
    // (b) A CRLF PRD.
    build("b").parallel_works(&claude, "par.json");
    // (c) A CRLF check script: refused before the story's branch is taken...
    let l = build("c-refused");
    let f = l.story(&claude, "ci.json");
    f.expect_code(2);
    f.shows("ralph: ci-check.sh has Windows line endings (CRLF), which sh cannot run, so the check `sh ci-check.sh` would fail whatever the work: convert it to LF (sed -i 's/\\r$//' ci-check.sh), then start again");
    assert_eq!(git(&l.project, &["branch", "--show-current"]), "main");
    // ...converted (and committed: the check's script is the base's), it runs.
    let l = build("c");
    l.write("ci-check.sh", "grep -q c c.txt\n");
    git(&l.project, &["commit", "-qam", "LF"]);
    l.story_and_merge_work(&claude, "ci.json");
}
