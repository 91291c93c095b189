//! `ralph plan` and `ralph merge` (issue 27) through the binary, on real git
//! repositories: the matrix and its exit codes; the merge queue over story
//! branches judging each by the base (the check, the pins, the PRD), never
//! by what the branch says.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

/// A git repository in the temp folder, removed on drop.
struct Repo(PathBuf);

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Repo {
    fn new(tag: &str) -> Repo {
        let dir = std::env::temp_dir().join(format!("ralph-it-waves-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let r = Repo(dir);
        r.git(&["init", "-q", "-b", "loop"]);
        r
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.0.join(rel)).unwrap_or_default()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&self.0)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    /// A branch off `loop` with `files` written in one commit.
    fn branch(&self, name: &str, files: &[(&str, &str)]) {
        self.git(&["checkout", "-q", "-b", name, "loop"]);
        for (f, t) in files {
            self.write(f, t);
        }
        self.commit_all(name);
        self.git(&["checkout", "-q", "loop"]);
    }

    fn ralph(&self, args: &[&str]) -> Output {
        Command::new(RALPH)
            .args(args)
            .current_dir(&self.0)
            .env("CLAUDE_PROJECT_DIR", &self.0)
            .env_remove("AI_AGENT")
            .output()
            .unwrap()
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn story(id: &str, priority: i64, check: &str, deps: &[&str]) -> Value {
    serde_json::json!({"id": id, "title": format!("story {id}"), "priority": priority,
        "passes": false, "dependsOn": deps, "verify": check})
}

#[test]
fn plan_gives_the_matrix_and_says_done_or_blocked_by_its_exit_code() {
    let r = Repo::new("plan");
    let prd = |stories: Vec<Value>| serde_json::json!({"userStories": stories}).to_string();
    r.write(
        "prd.json",
        &prd(vec![
            story("A2", 1, "true", &["A1"]),
            story("A1", 2, "true", &[]),
            story("B1", 1, "true", &[]),
        ]),
    );
    let out = r.ralph(&["plan", "--prd-file", "prd.json", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let plan = json(&out);
    let ids: Vec<&str> = plan["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["story"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["B1", "A1"]);
    assert_eq!(plan["matrix"]["include"][0]["title"], "story B1");
    assert_eq!(
        (plan["done"].as_u64(), plan["blocked"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(plan["remaining"], 3);

    let mut done = story("A1", 1, "true", &[]);
    done["passes"] = true.into();
    r.write("prd.json", &prd(vec![done.clone()]));
    let out = r.ralph(&["plan", "--prd-file", "prd.json", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["status"], "done");

    r.write(
        "prd.json",
        &prd(vec![
            done,
            story("X", 1, "true", &["Y"]),
            story("Y", 1, "true", &["X"]),
        ]),
    );
    let out = r.ralph(&["plan", "--prd-file", "prd.json", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    let plan = json(&out);
    assert_eq!(plan["status"], "blocked");
    assert_eq!(plan["deadlock"][0]["waits_for"][0], "Y");
    assert!(plan["message"].as_str().unwrap().contains("cycle"));

    assert_eq!(
        r.ralph(&["plan", "--prd-file", "missing.json"])
            .status
            .code(),
        Some(2)
    );
}

/// The verdict of `story` in a merge report.
/// The kind of `story`'s verdict's reason (`refused`, `conflict`...).
fn kind_of(report: &Value, story: &str) -> String {
    verdict(report, story)["reason"]["kind"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn verdict<'a>(report: &'a Value, story: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["story"] == story)
        .unwrap_or_else(|| panic!("no {story} in {report:#}"))
}

#[test]
fn merge_judges_each_branch_by_the_base_and_never_takes_what_fences_the_loop() {
    let r = Repo::new("merge");
    let prd = serde_json::json!({"userStories": [
        story("A", 1, "sh check-a.sh", &[]),
        story("B", 2, "grep -q b b.txt", &[]),
        story("C", 3, "test -f c.txt", &[]),
        story("D", 4, "grep -q d d.txt", &[]),
        story("F", 5, "grep -q f shared.txt", &[]),
        story("E", 6, "grep -q e shared.txt", &[]),
        story("G", 7, "test -f g.txt", &[]),
        story("H", 8, "true", &["B"]),
        story("M", 9, "sh run-m.sh", &[]),
    ]});
    r.write("prd.json", &serde_json::to_string_pretty(&prd).unwrap());
    r.write("check-a.sh", "grep -q a a.txt\n");
    r.write("shared.txt", "start\n");
    r.write("run-m.sh", "sh m-impl.sh\n");
    r.commit_all("base");
    let weakened = prd.to_string().replace("grep -q b b.txt", "true");
    r.branch("ralph/A", &[("a.txt", "a\n"), ("check-a.sh", "exit 0\n")]);
    r.branch("ralph/B", &[("b.txt", "b\n"), ("prd.json", &weakened)]);
    r.branch(
        "ralph/C",
        &[("c.txt", "c\n"), (".github/workflows/x.yml", "on: push\n")],
    );
    r.branch("ralph/D", &[("d.txt", "not it\n")]);
    r.branch("ralph/E", &[("shared.txt", "e\n")]);
    r.branch("ralph/F", &[("shared.txt", "f\n")]);
    r.branch(
        "ralph/G",
        &[("g.txt", "g\n"), (".claude/ralph.toml", "notify = \"x\"\n")],
    );
    r.branch("ralph/H", &[("h.txt", "h\n")]);
    // The story's code, run by its check, commits on the loop's branch and
    // edits a tracked file: none of it stays.
    let evil =
        "echo evil > shared.txt; git -c user.name=x -c user.email=x commit -qam evil; exit 0\n";
    r.branch("ralph/M", &[("m-impl.sh", evil)]);
    let branches = [
        "ralph/A", "ralph/B", "ralph/C", "ralph/D", "ralph/E", "ralph/F", "ralph/G", "ralph/H",
        "ralph/M",
    ];
    let mut args = vec!["merge", "--prd-file", "prd.json", "--json"];
    args.extend(branches);
    let out = r.ralph(&args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    let kind = |s: &str| kind_of(&report, s);
    assert_eq!(kind("A"), "refused", "a pinned check file: {report:#}");
    assert_eq!(kind("B"), "refused", "the PRD");
    assert_eq!(kind("C"), "refused", "the workflows");
    assert_eq!(kind("D"), "check_failed");
    assert_eq!(
        kind("E"),
        "conflict",
        "F merged first (priority), E conflicts with it"
    );
    assert_eq!(kind("G"), "refused", "ralph's configuration");
    assert_eq!(kind("H"), "not_runnable", "B does not pass on the base");
    assert_eq!(verdict(&report, "F")["verdict"], "merged");
    assert_eq!(report["merged"], serde_json::json!(["F", "M"]));
    assert!(!r.git(&["log", "--format=%s"]).contains("evil"));
    let refused_files = verdict(&report, "A")["reason"]["files"].to_string();
    assert!(refused_files.contains("check-a.sh"), "{refused_files}");
    // The loop's branch: F merged and marked passing by ralph, nothing else.
    assert_eq!(r.read("shared.txt"), "f\n");
    assert_eq!(r.read("check-a.sh"), "grep -q a a.txt\n");
    for absent in [
        "a.txt",
        "b.txt",
        "c.txt",
        "d.txt",
        "g.txt",
        ".github",
        ".claude/ralph.toml",
    ] {
        assert!(!r.0.join(absent).exists(), "{absent} merged");
    }
    let now: Value = serde_json::from_str(&r.read("prd.json")).unwrap();
    let passing: Vec<&str> = now["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["passes"] == true)
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(passing, ["F", "M"]);
    assert!(
        r.read("prd.json").contains("grep -q b b.txt"),
        "the check is the base's"
    );
    assert_eq!(r.git(&["status", "--porcelain"]), "");
    assert_eq!(
        report["head"].as_str().unwrap(),
        r.git(&["rev-parse", "HEAD"])
    );

    // A result file's branch: only a done record, and only its own story's branch.
    let results = r.0.join("results/one");
    std::fs::create_dir_all(&results).unwrap();
    let record = |story: &str, branch: &str, outcome: &str| {
        serde_json::json!({"story": story, "title": "", "outcome": outcome, "exit_code": 0,
            "iterations": 1, "tokens": {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0},
            "cost_usd": null, "elapsed_secs": 1, "check": null, "branch": branch,
            "commit": null, "base": "", "message": ""})
        .to_string()
    };
    r.branch("ralph/B2", &[("b.txt", "b\n")]);
    r.git(&["branch", "-f", "ralph/B", "ralph/B2"]);
    std::fs::write(results.join("b.json"), record("B", "ralph/B", "done")).unwrap();
    std::fs::write(results.join("d.json"), record("D", "ralph/D", "not_done")).unwrap();
    std::fs::write(results.join("e.json"), record("H", "ralph/E", "done")).unwrap();
    let out = r.ralph(&[
        "merge",
        "--prd-file",
        "prd.json",
        "--from-results",
        "results",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    assert_eq!(report["merged"], serde_json::json!(["B"]));
    assert_eq!(report["results"].as_array().unwrap().len(), 1, "{report:#}");
}

#[test]
fn merge_refuses_a_branch_that_changes_the_package_script_its_check_runs() {
    let r = Repo::new("merge-npm-script");
    let prd = serde_json::json!({"userStories": [
        story("N", 1, "npm run check", &[]),
        story("P", 2, "npm run check", &[]),
    ]});
    r.write("prd.json", &serde_json::to_string_pretty(&prd).unwrap());
    let package = |check: &str, deps: &str| {
        format!(
            "{{\"name\": \"d\", \"private\": true{deps}, \"scripts\": {{\"check\": \"{check}\"}}}}\n"
        )
    };
    r.write("package.json", &package("grep -q done n.txt", ""));
    r.commit_all("base");
    // N: the script its check runs rewritten to pass.
    r.branch("ralph/N", &[("package.json", &package("true", ""))]);
    // P: the work done and a dependency added: package.json is the work's.
    r.branch(
        "ralph/P",
        &[
            ("n.txt", "done\n"),
            (
                "package.json",
                &package(
                    "grep -q done n.txt",
                    r#", "dependencies": {"left-pad": "1.3.0"}"#,
                ),
            ),
        ],
    );
    let out = r.ralph(&[
        "merge",
        "--prd-file",
        "prd.json",
        "--json",
        "ralph/N",
        "ralph/P",
    ]);
    let report = json(&out);
    let kind = |s: &str| kind_of(&report, s);
    assert_eq!(kind("N"), "refused", "{report:#}");
    let files = verdict(&report, "N")["reason"]["files"].to_string();
    assert!(files.contains("its script `check`"), "{files}");
    assert_eq!(report["merged"], serde_json::json!(["P"]), "{report:#}");
}

#[test]
fn run_story_on_a_story_that_passes_is_a_no_op_and_one_not_runnable_is_refused() {
    let r = Repo::new("story");
    let mut a = story("A", 1, "true", &[]);
    a["passes"] = true.into();
    let prd = serde_json::json!({"userStories": [a, story("B", 2, "true", &["C"]), story("C", 3, "true", &[])]});
    r.write("prd.json", &prd.to_string());
    r.commit_all("base");
    let result =
        std::env::temp_dir().join(format!("ralph-it-waves-result-{}.json", std::process::id()));
    let out = r.ralph(&[
        "run",
        "--story",
        "A",
        "--prd-file",
        "prd.json",
        "--result",
        result.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(record["outcome"], "already_passing");
    assert_eq!(record["branch"], "ralph/A");
    assert_eq!(record["commit"], Value::Null);
    let _ = std::fs::remove_file(&result);
    assert_eq!(
        r.git(&["branch", "--list", "ralph/*"]),
        "",
        "no branch made"
    );
    let out = r.ralph(&["run", "--story", "B", "--prd-file", "prd.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("depends on C"));
    let out = r.ralph(&["run", "--story", "Z", "--prd-file", "prd.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        r.git(&["status", "--porcelain"]),
        "",
        "nothing written in the project"
    );
}

/// `ralph merge --audit` of `base..tip`, `base` checked out as the push job
/// has it: the exit code and the commit refused (empty when none).
fn audit(r: &Repo, base: &str, tip: &str) -> (Option<i32>, String, Value) {
    audit_with(r, base, tip, &[])
}

/// The same, the story branches offered to `ralph merge` named.
fn audit_with(r: &Repo, base: &str, tip: &str, branches: &[&str]) -> (Option<i32>, String, Value) {
    r.git(&["checkout", "-q", "--detach", base]);
    let mut args = vec![
        "merge",
        "--audit",
        "--base",
        base,
        "--tip",
        tip,
        "--prd-file",
        "prd.json",
        "--json",
    ];
    args.extend(branches);
    let out = r.ralph(&args);
    let report = json(&out);
    let refused = report["refused"]["commit"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (out.status.code(), refused, report)
}

#[test]
fn audit_accepts_ralphs_merges_only_and_names_the_commit_slipped_in() {
    let r = Repo::new("audit");
    let prd = serde_json::json!({"userStories": [
        story("A", 1, "test -f a.txt", &[]),
        story("B", 2, "true", &[]),
        story("C", 3, "true", &[]),
    ]});
    r.write("prd.json", &serde_json::to_string_pretty(&prd).unwrap());
    r.commit_all("base");
    r.branch("ralph/A", &[("a.txt", "a\n")]);
    r.branch("ralph/B", &[("b.txt", "b\n")]);
    let base = r.git(&["rev-parse", "loop"]);
    let out = r.ralph(&[
        "merge",
        "--prd-file",
        "prd.json",
        "--json",
        "ralph/A",
        "ralph/B",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let tip = r.git(&["rev-parse", "loop"]);
    let (code, refused, report) = audit(&r, &base, &tip);
    assert_eq!((code, refused.as_str()), (Some(0), ""), "{report:#}");
    assert_eq!(report["stories"], serde_json::json!(["A", "B"]));

    // Each merge is of its story branch's tip, as offered.
    let (code, _, report) = audit_with(&r, &base, &tip, &["ralph/A", "ralph/B"]);
    assert_eq!(code, Some(0), "{report:#}");
    r.git(&["branch", "-f", "ralph/B", "ralph/A"]);
    let (code, refused, _) = audit_with(&r, &base, &tip, &["ralph/A", "ralph/B"]);
    assert_eq!(
        (code, refused),
        (Some(1), r.git(&["rev-parse", &format!("{tip}~1")]))
    );

    // A merge whose check failed, undone by a revert (`git::undo_merge`'s
    // fallback): ralph's too.
    r.git(&["checkout", "-q", "loop"]);
    r.branch("ralph/C", &[("c.txt", "c\n")]);
    r.git(&["checkout", "-q", "--detach", &tip]);
    r.git(&[
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "ralph: merge story C story C",
        "ralph/C",
    ]);
    r.git(&["revert", "--no-edit", "-m", "1", "HEAD"]);
    let undone = r.git(&["rev-parse", "HEAD"]);
    let (code, refused, report) = audit(&r, &base, &undone);
    assert_eq!((code, refused.as_str()), (Some(0), ""), "{report:#}");
    assert_eq!(report["stories"], serde_json::json!(["A", "B"]));

    // A commit made after `ralph merge` ended (a check's daemon).
    r.git(&["checkout", "-q", "--detach", &tip]);
    r.write("evil.txt", "x\n");
    r.commit_all("ralph: story C passes (merged, its check passed)");
    let extra = r.git(&["rev-parse", "HEAD"]);
    let (code, refused, _) = audit(&r, &base, &extra);
    assert_eq!((code, refused), (Some(1), extra));

    // The last merge amended with a file, then the flip made again.
    r.git(&["checkout", "-q", "--detach", &format!("{tip}~1")]);
    r.write("evil.txt", "x\n");
    r.git(&["add", "evil.txt"]);
    r.git(&["commit", "-q", "--amend", "--no-edit"]);
    let amended = r.git(&["rev-parse", "HEAD"]);
    r.git(&["checkout", &tip, "--", "prd.json"]);
    r.commit_all("ralph: story B passes (merged, its check passed)");
    let top = r.git(&["rev-parse", "HEAD"]);
    let (code, refused, _) = audit(&r, &base, &top);
    assert_eq!((code, refused), (Some(1), amended));

    // After B's merge, C marked passing instead.
    r.git(&["checkout", "-q", "--detach", &format!("{tip}~1")]);
    let text = r.read("prd.json");
    let flipped = text.replacen(
        "\"id\": \"C\",\n      \"passes\": false",
        "\"id\": \"C\",\n      \"passes\": true",
        1,
    );
    assert_ne!(flipped, text);
    r.write("prd.json", &flipped);
    r.commit_all("ralph: story B passes (merged, its check passed)");
    let other = r.git(&["rev-parse", "HEAD"]);
    let (code, refused, report) = audit(&r, &base, &other);
    assert_eq!((code, refused), (Some(1), other), "{report:#}");

    // Not the base checked out, or no such revision: usage.
    r.git(&["checkout", "-q", "loop"]);
    let out = r.ralph(&["merge", "--audit", "--base", &base, "--tip", &tip]);
    assert_eq!(out.status.code(), Some(2));
    let out = r.ralph(&["merge", "--audit", "--base", "nope", "--tip", &tip]);
    assert_eq!(out.status.code(), Some(2));
}
