//! `--parallel` at hook level, with real git and no client: a worker's
//! worktree (made here as Claude Code makes it) is recorded at
//! `SubagentStart`; at `SubagentStop` its claimed story is committed, merged
//! into the main tree's branch and checked there before it is marked
//! passing; a failing check or a conflict sends it back with the new base
//! merged in; an unclaimed worktree is removed; a cancel removes every
//! worktree and branch; the guard keeps a worker inside its worktree.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

pub(crate) const WORKER: &str = "ralph:ralph-parallel-worker";

const PRD: &str = r#"{"project": "demo", "userStories": [
  {"id": "US-1", "title": "One", "priority": 1, "passes": false, "verify": "grep -q one one.txt"},
  {"id": "US-2", "title": "Two", "priority": 2, "passes": false, "verify": "grep -q two one.txt"}
]}
"#;

/// A committed project running a `--parallel 2` loop owned by `s1`.
pub(crate) fn parallel_loop(tag: &str) -> Project {
    let p = Project::new(tag);
    p.git_init();
    p.write("prd.json", PRD);
    p.write("one.txt", "base\n");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let out = p.prompt("s1", "/ralph:ralph-loop --prd-file prd.json --parallel 2");
    let started = message(out.as_ref());
    assert!(started.contains("Parallel (--parallel 2)"), "{started}");
    assert!(p.state().unwrap().contains("\nparallel: 2\n"));
    p
}

/// A worker's worktree, as Claude Code makes it, and its `SubagentStart`.
pub(crate) fn worker(p: &Project, agent: &str, story: &str) -> PathBuf {
    let tree = p.path(&format!(".claude/worktrees/agent-{agent}"));
    git(
        &p.root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &format!("worktree-agent-{agent}"),
            &tree.to_string_lossy(),
        ],
    );
    let transcript = p.path(&format!("agent-{agent}.jsonl"));
    let task = format!("Work story {story} of {}/prd.json.", p.root.display());
    std::fs::write(
        &transcript,
        format!(
            "{}\n",
            json!({"type": "user", "message": {"role": "user", "content": task}})
        ),
    )
    .unwrap();
    let start = json!({
        "session_id": "s1", "cwd": tree, "hook_event_name": "SubagentStart",
        "agent_id": agent, "agent_type": WORKER,
    });
    assert_eq!(run_json(STOP, &[], &p.root, &start.to_string()), None);
    tree
}

/// The main thread's Stop while worker `agent` still works on `story`.
pub(crate) fn main_stop_while_running(
    p: &Project,
    said: &str,
    agent: &str,
    story: &str,
) -> Option<Value> {
    let stop = json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": said,
        "background_tasks": [{"id": agent, "type": "subagent", "status": "running",
                              "description": format!("story {story}"), "agent_type": WORKER}],
    });
    run_json(STOP, &[], &p.root, &stop.to_string())
}

/// The main thread's Stop once no worker runs.
fn main_stop_idle(p: &Project, said: &str) -> Option<Value> {
    let stop = json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": said,
        "background_tasks": [],
    });
    run_json(STOP, &[], &p.root, &stop.to_string())
}

fn worker_stop(p: &Project, agent: &str, tree: &Path, said: &str) -> Option<Value> {
    let v = json!({
        "session_id": "s1", "cwd": tree, "hook_event_name": "SubagentStop",
        "agent_id": agent, "agent_type": WORKER, "stop_hook_active": false,
        "agent_transcript_path": p.path(&format!("agent-{agent}.jsonl")),
        "last_assistant_message": said, "background_tasks": [],
    });
    run_json(STOP, &[], &p.root, &v.to_string())
}

/// The first log line with this decision and reason.
pub(crate) fn logged(p: &Project, decision: &str, reason: &str) -> Option<Value> {
    p.log()
        .into_iter()
        .find(|e| e["decision"] == decision && e["reason"] == reason)
}

