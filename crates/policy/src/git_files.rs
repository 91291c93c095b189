//! git's own files, which make git run a program: the repository's config
//! (`core.fsmonitor`, `core.hooksPath`, a `filter.*` driver, a `!` alias,
//! ...), its `hooks/` folder and its `info/` folder (`attributes` names
//! filter and diff drivers). The user's next `git status` or `git commit`,
//! and any git a worker's merge runs, would run what the agent put there.
//! While a loop runs the agent may not set such a key (`git config`, any
//! file: the repository's, `--global`, `-f FILE`), write the config file
//! from Bash (its content cannot be read), change such a key with a file
//! tool, or write anything under `hooks/` or `info/`. Plain keys
//! (`user.email`), reading, and `git -c KEY=V CMD` (it holds for that one
//! command, run by the agent anyway) stay free. A `--parallel` worker is
//! judged the same: its worktree's `.git` is a file pointing into the main
//! repository's, which every worktree shares. Pure.

use ralph_core::git_program_keys::{program_keys, runs_program};
use std::path::{Path, PathBuf};

use crate::context::LoopContext;
use crate::protect::Writes;

/// What a call would do to git's program-running files; the refusal's one
/// reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GitHole {
    /// `git config` sets a key that makes git run a program.
    ProgramKey(String),
    /// `git config --edit`: the keys it sets are not seen.
    ConfigEdit,
    /// A Bash write to the repository's config file.
    ConfigWrite(PathBuf),
    /// A file tool's change adding or changing a program key in it.
    ConfigFileKey { file: PathBuf, key: String },
    /// A write under the repository's `hooks/` folder.
    Hook(PathBuf),
    /// A write under the repository's `info/` folder.
    Info(PathBuf),
}

impl GitHole {
    pub(crate) fn reason(&self) -> String {
        let why = match self {
            GitHole::ProgramKey(key) => format!(
                "`git config {key}` makes git run a program (on the user's next git command, and in ralph's merges)"
            ),
            GitHole::ConfigEdit => {
                "`git config --edit` changes git's configuration in ways the guard cannot read"
                    .to_string()
            }
            GitHole::ConfigWrite(f) => format!(
                "this command writes {}, git's configuration, whose keys can make git run a program",
                f.display()
            ),
            GitHole::ConfigFileKey { file, key } => format!(
                "this edit of {} sets `{key}`, which makes git run a program",
                file.display()
            ),
            GitHole::Hook(p) => format!(
                "{} is in git's hooks folder: git runs what is there on the user's next commit",
                p.display()
            ),
            GitHole::Info(p) => format!(
                "{} is in git's info folder (attributes can name a filter or diff driver; exclude hides files \
                 from `git status`), the repository's own state that no diff shows",
                p.display()
            ),
        };
        format!(
            "ralph-guard: {why}, so it is refused while a Ralph loop runs. Plain keys (`git config user.email ...`) \
             and reading stay free; for one command use `git -c KEY=VALUE ...`; put attributes and ignores in the \
             tree's .gitattributes or .gitignore, where the user sees them in the diff."
        )
    }
}

/// A Bash command's writes (read once, links made in it followed).
pub(crate) fn bash(writes: &Writes, ctx: &LoopContext) -> Option<GitHole> {
    for (key, value) in &writes.config_sets {
        if key == "*" {
            return Some(GitHole::ConfigEdit);
        }
        if runs_program(key, value.as_deref()) {
            return Some(GitHole::ProgramKey(key.clone()));
        }
    }
    writes.paths.iter().find_map(|p| match place(p, ctx)? {
        Place::Config => Some(GitHole::ConfigWrite(p.clone())),
        Place::Hooks => Some(GitHole::Hook(p.clone())),
        Place::Info => Some(GitHole::Info(p.clone())),
    })
}

/// A file tool's target (as named, its real path, its hard links' other
/// names): the config is judged by the keys the change sets; `after` is
/// the file's text after the call, from its text before.
pub(crate) fn file_tool(
    ctx: &LoopContext,
    candidates: &[&Path],
    after: &dyn Fn(Option<&str>) -> Option<String>,
) -> Option<GitHole> {
    for p in candidates {
        match place(p, ctx) {
            Some(Place::Hooks) => return Some(GitHole::Hook(p.to_path_buf())),
            Some(Place::Info) => return Some(GitHole::Info(p.to_path_buf())),
            Some(Place::Config) => {
                let current = ctx.git_config_current.as_deref();
                let before = program_keys(current.unwrap_or_default());
                let Some(after) = after(current) else {
                    // A notebook edit, or an edit the tool itself refuses.
                    continue;
                };
                let added = program_keys(&after)
                    .into_iter()
                    .find(|kv| !before.contains(kv))?;
                return Some(GitHole::ConfigFileKey {
                    file: p.to_path_buf(),
                    key: added.0,
                });
            }
            None => {}
        }
    }
    None
}

enum Place {
    Config,
    Hooks,
    Info,
}

