//! The loop's configuration changed between two loops (or while one ran,
//! past the guard) is named at the next start, one line per file; the
//! first loop of a project says nothing (`ralph_core::config_seen`).

use crate::support::*;

const PLANTED: &str = "[gates]\nfull | true\n";

#[test]
fn a_policy_planted_during_a_loop_is_named_at_the_next_start() {
    let p = Project::new("config-seen-planted");
    p.write(".claude/ralph-review/acceptance.md", "Review strictly.\n");
    let (code, out) = p.ralph(&["start", "--session", "S1", "Work", "--max-iterations", "5"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !out.contains("⚠️ .ralph"),
        "the first loop says nothing: {out}"
    );
    assert!(is_block(p.stop("S1", Some("working")).as_ref()));
    // What an interpreter run by the agent writes past the guard.
    p.write(".ralph/command-policy", PLANTED);
    let (code, out) = p.ralph(&["cancel"]);
    assert_eq!(code, 0, "{out}");
    // Between the loops, the user edits a reviewer's instructions.
    p.write(".claude/ralph-review/acceptance.md", "Review kindly.\n");
    let (code, out) = p.ralph(&["start", "--session", "S1", "Work", "--max-iterations", "5"]);
    assert_eq!(code, 0, "{out}");
    let named: Vec<&str> = out.lines().filter(|l| l.starts_with("⚠️ .")).collect();
    assert_eq!(named.len(), 2, "{out}");
    assert!(
        named[0].contains(".claude/ralph-review/acceptance.md changed since the last loop ended"),
        "{out}"
    );
    assert!(
        named[1].contains(".ralph/command-policy appeared while the last loop ran"),
        "{out}"
    );
    assert!(named[1].contains("checks"), "{out}");
    // Said once: the start records what this loop read.
    p.ralph(&["cancel"]);
    let (_, out) = p.ralph(&["start", "--session", "S1", "Work", "--max-iterations", "5"]);
    assert!(!out.contains("⚠️ ."), "{out}");
}

#[test]
fn a_loop_ended_by_its_stop_records_the_end_and_the_prompt_start_names_it() {
    let p = Project::new("config-seen-stop");
    p.prompt("S1", "/ralph:ralph-loop task --max-iterations 2");
    p.stop("S1", Some("one"));
    p.write(".claude/ralph.toml", "notify = \"touch x\"\n");
    let out = p.stop("S1", Some("two"));
    assert!(!is_block(out.as_ref()), "the cap ends it");
    let out = p.prompt("S1", "/ralph:ralph-loop task --max-iterations 2");
    let said = out.map(|v| v.to_string()).unwrap_or_default();
    assert!(
        said.contains(".claude/ralph.toml appeared while the last loop ran"),
        "{said}"
    );
}