fn board(p: &Project) -> Value {
    let text = std::fs::read_to_string(p.loop_paths().board).unwrap_or_else(|_| "{}".into());
    serde_json::from_str(&text).unwrap()
}

fn passes(p: &Project, story: &str) -> bool {
    let prd: Value = serde_json::from_str(&p.read("prd.json").unwrap()).unwrap();
    prd["userStories"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["id"] == story && s["passes"] == true)
}

pub(crate) fn branches(p: &Project) -> Vec<String> {
    git(&p.root, &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_claimed_story_is_merged_checked_and_only_then_marked_passing() {
    let p = parallel_loop("par-merge");
    let tree = worker(&p, "a1", "US-1");
    let lane = &board(&p)["lanes"]["a1"];
    assert_eq!(lane["worktree"], json!(tree), "{lane}");
    assert_eq!(lane["status"], "working");
    std::fs::write(tree.join("one.txt"), "one\n").unwrap();
    // The mount points a sandboxed command leaves until the client takes
    // them away: never the work's.
    std::fs::create_dir_all(tree.join(".claude")).unwrap();
    std::fs::write(tree.join(".claude/commands"), "").unwrap();
    std::fs::write(tree.join(".bashrc"), "").unwrap();
    // The worker also marks the story passing in its copy of the PRD: ralph
    // marks it in the main tree itself (any other change to the PRD is
    // refused: `a_workers_change_to_what_the_loop_fixed_is_sent_back`).
    std::fs::write(
        tree.join("prd.json"),
        PRD.replacen(
            "\"priority\": 1, \"passes\": false",
            "\"priority\": 1, \"passes\": true",
            1,
        ),
    )
    .unwrap();
    let out = worker_stop(&p, "a1", &tree, "Wrote one.txt.\nSTORY DONE: US-1");
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(
        message(out.as_ref()).contains("story US-1 merged"),
        "{out:?}"
    );
    assert_eq!(p.read("one.txt").as_deref(), Some("one\n"));
    assert!(passes(&p, "US-1") && !passes(&p, "US-2"));
    let log = git(&p.root, &["log", "--format=%s"]);
    assert!(log.contains("ralph: merge story US-1 One"), "{log}");
    assert!(log.contains("ralph: story US-1 One"), "{log}");
    let merged = git(&p.root, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        merged.contains("one.txt")
            && !merged.contains(".bashrc")
            && !merged.contains(".claude/commands"),
        "{merged}"
    );
    // The PRD in the story's commit was the committed one: only ralph's edit shows.
    assert!(p.read("prd.json").unwrap().contains("\"userStories\""));
    assert_eq!(board(&p)["merged"], json!(["US-1"]));
    assert!(logged(&p, "merge", "story_merged").is_some());
    // The worktree goes once the client counts its worker ended: removed
    // while it still runs, it broke the other agents' sandboxed commands.
    assert!(tree.exists(), "kept while the client runs its worker");
    assert_eq!(board(&p)["let_go"]["a1"]["branch"], "ralph/US-1");
    main_stop_while_running(&p, "Waiting.", "a1", "US-1");
    assert!(tree.exists(), "kept while a Stop sees its worker run");
    main_stop_idle(&p, "US-1 is merged.");
    assert!(!tree.exists(), "the merged worktree is removed");
    assert_eq!(branches(&p), ["master"]);
    assert!(board(&p).get("let_go").is_none(), "{}", board(&p));
    assert!(logged(&p, "cleanup", "worktrees_removed").is_none());
}

#[test]
fn a_check_that_fails_on_the_merged_tree_undoes_the_merge_and_sends_the_story_back() {
    let p = parallel_loop("par-check");
    let before = git(&p.root, &["rev-parse", "HEAD"]);
    let tree = worker(&p, "a2", "US-2");
    std::fs::write(tree.join("one.txt"), "not it\n").unwrap();
    let out = worker_stop(&p, "a2", &tree, "STORY DONE: US-2");
    assert!(is_block(out.as_ref()), "{out:?}");
    let why = reason(out.as_ref());
    assert!(
        why.contains("story US-2 is sent back (attempt 1/5)"),
        "{why}"
    );
    assert!(why.contains("grep -q two one.txt"), "{why}");
    assert_eq!(git(&p.root, &["rev-parse", "HEAD"]), before, "merge undone");
    assert_eq!(p.read("one.txt").as_deref(), Some("base\n"));
    assert!(!passes(&p, "US-2"));
    assert!(tree.exists(), "the worker keeps its worktree");
    assert_eq!(board(&p)["lanes"]["a2"]["status"], "sent_back");
    assert_eq!(board(&p)["lanes"]["a2"]["branch"], "ralph/US-2");
    // Fixed, claimed again: merged.
    std::fs::write(tree.join("one.txt"), "two\n").unwrap();
    let out = worker_stop(&p, "a2", &tree, "STORY DONE: US-2");
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(passes(&p, "US-2"));
    assert_eq!(p.read("one.txt").as_deref(), Some("two\n"));
}

#[test]
fn a_conflict_leaves_the_main_branch_alone_and_hands_the_worker_the_markers() {
    let p = parallel_loop("par-conflict");
    let t1 = worker(&p, "b1", "US-1");
    let t2 = worker(&p, "b2", "US-2");
    std::fs::write(t1.join("one.txt"), "one\n").unwrap();
    std::fs::write(t2.join("one.txt"), "two\n").unwrap();
    assert!(!is_block(
        worker_stop(&p, "b1", &t1, "STORY DONE: US-1").as_ref()
    ));
    let merged = git(&p.root, &["rev-parse", "HEAD"]);
    let out = worker_stop(&p, "b2", &t2, "STORY DONE: US-2");
    let why = reason(out.as_ref());
    assert!(why.contains("conflict markers in: one.txt"), "{why}");
    assert_eq!(git(&p.root, &["rev-parse", "HEAD"]), merged);
    assert_eq!(
        git(&p.root, &["status", "--porcelain", "--", "one.txt"]),
        ""
    );
    let text = std::fs::read_to_string(t2.join("one.txt")).unwrap();
    assert!(
        text.contains("<<<<<<<") && text.contains("one") && text.contains("two"),
        "{text}"
    );
    // Claimed with the markers still in: sent back again, nothing merged.
    let out = worker_stop(&p, "b2", &t2, "STORY DONE: US-2");
    assert!(reason(out.as_ref()).contains("attempt 2/5"), "{out:?}");
    assert_eq!(git(&p.root, &["rev-parse", "HEAD"]), merged);
    // Resolved: merged on top of US-1.
    std::fs::write(t2.join("one.txt"), "one two\n").unwrap();
    assert!(!is_block(
        worker_stop(&p, "b2", &t2, "STORY DONE: US-2").as_ref()
    ));
    assert_eq!(p.read("one.txt").as_deref(), Some("one two\n"));
    assert!(passes(&p, "US-1") && passes(&p, "US-2"));
    main_stop_idle(&p, "Both merged.");
    assert_eq!(branches(&p), ["master"]);
}

#[test]
fn an_unclaimed_worktree_goes_and_a_cancel_removes_every_worktree_and_branch() {
    let p = parallel_loop("par-cancel");
    let t1 = worker(&p, "c1", "US-1");
    std::fs::write(t1.join("one.txt"), "half\n").unwrap();
    let out = worker_stop(&p, "c1", &t1, "I could not finish.");
    assert!(message(out.as_ref()).contains("goes out again"), "{out:?}");
    assert!(board(&p)["lanes"].get("c1").is_none(), "{}", board(&p));
    assert_eq!(p.read("one.txt").as_deref(), Some("base\n"));
    let t2 = worker(&p, "c2", "US-1");
    let t3 = worker(&p, "c3", "US-2");
    // The user's own branch and worktree are not ralph's.
    git(&p.root, &["branch", "mine"]);
    let (code, said) = p.setup(&["cancel"]);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("removed 2 of the loop's worker worktrees"),
        "{said}"
    );
    assert!(!t1.exists() && !t2.exists() && !t3.exists());
    assert_eq!(branches(&p), ["master", "mine"]);
    assert!(!p.loop_paths().board.exists());
}

#[test]
fn the_guard_keeps_a_worker_in_its_worktree_and_the_main_thread_out_of_the_work() {
    let p = parallel_loop("par-guard");
    let tree = worker(&p, "d1", "US-1");
    let call = |cwd: &Path, agent: Option<&str>, tool: &str, input: Value| {
        let mut v = json!({"session_id": "s1", "cwd": cwd, "hook_event_name": "PreToolUse",
                           "tool_name": tool, "tool_input": input});
        if let Some(a) = agent {
            v["agent_id"] = json!("d1");
            v["agent_type"] = json!(a);
        }
        run_json(GUARD, &[], &p.root, &v.to_string())
    };
    let denied = |o: Option<Value>| {
        o.is_some_and(|o| o["hookSpecificOutput"]["permissionDecision"] == "deny")
    };
    let inside = json!({"file_path": tree.join("a.rs"), "content": "x"});
    let main = json!({"file_path": p.path("a.rs"), "content": "x"});
    assert!(!denied(call(&tree, Some(WORKER), "Write", inside.clone())));
    assert!(denied(call(&tree, Some(WORKER), "Write", main.clone())));
    let notes = json!({"command": format!("echo done >> {}/progress.txt", p.root.display())});
    assert!(!denied(call(&tree, Some(WORKER), "Bash", notes)));
    let escape = json!({"command": format!("cp a.rs {}/a.rs", p.root.display())});
    assert!(denied(call(&tree, Some(WORKER), "Bash", escape)));
    // A worker that runs in the main tree (no worktree) writes nothing.
    assert!(denied(call(&p.root, Some(WORKER), "Write", main.clone())));
    // The main thread and a plain --fresh worker only dispatch here.
    let out = call(&p.root, None, "Write", main.clone());
    let why = out.unwrap()["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains(WORKER), "{why}");
    assert!(denied(call(
        &p.root,
        Some("ralph:ralph-worker"),
        "Write",
        main
    )));
}

#[test]
fn the_next_start_removes_what_a_crashed_loop_left() {
    let p = parallel_loop("par-crash");
    let tree = worker(&p, "e1", "US-1");
    std::fs::write(tree.join("one.txt"), "half done\n").unwrap();
    // The session died: its loop's state is gone, its worktree is not.
    std::fs::remove_file(p.loop_paths().state).unwrap();
    std::fs::remove_file(p.path(STATE_FILE)).unwrap();
    assert!(tree.exists());
    let out = p.prompt("s2", "/ralph:ralph-loop --prd-file prd.json --parallel 2");
    assert!(
        message(out.as_ref()).contains("Ralph loop started"),
        "{out:?}"
    );
    assert!(!tree.exists(), "the crashed loop's worktree is removed");
    assert_eq!(branches(&p), ["master"]);
    assert_eq!(p.read("one.txt").as_deref(), Some("base\n"));
    assert!(logged(&p, "cleanup", "worktrees_removed").is_some());
}

#[test]
fn a_parallel_loop_needs_a_prd_and_a_commit() {
    let p = Project::new("par-refused");
    p.git_init();
    p.write("prd.json", PRD);
    let out = p.prompt("s1", "/ralph:ralph-loop --prd-file prd.json --parallel 2");
    assert!(
        reason(out.as_ref()).contains("needs a git repository with at least one commit"),
        "{out:?}"
    );
    let out = p.prompt("s1", "/ralph:ralph-loop Fix it --parallel 2");
    assert!(
        reason(out.as_ref()).contains("give --prd-file PATH too"),
        "{out:?}"
    );
    assert_eq!(p.state(), None);
}

#[test]
fn status_and_the_status_line_name_the_stories_in_flight() {
    let p = parallel_loop("par-status");
    let t1 = worker(&p, "f1", "US-1");
    let _t2 = worker(&p, "f2", "US-2");
    // The main thread's turn ends while both run: the Stop waits, and names them.
    let running = |agent: &str, story: &str| {
        json!({"id": agent, "type": "subagent", "status": "running",
               "description": format!("story {story}"), "agent_type": WORKER})
    };
    let stop = json!({
        "session_id": "s1", "cwd": p.root, "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "Dispatched.",
        "background_tasks": [running("f1", "US-1"), running("f2", "US-2")],
    });
    let out = run_json(STOP, &[], &p.root, &stop.to_string());
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert_eq!(
        message(out.as_ref()),
        "⏳ Ralph: 2 workers at work (US-1, US-2) · 0/2 stories pass"
    );
    assert_eq!(p.log().last().unwrap()["reason"], "worker_running");
    let (_, status) = p.setup(&["status"]);
    assert!(
        status.contains("in flight: US-1 (worktree-agent-f1), US-2 (worktree-agent-f2)"),
        "{status}"
    );
    assert!(status.contains("merged:    none"), "{status}");
    let line = Command::new(SETUP)
        .arg("statusline")
        .current_dir(&p.root)
        .env("CLAUDE_PROJECT_DIR", &p.root)
        .env("RALPH_DATA_DIR", p.data_dir())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&line.stdout);
    assert!(line.contains("US-1+US-2 0/2"), "{line}");
    // One merged: status says so.
    std::fs::write(t1.join("one.txt"), "one\n").unwrap();
    assert!(!is_block(
        worker_stop(&p, "f1", &t1, "STORY DONE: US-1").as_ref()
    ));
    let (_, status) = p.setup(&["status"]);
    assert!(status.contains("merged:    US-1"), "{status}");
    assert!(status.contains("in flight: US-2"), "{status}");
}

#[test]
fn a_stop_removes_the_worktree_of_a_worker_that_no_longer_runs() {
    let p = parallel_loop("par-orphan");
    let dead = worker(&p, "g1", "US-1");
    let alive = worker(&p, "g2", "US-2");
    // The client was killed while g1 worked; `--continue` goes on, g2 runs.
    let out = main_stop_while_running(&p, "Resumed.", "g2", "US-2");
    // US-1 goes out again at once (one place is free).
    assert!(
        reason(out.as_ref()).contains("description \"story US-1\""),
        "{out:?}"
    );
    assert!(!dead.exists(), "the dead worker's worktree is removed");
    assert!(alive.exists(), "the running worker's is not");
    assert_eq!(branches(&p), ["master", "worktree-agent-g2"]);
    let cleanup = logged(&p, "cleanup", "worktrees_removed").unwrap();
    // No Stop saw it run, so its story was never named to ralph: its agent id.
    assert!(
        cleanup["message"].as_str().unwrap().contains("(g1)"),
        "{cleanup}"
    );
}

#[test]
fn the_users_uncommitted_changes_are_never_merged_over() {
    let p = parallel_loop("par-dirty");
    let tree = worker(&p, "h1", "US-1");
    std::fs::write(tree.join("one.txt"), "one\n").unwrap();
    // The user edits the same file in the main tree meanwhile.
    p.write("one.txt", "the user's edit\n");
    let before = git(&p.root, &["rev-parse", "HEAD"]);
    let out = worker_stop(&p, "h1", &tree, "STORY DONE: US-1");
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(
        reason(out.as_ref()).contains("uncommitted changes in the main tree to one.txt"),
        "{out:?}"
    );
    assert!(
        message(out.as_ref())
            .contains("your uncommitted changes to one.txt block the merge of story US-1"),
        "{out:?}"
    );
    assert_eq!(p.read("one.txt").as_deref(), Some("the user's edit\n"));
    assert_eq!(git(&p.root, &["rev-parse", "HEAD"]), before);
    assert_eq!(p.log().last().unwrap()["reason"], "merge_blocked");
    // The user puts it away: the next claim merges.
    git(&p.root, &["checkout", "--", "one.txt"]);
    let out = worker_stop(&p, "h1", &tree, "STORY DONE: US-1");
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert_eq!(p.read("one.txt").as_deref(), Some("one\n"));
    assert!(passes(&p, "US-1"));
}

#[test]
fn a_merge_cut_short_is_aborted_by_the_next_holder_of_the_merge_queue() {
    let p = parallel_loop("par-cut");
    p.write("one.txt", "one\n");
    git(&p.root, &["commit", "-qam", "one"]);
    git(&p.root, &["branch", "side", "HEAD~1"]);
    let side_tree = p.path("side-tree");
    git(
        &p.root,
        &[
            "worktree",
            "add",
            "-q",
            &side_tree.to_string_lossy(),
            "side",
        ],
    );
    std::fs::write(side_tree.join("one.txt"), "other\n").unwrap();
    git(&side_tree, &["commit", "-qam", "other"]);
    git(
        &p.root,
        &["worktree", "remove", "-f", &side_tree.to_string_lossy()],
    );
    // A merge of ralph's was under way when its hook was killed: the tree is
    // left mid-merge, conflict markers and all, and the marker says so.
    let head = git(&p.root, &["rev-parse", "HEAD"]);
    let _ = Command::new("git")
        .args(["merge", "-q", "side"])
        .current_dir(&p.root)
        .output();
    assert!(p.read("one.txt").unwrap().contains("<<<<<<<"));
    std::fs::write(p.loop_paths().merging, format!("US-0 {head}")).unwrap();
    let tree = worker(&p, "i1", "US-1");
    let out = worker_stop(&p, "i1", &tree, "STORY DONE: US-1");
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert_eq!(p.read("one.txt").as_deref(), Some("one\n"));
    assert!(passes(&p, "US-1"));
    assert!(!p.loop_paths().merging.exists());
    assert!(!p.path(".git/MERGE_HEAD").exists());
    let cut = logged(&p, "cleanup", "merge_interrupted").unwrap();
    assert!(
        cut["message"].as_str().unwrap().contains("aborted"),
        "{cut}"
    );
}

#[test]
fn a_workers_change_to_what_the_loop_fixed_is_sent_back() {
    let p = Project::new("par-refuse");
    p.git_init();
    p.write(
        "prd.json",
        PRD.replacen("grep -q one one.txt", "sh check.sh", 1),
    );
    p.write("check.sh", "grep -q one one.txt\n");
    p.write("one.txt", "base\n");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    p.prompt("s1", "/ralph:ralph-loop --prd-file prd.json --parallel 2");
    assert!(
        p.state()
            .unwrap()
            .contains(r#"pins: {"check.sh":"sh check.sh"}"#)
    );
    let tree = worker(&p, "a1", "US-1");
    // A weakened check, a planted notify and a reworded story: not merged.
    std::fs::write(tree.join("check.sh"), "exit 0\n").unwrap();
    std::fs::create_dir_all(tree.join(".claude")).unwrap();
    std::fs::write(
        tree.join(".claude/ralph.toml"),
        "notify = \"touch PLANTED\"\n",
    )
    .unwrap();
    let out = worker_stop(&p, "a1", &tree, "STORY DONE: US-1");
    let why = reason(out.as_ref());
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(
        why.contains("check.sh (pinned: part of the check `sh check.sh`)")
            && why.contains(".claude/ralph.toml (the loop's configuration, fixed at its start)"),
        "{why}"
    );
    assert!(logged(&p, "merge", "merge_refused").is_some());
    assert!(!passes(&p, "US-1"));
    assert_eq!(p.read("check.sh").as_deref(), Some("grep -q one one.txt\n"));
    assert!(p.read(".claude/ralph.toml").is_none());
    // The worker puts them back and does the work; a PRD edit beyond
    // `passes` is refused too.
    git(&tree, &["rm", "-q", "--cached", ".claude/ralph.toml"]);
    std::fs::remove_file(tree.join(".claude/ralph.toml")).unwrap();
    std::fs::write(tree.join("check.sh"), "grep -q one one.txt\n").unwrap();
    std::fs::write(tree.join("one.txt"), "one\n").unwrap();
    std::fs::write(tree.join("prd.json"), "{}").unwrap();
    let out = worker_stop(&p, "a1", &tree, "STORY DONE: US-1");
    assert!(
        reason(out.as_ref()).contains("prd.json (the PRD: ralph marks the story passing itself"),
        "{out:?}"
    );
    git(&tree, &["checkout", "HEAD", "--", "prd.json"]);
    // The pinned script changed in the main tree meanwhile (an interpreter):
    // the check on the merged tree runs the pinned one.
    p.write("check.sh", "exit 1\n");
    let out = worker_stop(&p, "a1", &tree, "STORY DONE: US-1");
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(passes(&p, "US-1"));
    assert_eq!(p.read("check.sh").as_deref(), Some("grep -q one one.txt\n"));
    assert!(logged(&p, "pin", "pin_restored").is_some());
    assert!(!p.path("PLANTED").exists());
}

#[test]
fn a_story_whose_worker_deleted_a_test_of_the_suite_is_sent_back() {
    let p = Project::new("par-suite");
    p.git_init();
    let prd = r#"{"project": "demo", "userStories": [
  {"id": "US-1", "title": "One", "priority": 1, "passes": false, "verify": "sh check.sh"}
]}
"#;
    p.write("prd.json", prd);
    p.write(
        "check.sh",
        "cat results.txt\n! grep -q FAILED results.txt\n",
    );
    let results = |b: &str| {
        let mut out = String::from("tests/t.py::test_a PASSED [ 50%]\n");
        if !b.is_empty() {
            out.push_str(&format!("tests/t.py::test_b {b} [100%]\n"));
        }
        let summary = match b {
            "FAILED" => "1 failed, 1 passed",
            "PASSED" => "2 passed",
            _ => "1 passed",
        };
        out.push_str(&format!("===== {summary} in 0.01s =====\n"));
        out
    };
    p.write("results.txt", results("FAILED"));
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let out = p.prompt("s1", "/ralph:ralph-loop --prd-file prd.json --parallel 2");
    assert!(message(out.as_ref()).contains("Parallel (--parallel 2)"));
    let tree = worker(&p, "a1", "US-1");
    // The worker makes the check pass by deleting the failing test.
    std::fs::write(tree.join("results.txt"), results("")).unwrap();
    let out = worker_stop(&p, "a1", &tree, "STORY DONE: US-1");
    assert!(is_block(out.as_ref()), "{out:?}");
    let why = reason(out.as_ref());
    assert!(why.contains("tests of the suite are gone"), "{why}");
    assert!(
        why.contains("`tests/t.py::test_b` existed at the start and is gone now"),
        "{why}"
    );
    assert!(!passes(&p, "US-1"));
    assert!(logged(&p, "merge", "tests_gone").is_some());
    // Hidden behind a second summary (words that do not add up): the run
    // counts no test, which hides the suite: sent back too.
    let hidden = format!("{}===== 2 passed in 0.01s =====\n", results(""));
    std::fs::write(tree.join("results.txt"), hidden).unwrap();
    let out = worker_stop(&p, "a1", &tree, "STORY DONE: US-1");
    assert!(is_block(out.as_ref()), "{out:?}");
    let why = reason(out.as_ref());
    assert!(
        why.contains("`sh check.sh` had 2 tests in the suite, and its output counts none now"),
        "{why}"
    );
    assert!(!passes(&p, "US-1"));
    // Fixed for real: merged.
    std::fs::write(tree.join("results.txt"), results("PASSED")).unwrap();
    let out = worker_stop(&p, "a1", &tree, "STORY DONE: US-1");
    assert!(!is_block(out.as_ref()), "{out:?}");
    assert!(passes(&p, "US-1"));
}
