//! Where the loop lives (issue 17): the authoritative state in ralph's data
//! folder, outside the project; `.claude/ralph-loop.local.md` a copy that is
//! restored when it is deleted, edited or replaced, with the agent told and
//! `tamper` in the log. Only the user's commands end a loop.

use crate::support::*;
use ralph_core::state::LoopState;

/// A loop started the way the user starts one, at iteration 1.
fn started(tag: &str) -> Project {
    let p = Project::with_claude_dir(tag);
    p.prompt(
        "s1",
        "/ralph:ralph-loop Tidy the parser. --max-iterations 9",
    );
    assert!(
        p.loop_paths().state.is_file(),
        "the state is in ralph's data folder"
    );
    assert_eq!(p.mirror(), p.state(), "the project holds a copy");
    p
}

fn iteration(p: &Project) -> u64 {
    LoopState::parse(&p.state().expect("state"))
        .expect("parses")
        .iteration
}

fn tamper_entries(p: &Project) -> usize {
    p.log().iter().filter(|e| e["decision"] == "tamper").count()
}

#[test]
fn a_deleted_copy_is_restored_and_the_agent_told() {
    let p = started("mirror-deleted");
    std::fs::remove_file(p.path(STATE_FILE)).unwrap();
    let out = p.stop("s1", Some("working"));
    assert!(is_block(out.as_ref()), "the loop goes on: {out:?}");
    let r = reason(out.as_ref());
    assert!(
        r.starts_with("⚠️ .claude/ralph-loop.local.md was deleted"),
        "{r}"
    );
    assert!(r.contains("Tidy the parser."), "the task is fed too: {r}");
    assert_eq!(iteration(&p), 2);
    assert_eq!(p.mirror(), p.state(), "restored");
    assert_eq!(tamper_entries(&p), 1);
    // Left alone, nothing more is said.
    let r = reason(p.stop("s1", Some("working")).as_ref());
    assert!(!r.contains("⚠️"), "{r}");
    assert_eq!(tamper_entries(&p), 1);
}