/// Where `path` (absolute, normalised) lies in the repository's git folder.
fn place(path: &Path, ctx: &LoopContext) -> Option<Place> {
    ctx.git_dirs.iter().find_map(|dir| {
        let rest = path.strip_prefix(dir).ok()?;
        let first = rest.components().next()?.as_os_str();
        let depth = rest.components().count();
        let last = rest.file_name()?.to_str()?;
        match first.to_str()? {
            // With `extensions.worktreeConfig`, each worktree's
            // `config.worktree` is read too (`worktrees/NAME/`).
            "config" | "config.worktree" if depth == 1 => Some(Place::Config),
            "worktrees" if depth == 3 && last == "config.worktree" => Some(Place::Config),
            "hooks" => Some(Place::Hooks),
            "info" => Some(Place::Info),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ToolCall;
    use crate::file_tool::new_text;
    use crate::protect::bash_writes;
    use serde_json::json;

    fn ctx() -> LoopContext {
        LoopContext {
            root: "/p".into(),
            cwd: "/p".into(),
            loop_active: true,
            git_dirs: vec!["/p/.git".into()],
            ..LoopContext::default()
        }
    }

    fn bash_hole(cmd: &str, cwd: &str) -> Option<GitHole> {
        let c = ctx();
        bash(&bash_writes(cmd, Path::new(cwd), &c.root, None, false), &c)
    }

    #[test]
    fn keys_that_run_a_program_are_refused_plain_keys_are_not() {
        for cmd in [
            "git config core.fsmonitor 'touch /tmp/x'",
            "git config --local core.hooksPath .githooks",
            "git config --global core.pager 'sh -c evil'",
            "git config core.sshCommand x",
            "git config core.editor vim",
            "git config filter.x.smudge 'sh evil'",
            "git config diff.x.textconv cat",
            "git config diff.external x",
            "git config merge.x.driver 'sh evil %A'",
            "git config alias.st '!sh evil'",
            "git config credential.helper store",
            "git config include.path /tmp/evil",
            "git config --add includeIf.gitdir:/.path /tmp/evil",
            "git config set core.fsmonitor x",
            "git config -f .git/config core.fsmonitor x",
            "git -C sub config core.fsmonitor x",
            "git config --rename-section evil core",
            "sh -c 'git config core.fsmonitor x'",
        ] {
            assert!(
                matches!(bash_hole(cmd, "/p"), Some(GitHole::ProgramKey(_))),
                "{cmd}"
            );
        }
        assert_eq!(
            bash_hole("git config --edit", "/p"),
            Some(GitHole::ConfigEdit)
        );
        for cmd in [
            "git config user.email me@x",
            "git config user.name 'A B'",
            "git config alias.st status",
            "git config --get core.hooksPath",
            "git config core.hooksPath",
            "git config --unset core.fsmonitor",
            "git config --list",
            "git -c core.pager=cat log -1",
            "git commit -am x",
            "git add -A",
            "cat .git/config",
            "cargo test > target/out.txt",
        ] {
            assert_eq!(bash_hole(cmd, "/p"), None, "{cmd}");
        }
    }

    #[test]
    fn the_config_hooks_and_info_are_not_written_from_bash() {
        for cmd in [
            "echo '[core] fsmonitor = x' >> .git/config",
            "sed -i s/a/b/ .git/config",
            "cp evil .git/hooks/pre-commit",
            "echo x > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
            "ln -s ../../evil.sh .git/hooks/pre-commit",
            "echo '* filter=x' >> .git/info/attributes",
            "echo secret >> .git/info/exclude",
            "echo '[core] fsmonitor = x' > .git/config.worktree",
            "echo '[core] pager = x' > .git/worktrees/agent-a/config.worktree",
            // Through a link made in the same command.
            "ln -s .git/hooks h && echo x > h/pre-commit",
        ] {
            assert!(bash_hole(cmd, "/p").is_some(), "{cmd}");
        }
        // From a worker's worktree, into the shared repository.
        let wt = "/p/.claude/worktrees/agent-a";
        assert!(bash_hole("echo x > ../../../.git/hooks/pre-commit", wt).is_some());
        assert!(bash_hole("git config core.fsmonitor x", wt).is_some());
        assert_eq!(bash_hole("git config user.email me@x", wt), None);
        assert_eq!(bash_hole("ln -s ../lib src/x", wt), None);
        assert_eq!(bash_hole("echo x > .gitattributes", "/p"), None);
        assert_eq!(bash_hole("echo x > .git/worktrees/a/locked", "/p"), None);
    }

    #[test]
    fn a_file_tool_may_change_plain_keys_of_the_config() {
        let mut c = ctx();
        c.git_config_current = Some("[core]\n\tbare = false\n[user]\n\tname = a\n".into());
        let file = Path::new("/p/.git/config");
        let edit = |old: &str, new: &str| {
            let call = ToolCall {
                tool_name: "Edit".into(),
                tool_input: json!({"file_path": "/p/.git/config", "old_string": old, "new_string": new}),
            };
            file_tool(&c, &[file], &|cur| new_text(&call, cur))
        };
        assert!(edit("bare = false", "bare = false\n\tfsmonitor = x").is_some());
        assert!(edit("[user]", "[alias]\n\tx = !sh\n[user]").is_some());
        assert_eq!(edit("name = a", "name = b"), None);
        let hook = ToolCall {
            tool_name: "Write".into(),
            tool_input: json!({"file_path": "/p/.git/hooks/pre-commit", "content": "x"}),
        };
        let after = |cur: Option<&str>| new_text(&hook, cur);
        assert!(file_tool(&c, &[Path::new("/p/.git/hooks/pre-commit")], &after).is_some());
        assert!(file_tool(&c, &[Path::new("/p/src/hooks/a")], &after).is_none());
    }

    #[test]
    fn a_config_text_is_read_for_its_program_keys() {
        let keys = program_keys(
            "# c\n[core]\n\tfsmonitor = \"x\"\n[filter \"lfs\"]\n\tclean = git-lfs clean\n[alias]\n\tst = status\n\tx = !sh\n",
        );
        let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["core.fsmonitor", "filter.lfs.clean", "alias.x"]);
    }
}
