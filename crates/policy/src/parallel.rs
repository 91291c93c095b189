//! `--parallel` loops: a worker writes only inside its own git worktree
//! (Claude Code's `.claude/worktrees/agent-…`, the worker's `cwd`), never in
//! the main tree, where its story's work arrives only through ralph's merge,
//! nor in another worker's worktree. The one exception is the loop's shared
//! notes, `progress.txt` in the main tree. Pure.
//!
//! Like the rest of the guard, a rail for a cooperative model: a Bash
//! command that writes is judged by the paths it names (absolute ones, and
//! `..` climbing out of the worktree).

use crate::context::{LoopContext, ToolCall};
use crate::{fresh, protect};
use serde_json::Value;
use std::path::Path;

/// The main tree's file every worker may append to: the loop's notes.
pub(crate) use ralph_core::parallel::NOTES_FILE;

/// Why a parallel worker's call is refused; `None` when it stays inside
/// its worktree (or only reads).
pub(crate) fn outside_worktree(call: &ToolCall, ctx: &LoopContext, tree: &Path) -> Option<String> {
    // One reading of the command: a worker's commands start in its worktree
    // (its hook's `cwd`), and each `cd` of the command moves on from there.
    let bash = match call.tool_name.as_str() {
        "Bash" => {
            let command = call.tool_input.get("command").and_then(Value::as_str)?;
            let writes =
                protect::bash_writes(command, tree, &ctx.root, ctx.home.as_deref(), ctx.windows);
            Some(writes).filter(protect::Writes::any)
        }
        _ => None,
    };
    let write = match &bash {
        Some(_) => "a Bash command that writes files".to_string(),
        None => fresh::main_write(call, ctx)?,
    };
    let homes = ctx.worktree_homes();
    let in_main_tree = tree == ctx.root || !homes.iter().any(|h| tree.starts_with(h));
    if !in_main_tree && ctx.worker_tree_gone {
        return Some(
            "ralph-guard: your worktree is gone: the Ralph loop was cancelled or your story was already merged. Stop now, \
             with a one-line report."
                .to_string(),
        );
    }
    if in_main_tree {
        return Some(format!(
            "ralph-guard: this Ralph loop runs with --parallel: a worker works in its own git worktree, but this one runs in \
             the main tree ({}), so {write} is refused. The main thread must start workers as subagent_type \
             \"ralph:ralph-parallel-worker\" (its file asks for isolation: worktree).",
            tree.display()
        ));
    }
    let notes = ctx.root.join(NOTES_FILE);
    let outside = |p: &Path| !p.starts_with(tree) && p != notes;
    match bash {
        // The notes are every worker's to append to, so they stay a
        // regular file: a link put in their place would carry the next
        // append (this worker's or another's) wherever it points.
        Some(writes) if writes.replaced.contains(&notes) => Some(format!(
            "ralph-guard: this Ralph loop runs with --parallel: the shared notes file {} is written only as a regular \
             file; making a link there, or moving or copying something onto it, is refused. Append your notes to it \
             instead (`echo '...' >> {}`).",
            notes.display(),
            notes.display()
        )),
        // Refs are the repository's, shared by every worktree: moving the
        // loop's branch or deleting another worker's is not work in a
        // worktree, whatever folder git runs in.
        Some(writes) if writes.shared_refs => Some(String::from(
            "ralph-guard: this Ralph loop runs with --parallel: this git command changes refs every worktree shares \
             (another branch, a tag, the loop's branch), so it is refused. Commit your work on your own branch; \
             ralph merges it.",
        )),
        // In the project (the main tree, another worker's worktree): `/tmp`
        // and the like stay free.
        Some(writes) => {
            let first = writes.paths.iter().find(|p| {
                outside(p) && (ctx.in_project(p) || homes.iter().any(|h| p.starts_with(h)))
            })?;
            Some(refusal(&write, first, tree))
        }
        // A file tool: its target as named, with symlinked folders resolved,
        // and a hard link made in the worktree to a protected file of the
        // main tree (`main-prd.json`): each must stay inside.
        None => {
            let target = call.file_target(tree, ctx.home.as_deref(), ctx.windows)?;
            std::iter::once(&target)
                .chain(ctx.file_real_path.iter())
                .chain(ctx.file_aliases.iter())
                .find(|p| outside(p))
                .map(|p| refusal(&write, p, tree))
        }
    }
}

