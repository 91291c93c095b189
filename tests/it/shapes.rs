//! Repository shapes through the real binaries, without a client (issue
//! 45; the client's matrix is `tests/run/shapes.rs`): the score's commit
//! of the tree in checkouts whose ignore rules keep `.claude/` out, and the
//! refusals at start, each one line naming the file and the fix.

use crate::support::*;

/// The check: fails until `done.txt` holds ok.
const CHECK: &str = "grep -q ok done.txt\n";

/// A committed project with `ignores` (path, text) written first, where a
/// client's sandbox left its mount points (`.claude/agents`, `.bashrc`:
/// empty files outside the sandbox), scored by its check.
fn scored_project(tag: &str, ignores: &[(&str, &str)]) -> Project {
    let p = Project::new(tag);
    p.git_init();
    for (file, text) in ignores {
        p.write(file, text);
    }
    p.write("check.sh", CHECK);
    git(&p.root, &["add", "-A"]);
    git(
        &p.root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start",
        ],
    );
    p.write(".claude/agents", "");
    p.write(".bashrc", "");
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop Make the check pass --verify \"sh check.sh\" --max-iterations 9",
    );
    assert!(
        message(out.as_ref()).contains("Ralph loop started"),
        "{out:?}"
    );
    p
}

#[test]
fn the_scores_commit_goes_through_whatever_the_ignore_rules_keep_out() {
    let shapes: [(&str, &[(&str, &str)]); 4] = [
        ("ign-claude", &[(".gitignore", ".claude/\n")]),
        ("ign-info", &[(".git/info/exclude", ".claude\n.bashrc\n")]),
        (
            "ign-star",
            &[(".gitignore", "*\n!*.txt\n!*.sh\n!.gitignore\n")],
        ),
        (
            "ign-local",
            &[(
                ".gitignore",
                ".claude/settings.local.json\n.claude/agents\n",
            )],
        ),
    ];
    for (tag, ignores) in shapes {
        let p = scored_project(tag, ignores);
        p.write("done.txt", "ok\n");
        p.guard_saw("s1", "Write");
        let out = p.stop("s1", Some("wrote done.txt"));
        assert!(reason(out.as_ref()).contains("Score"), "{tag}: {out:?}");
        let scored = p.log().last().cloned().unwrap();
        assert_eq!(scored["score"]["best"], true, "{tag}: {scored}");
        // The tree, as ralph committed it: the work, not the mount points.
        let files = git(
            &p.root,
            &["ls-tree", "-r", "--name-only", "refs/ralph/best"],
        );
        let files: Vec<&str> = files.lines().collect();
        assert!(files.contains(&"done.txt"), "{tag}: {files:?}");
        for left_out in [".claude/agents", ".bashrc"] {
            assert!(!files.contains(&left_out), "{tag}: {files:?}");
        }
    }
}

#[test]
fn a_check_script_with_windows_line_endings_is_refused_at_start() {
    let p = Project::new("crlf-check");
    p.git_init();
    p.write("check.sh", "grep -q ok done.txt\r\n");
    p.write(
        "prd.json",
        "{\"userStories\": [\r\n {\"id\": \"US-1\", \"title\": \"One\", \"priority\": 1, \"passes\": false, \"verify\": \"sh check.sh\"}\r\n]}\r\n",
    );
    let refusal = "ralph: check.sh has Windows line endings (CRLF), which sh cannot run, so the check `sh check.sh` would fail whatever the work: convert it to LF (sed -i 's/\\r$//' check.sh), then start again";
    for start in [
        "/ralph:ralph-loop Fix it --verify \"sh check.sh\" --max-iterations 3",
        "/ralph:ralph-loop --prd-file prd.json --max-iterations 3",
    ] {
        let out = p.prompt("s1", start);
        assert_eq!(reason(out.as_ref()), refusal, "{start}");
        assert_eq!(p.state(), None, "{start}");
    }
    let (code, said) = p.ralph(&["start", "Fix it", "--verify", "sh check.sh"]);
    assert_eq!((code, said.trim()), (2, refusal));
    // Converted, the same PRD (CRLF itself: JSON reads it) starts.
    p.write("check.sh", "grep -q ok done.txt\n");
    let out = p.prompt(
        "s1",
        "/ralph:ralph-loop --prd-file prd.json --max-iterations 3",
    );
    assert!(
        message(out.as_ref()).contains("Ralph loop started"),
        "{out:?}"
    );
}

#[test]
fn a_parallel_loop_below_the_top_of_its_repository_is_refused_at_start() {
    let top = Project::new("par-below");
    top.git_init();
    top.write("app/prd.json", "{\"userStories\": [{\"id\": \"US-1\", \"title\": \"One\", \"priority\": 1, \"passes\": false}]}\n");
    git(&top.root, &["add", "-A"]);
    git(
        &top.root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start",
        ],
    );
    let app = Project {
        root: top.path("app"),
        cwd: top.path("app"),
    };
    let out = app.prompt("s1", "/ralph:ralph-loop --prd-file prd.json --parallel 2");
    assert_eq!(
        reason(out.as_ref()),
        format!(
            "ralph: --parallel needs the project at the top of its git repository: Claude Code makes each worker's worktree of the whole repository in {0}/.claude/worktrees and starts the worker at its top, not in app: start Claude Code in {0} (the stories' checks then run there)",
            top.root.display()
        )
    );
    assert_eq!(app.state(), None);
    // One story at a time works there.
    let out = app.prompt("s1", "/ralph:ralph-loop --prd-file prd.json");
    assert!(
        message(out.as_ref()).contains("Ralph loop started"),
        "{out:?}"
    );
}