#[test]
fn an_edited_copy_changes_nothing() {
    let p = started("mirror-edited");
    // What an agent would write to end its own loop, or skip ahead.
    p.write(
        STATE_FILE,
        "---\nactive: false\niteration: 8\nmax_iterations: 9\n---\n\ndone\n",
    );
    let out = p.stop("s1", Some("working"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(reason(out.as_ref()).contains("was edited"));
    assert_eq!(iteration(&p), 2, "counted from the real state");
    assert_eq!(p.mirror(), p.state());
    assert_eq!(tamper_entries(&p), 1);
}

#[test]
fn a_copy_replaced_by_a_link_is_never_written_through() {
    let p = started("mirror-link");
    p.write("victim.txt", "the user's file\n");
    std::fs::remove_file(p.path(STATE_FILE)).unwrap();
    std::os::unix::fs::symlink(p.path("victim.txt"), p.path(STATE_FILE)).unwrap();
    let out = p.stop("s1", Some("working"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(reason(out.as_ref()).contains("link"));
    assert_eq!(p.read("victim.txt").as_deref(), Some("the user's file\n"));
    let meta = std::fs::symlink_metadata(p.path(STATE_FILE)).unwrap();
    assert!(
        meta.file_type().is_file(),
        "a plain copy took the link's place"
    );
    assert_eq!(p.mirror(), p.state());
}

#[test]
fn a_whole_claude_folder_removed_does_not_end_the_loop() {
    // `git clean -fdx`, `git stash -u`, an agent tidying up: all of `.claude/` goes.
    let p = started("claude-gone");
    std::fs::remove_dir_all(p.path(".claude")).unwrap();
    let out = p.stop("s1", Some("working"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert_eq!(iteration(&p), 2);
    assert_eq!(p.mirror(), p.state());
}

#[test]
fn a_project_file_without_a_state_is_adopted() {
    // The official plugin's setup, or a file the user wrote: only the copy.
    let p = Project::with_claude_dir("adopt");
    p.write(STATE_FILE, state_text(3, 9));
    assert!(!p.loop_paths().state.exists());
    let out = p.stop(SESSION, Some("working"));
    assert!(is_block(out.as_ref()), "{out:?}");
    assert!(
        !reason(out.as_ref()).contains("⚠️"),
        "adoption is no tampering"
    );
    assert!(p.loop_paths().state.is_file(), "adopted");
    assert_eq!(iteration(&p), 4);
    assert_eq!(p.mirror(), p.state());
    assert_eq!(tamper_entries(&p), 0);
}

#[test]
fn status_names_the_state_and_cancel_removes_both() {
    let p = started("status-cancel");
    let (code, out) = p.setup(&["status"]);
    assert_eq!(code, 0, "{out}");
    let state = p.loop_paths().state.display().to_string();
    assert!(out.contains(&state), "status names {state}: {out}");
    let (code, out) = p.setup(&["cancel"]);
    assert_eq!(code, 0, "{out}");
    assert!(p.state().is_none() && p.mirror().is_none());
}

/// A steady turn replaces one file: the state, its seal inside; the copy is
/// overwritten in place (the same file), still the state's text exactly.
#[test]
fn a_turn_renames_the_state_alone_and_rewrites_the_copy_in_place() {
    use std::os::unix::fs::MetadataExt;
    let p = Project::with_claude_dir("one-rename");
    p.prompt(
        "s1",
        "/ralph:ralph-loop Tidy the parser. --max-iterations 30 --max-stalls 0",
    );
    assert!(is_block(p.stop("s1", Some("working")).as_ref()));
    let inode = |f: &std::path::Path| std::fs::metadata(f).unwrap().ino();
    let (state, copy) = (inode(&p.loop_paths().state), inode(&p.path(STATE_FILE)));
    for turn in 0..11 {
        assert!(is_block(
            p.stop("s1", Some(&format!("turn {turn}"))).as_ref()
        ));
        assert_eq!(p.mirror(), p.state(), "turn {turn}");
    }
    assert_eq!(iteration(&p), 13, "iterations 9 and 10 change the length");
    assert_ne!(inode(&p.loop_paths().state), state, "the state by rename");
    assert_eq!(inode(&p.path(STATE_FILE)), copy, "the copy in place");
    let raw = std::fs::read_to_string(p.loop_paths().state).unwrap();
    assert!(
        raw.ends_with(" -->\n") && raw.contains("\n<!-- ralph-seal "),
        "{raw}"
    );
    assert_eq!(tamper_entries(&p), 0);
}

/// A loop started before the seal moved inside the state (a separate
/// `state.md.seal` of digests) goes on, and is written in the new form; a
/// change outside ralph to such a loop still pauses it.
#[test]
fn a_loop_with_its_seal_beside_the_state_goes_on() {
    let p = started("old-seal");
    let paths = p.loop_paths();
    let body = p.state().unwrap();
    // The older form: the text alone, its digest beside it.
    ralph_core::seal::write(&paths.state, body.as_bytes()).unwrap();
    assert_eq!(std::fs::read_to_string(&paths.state).unwrap(), body);
    assert!(is_block(p.stop("s1", Some("working")).as_ref()));
    assert_eq!(iteration(&p), 2);
    assert_eq!(tamper_entries(&p), 0);
    let raw = std::fs::read_to_string(&paths.state).unwrap();
    assert!(
        raw.contains("\n<!-- ralph-seal "),
        "now sealed inside: {raw}"
    );
    assert_eq!(p.mirror(), p.state());
    assert!(is_block(p.stop("s1", Some("working")).as_ref()));
    assert_eq!(iteration(&p), 3);
    // Back to the older form, then changed outside ralph.
    let body = p.state().unwrap();
    ralph_core::seal::write(&paths.state, body.as_bytes()).unwrap();
    std::fs::write(&paths.state, body.replace("iteration: 3", "iteration: 1")).unwrap();
    let out = p.stop("s1", Some("working")).expect("told");
    assert!(!is_block(Some(&out)), "{out}");
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("iteration: 3 -> 1")
    );
    // A state rewritten whole without its seal line: paused too.
    let q = started("seal-line-dropped");
    assert!(is_block(q.stop("s1", Some("working")).as_ref()));
    let body = q.state().unwrap();
    std::fs::write(
        q.loop_paths().state,
        body.replace("iteration: 2", "iteration: 1"),
    )
    .unwrap();
    let out = q.stop("s1", Some("working")).expect("told");
    assert!(!is_block(Some(&out)), "{out}");
}