fn refusal(write: &str, target: &Path, tree: &Path) -> String {
    format!(
        "ralph-guard: this Ralph loop runs with --parallel: a worker writes only in its own worktree ({}); {write} reaching \
         {} is refused. Work with paths inside your worktree; your story reaches the main tree when ralph merges it. \
         Append your notes to the main tree's {NOTES_FILE} only.",
        tree.display(),
        target.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> LoopContext {
        LoopContext {
            root: "/p".into(),
            ..LoopContext::default()
        }
    }

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool_name: tool.into(),
            tool_input: input,
        }
    }

    #[test]
    fn a_worker_writes_in_its_worktree_and_the_notes_only() {
        let dir = tempdir();
        let root = dir.clone();
        let tree = root.join(".claude/worktrees/agent-a");
        std::fs::create_dir_all(&tree).unwrap();
        let ctx = LoopContext {
            root: root.clone(),
            ..LoopContext::default()
        };
        let t = tree.to_string_lossy();
        // Written into the commands unquoted: `/` is a separator to Git
        // Bash, `\` an escape.
        let r = root.to_string_lossy().replace('\\', "/");
        let allowed = [
            call(
                "Write",
                json!({"file_path": format!("{t}/src/a.rs"), "content": "x"}),
            ),
            call("Edit", json!({"file_path": format!("{r}/progress.txt")})),
            call("Bash", json!({"command": "echo x > a.txt && git add -A"})),
            call("Bash", json!({"command": format!("cat {r}/prd.json")})),
            call(
                "Bash",
                json!({"command": format!("echo note >> {r}/progress.txt")}),
            ),
            call("Bash", json!({"command": "echo x > /tmp/scratch"})),
            // Each `cd` moves on from the one before (a false deny before).
            call(
                "Bash",
                json!({"command": "mkdir -p src && cd src && touch x && cd .. && git status"}),
            ),
            call(
                "Bash",
                json!({"command": "git add -A && git commit -qm work"}),
            ),
            call("Bash", json!({"command": "git branch --show-current"})),
            call(
                "Bash",
                json!({"command": "git branch scratch && git tag wip"}),
            ),
            call(
                "Bash",
                json!({"command": "git checkout -b try && git log -1"}),
            ),
        ];
        for c in &allowed {
            assert_eq!(outside_worktree(c, &ctx, &tree), None, "{c:?}");
        }
        let refused = [
            call(
                "Write",
                json!({"file_path": format!("{r}/src/a.rs"), "content": "x"}),
            ),
            call(
                "Edit",
                json!({"file_path": format!("{r}/.claude/worktrees/agent-b/a.rs")}),
            ),
            call("Bash", json!({"command": format!("echo x > {r}/a.txt")})),
            call("Bash", json!({"command": "cd ../../.. && touch a"})),
            call(
                "Bash",
                json!({"command": "cd src && cd ../../../.. && touch a"}),
            ),
            call(
                "Bash",
                json!({"command": format!("git -C {r} commit -am x")}),
            ),
            // Forms a path-by-path reading missed (issue 24).
            call(
                "Bash",
                json!({"command": format!("M={r}; sed -i s/false/true/ $M/prd.json")}),
            ),
            call(
                "Bash",
                json!({"command": format!("git --work-tree={r} add -A")}),
            ),
            call(
                "Bash",
                json!({"command": format!("GIT_WORK_TREE={r} git checkout -- .")}),
            ),
            call("Bash", json!({"command": format!("env -C {r} touch a")})),
            call("Bash", json!({"command": format!("cp -t {r} a.txt")})),
            call(
                "Bash",
                json!({"command": format!("tar -xf a.tar --directory={r}")}),
            ),
            call(
                "Bash",
                json!({"command": "git worktree remove -f -f ../agent-b"}),
            ),
            call(
                "Bash",
                json!({"command": format!("ln {r}/prd.json main-prd.json")}),
            ),
            call(
                "Bash",
                json!({"command": "cd .. && echo x > agent-b/a.txt"}),
            ),
            // Refs every worktree shares.
            call(
                "Bash",
                json!({"command": "git update-ref refs/heads/main HEAD"}),
            ),
            call(
                "Bash",
                json!({"command": "git update-ref -d refs/heads/worktree-agent-b"}),
            ),
            call("Bash", json!({"command": "git branch -D worktree-agent-b"})),
            call("Bash", json!({"command": "git branch -f main HEAD"})),
        ];
        for c in &refused {
            assert!(outside_worktree(c, &ctx, &tree).is_some(), "{c:?}");
        }
        // A link made in the same command is followed (`sh -c` too), and
        // the shared notes stay a regular file.
        for c in [
            "ln -s ../../.. up && echo x >> up/src/lib.rs".to_string(),
            "ln -sT ../../.. up; touch up/src/new.rs".to_string(),
            "sh -c 'ln -s ../../.. up' && echo x >> up/src/lib.rs".to_string(),
            "ln -s ../../.. up && cd up && echo x >> src/lib.rs".to_string(),
            "ln -s ../../../src s && echo x > s/../prd.json".to_string(),
            format!("ln -sf src/lib.rs {r}/progress.txt && echo x >> {r}/progress.txt"),
            format!("ln -sf {r}/src/lib.rs {r}/progress.txt"),
            format!("mv notes.txt {r}/progress.txt"),
            format!("cp -P link {r}/progress.txt"),
        ] {
            let c = call("Bash", json!({ "command": c }));
            assert!(outside_worktree(&c, &ctx, &tree).is_some(), "{c:?}");
        }
        for c in [
            "ln -s ../lib src/x",
            "ln -s ../lib src/x && echo y > src/x/f.rs",
            "ln -sf /usr/bin/python3 .venv/python && touch .venv/python",
        ] {
            let c = call("Bash", json!({ "command": c }));
            assert_eq!(outside_worktree(&c, &ctx, &tree), None, "{c:?}");
        }
        // A file tool through a link made in the worktree to the main PRD.
        let linked = LoopContext {
            file_aliases: vec![root.join("prd.json")],
            ..ctx.clone()
        };
        let edit = call("Edit", json!({"file_path": format!("{t}/main-prd.json")}));
        assert!(outside_worktree(&edit, &linked, &tree).is_some());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_worker_in_the_main_tree_or_a_removed_worktree_writes_nothing() {
        let c = call("Bash", json!({"command": "touch a"}));
        assert!(
            outside_worktree(&c, &ctx(), Path::new("/p"))
                .unwrap()
                .contains("main tree")
        );
        let gone = Path::new("/p/.claude/worktrees/agent-gone");
        let removed = LoopContext {
            worker_tree_gone: true,
            ..ctx()
        };
        assert!(
            outside_worktree(&c, &removed, gone)
                .unwrap()
                .contains("is gone")
        );
        let read = call("Bash", json!({"command": "ls"}));
        assert_eq!(outside_worktree(&read, &ctx(), gone), None);
    }

    #[test]
    fn in_a_linked_worktree_a_worker_works_in_the_main_worktrees_folder() {
        // The project is a linked worktree of /main: Claude Code makes the
        // worker's worktree in /main/.claude/worktrees.
        let ctx = LoopContext {
            root: "/wt/linked".into(),
            git_dirs: vec!["/main/.git".into()],
            ..LoopContext::default()
        };
        let tree = Path::new("/main/.claude/worktrees/agent-a");
        let write = |c: &str| call("Bash", json!({ "command": c }));
        assert_eq!(outside_worktree(&write("echo x > a.txt"), &ctx, tree), None);
        assert_eq!(
            outside_worktree(&write("echo n >> /wt/linked/progress.txt"), &ctx, tree),
            None
        );
        for refused in [
            "echo x > /wt/linked/a.txt",
            "echo x > /main/.claude/worktrees/agent-b/a.txt",
        ] {
            assert!(
                outside_worktree(&write(refused), &ctx, tree).is_some(),
                "{refused}"
            );
        }
        // The main worktree itself is not a worker's place.
        let main = Path::new("/main");
        assert!(
            outside_worktree(&write("touch a"), &ctx, main)
                .unwrap()
                .contains("main tree")
        );
    }

    fn tempdir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ralph-policy-parallel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
