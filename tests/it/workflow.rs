//! `.github/workflows/ralph-prd.yml` (issue 27), read as YAML: the inputs,
//! secrets and outputs a caller relies on, the plan → story → merge → push
//! shape, the fences (the secret in one step, no write token in a job that
//! runs the agent or a story's code, no token kept in a checkout), the
//! release asset names, and the flags it passes to ralph, which must exist. Then actionlint over every workflow
//! (`$ACTIONLINT`, installed by scripts/install-actionlint; required under
//! CI, skipped elsewhere when missing).

use serde_yaml_ng::Value;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

fn workflow() -> (Value, String) {
    let text =
        std::fs::read_to_string(Path::new(ROOT).join(".github/workflows/ralph-prd.yml")).unwrap();
    (serde_yaml_ng::from_str(&text).unwrap(), text)
}

fn keys(v: &Value) -> Vec<String> {
    v.as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_reusable_workflow_takes_what_the_doc_promises() {
    let (w, _) = workflow();
    let call = &w["on"]["workflow_call"];
    let inputs = keys(&call["inputs"]);
    for want in [
        "prd",
        "loop-branch",
        "parallelism",
        "max-iterations",
        "max-story-cost",
        "max-story-runtime",
        "max-total-cost",
        "max-waves",
        "model",
        "dispatch-workflow",
    ] {
        assert!(
            inputs.contains(&want.to_string()),
            "workflow_call input {want}"
        );
    }
    assert_eq!(call["inputs"]["loop-branch"]["required"], Value::Bool(true));
    assert_eq!(call["inputs"]["parallelism"]["type"], "number");
    assert_eq!(
        keys(&call["secrets"]),
        ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"]
    );
    for out in ["status", "merged", "sent-back"] {
        assert!(
            keys(&call["outputs"]).contains(&out.to_string()),
            "output {out}"
        );
    }
    // Each dispatch input is a call input of the same type (GitHub takes at most 10).
    let dispatch = &w["on"]["workflow_dispatch"]["inputs"];
    assert!(keys(dispatch).len() <= 10);
    for k in keys(dispatch) {
        assert_eq!(
            dispatch[k.as_str()]["type"],
            call["inputs"][k.as_str()]["type"],
            "{k}"
        );
    }
    let group = w["concurrency"]["group"].as_str().unwrap();
    assert!(group.contains("inputs.loop-branch"), "{group}");
    assert_eq!(w["concurrency"]["cancel-in-progress"], Value::Bool(false));
}

#[test]
fn plan_then_a_story_matrix_then_the_merge_with_the_secret_in_one_step() {
    let (w, text) = workflow();
    let jobs = &w["jobs"];
    assert_eq!(keys(jobs), ["plan", "story", "merge", "push"]);
    // Only the push job, which runs nothing of the stories', may write.
    for job in ["story", "merge"] {
        assert_eq!(jobs[job]["permissions"]["contents"], "read", "{job}");
    }
    assert_eq!(jobs["push"]["permissions"]["contents"], "write");
    assert_eq!(w["permissions"]["contents"], "read");
    assert!(
        !text.contains("push --force origin \"refs/ralph/loop"),
        "the loop branch is never forced"
    );
    // The push job audits what the merge job hands it before pushing it.
    let audit = text
        .find("ralph merge --audit")
        .expect("the push job audits");
    let push = text.find("push origin \"refs/ralph/loop").unwrap();
    assert!(audit > text.find("\n  push:").unwrap() && audit < push);
    assert_eq!(jobs["story"]["needs"], "plan");
    let story = &jobs["story"]["strategy"];
    assert_eq!(story["max-parallel"], "${{ inputs.parallelism }}");
    assert_eq!(
        story["matrix"],
        "${{ fromJSON(needs.plan.outputs.matrix) }}"
    );
    assert_eq!(story["fail-fast"], Value::Bool(false));
    assert!(jobs["merge"]["if"].as_str().unwrap().contains("always()"));
    // The secrets reach one step's env, and no job's or the workflow's.
    assert_eq!(text.matches("secrets.ANTHROPIC_API_KEY }}").count(), 1);
    assert_eq!(
        text.matches("secrets.CLAUDE_CODE_OAUTH_TOKEN }}").count(),
        1
    );
    for job in keys(jobs) {
        let env = serde_yaml_ng::to_string(&jobs[job.as_str()]["env"]).unwrap();
        assert!(!env.contains("secrets."), "job {job} env");
        for step in jobs[job.as_str()]["steps"].as_sequence().unwrap() {
            if step["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout"))
            {
                assert_eq!(
                    step["with"]["persist-credentials"],
                    Value::Bool(false),
                    "{job}: {step:?}"
                );
            }
        }
    }
    let run_step = jobs["story"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "run")
        .unwrap();
    assert!(keys(&run_step["env"]).contains(&"ANTHROPIC_API_KEY".to_string()));
    // The release assets as scripts/release-local names them.
    let release =
        std::fs::read_to_string(Path::new(ROOT).join(".github/workflows/release.yml")).unwrap();
    assert!(release.contains("ralph-<version>-<target>.tar.gz.sha256"));
    assert!(text.contains("name=\"ralph-$RALPH_VERSION-$target\""));
    assert!(text.contains("sha256sum -c \"$name.tar.gz.sha256\""));
    assert!(text.contains("releases/download/v$RALPH_VERSION"));
}

/// Every `--flag` the workflow passes to `ralph SUB` is one `ralph SUB --help` lists.
#[test]
fn the_flags_it_passes_to_ralph_exist() {
    let (_, text) = workflow();
    let text: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.to_string() + "\n")
        .collect();
    for sub in ["plan", "run", "merge"] {
        let help = Command::new(RALPH).args([sub, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        let calls: Vec<&str> = text
            .split(&format!("ralph {sub} "))
            .skip(1)
            .map(|rest| rest.split(" -- ").next().unwrap_or(rest))
            .map(|rest| rest.split(" || ").next().unwrap_or(rest))
            .collect();
        assert!(!calls.is_empty(), "the workflow runs ralph {sub}");
        for call in calls {
            for flag in call.split_whitespace().filter(|w| w.starts_with("--")) {
                assert!(help.contains(flag), "ralph {sub} {flag}: not in its --help");
            }
        }
    }
}

#[test]
fn actionlint_passes_on_every_workflow() {
    let bin = std::env::var_os("ACTIONLINT")
        .filter(|b| !b.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(ROOT).join("target/actionlint/bin/actionlint"));
    if !bin.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no actionlint (scripts/install-actionlint)"
        );
        eprintln!(
            "skipped: no actionlint at {} (scripts/install-actionlint)",
            bin.display()
        );
        return;
    }
    let out = Command::new(&bin)
        .args([
            "-no-color",
            ".github/workflows/ralph-prd.yml",
            ".github/workflows/release.yml",
        ])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
