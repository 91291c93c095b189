//! The guard's decision on one tool call ([`decide`]), over the rules below
//! it: a `--fresh` main thread's write and a `--parallel` worker's write
//! outside its worktree first, then a Bash command (the command policy's
//! `[rewrite]` rules, the loop's own files, the policy's `[deny]` and
//! `[protect]` rules) or a file tool (`file_tool`). Pure: the binary gathered
//! every fact into the [`LoopContext`].

use serde_json::Value;

use crate::command_policy::{self, Policy};
use crate::context::{END_LOOP_HINT, GuardDecision, LoopContext, PolicySource, ToolCall, Verdict};
use crate::protect::{self, Hit};
use crate::{file_tool, fresh, git_files, parallel, pinned, settings, shell};

/// Decide one tool call.
pub fn decide(call: &ToolCall, source: &PolicySource, ctx: &LoopContext) -> GuardDecision {
    // Windows paths: every path, and each word a rule reads as one, in one
    // spelling (`winpath`), on Windows whatever the context says.
    let spelled;
    let ctx = if cfg!(windows) || ctx.windows || ctx.named_the_windows_way() {
        spelled = ctx.in_one_spelling();
        &spelled
    } else {
        ctx
    };
    let mut messages = Vec::new();
    let mut wrap_notice_given = false;
    let (policy, policy_path) = match source {
        PolicySource::Absent => (None, ""),
        PolicySource::Broken { path, error } => {
            messages.push(format!(
                "ralph-guard: the command policy {path} is broken ({error}); none of its rules apply until it is fixed."
            ));
            (None, path.as_str())
        }
        PolicySource::Loaded { path, policy } => (Some(policy), path.as_str()),
    };
    if let Some(p) = policy
        && !p.wraps.is_empty()
        && !ctx.wrap_reported
    {
        let rows: Vec<String> = p
            .wraps
            .iter()
            .map(|w| format!("line {}: `{}`", w.line, w.prefix))
            .collect();
        messages.push(format!(
                "ralph-guard: [wrap] rules in {policy_path} are not implemented by ralph and are ignored ({}). \
                 Use [rewrite] to route a command through a wrapper. (Reported once.)",
                rows.join(", ")
            ));
        wrap_notice_given = true;
    }
    let verdict = if let Some(worker) = ctx.fresh_main_thread
        && let Some(what) = fresh::main_write(call, ctx)
    {
        Verdict::Deny(fresh::delegate_reason(&what, worker))
    } else if let Some(tree) = &ctx.worker_tree
        && let Some(why) = parallel::outside_worktree(call, ctx, tree)
    {
        Verdict::Deny(why)
    } else {
        match call.tool_name.as_str() {
            "Bash" => decide_bash(call, policy, policy_path, ctx, &mut messages),
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit" if ctx.loop_active => {
                file_tool::decide_file(call, ctx)
            }
            _ => Verdict::Allow,
        }
    };
    GuardDecision {
        verdict,
        system_message: (!messages.is_empty()).then(|| messages.join("\n")),
        wrap_notice_given,
    }
}

fn control_reason(command: &str) -> String {
    format!(
        "ralph-guard: `{command}` is one of ralph's own entry points (it would end, start, take over or feed \
         the running Ralph loop, or write the user's files), and only the user runs those (/cancel-ralph, \
         or ralph-setup in their own terminal). The agent may run `ralph-setup status`, `ralph-setup report` \
         (on stdout) and the status line. {END_LOOP_HINT}"
    )
}

fn program_copy_reason(program: &str) -> String {
    format!(
        "ralph-guard: this command makes a link or copy of {program}, one of ralph's own programs, while a Ralph loop \
         runs: a second name for it is not the agent's to make (ralph's entry points are the user's). Run \
         `ralph-setup status` to read the loop's state. {END_LOOP_HINT}"
    )
}

/// A Bash call that asks to run outside Claude Code's sandbox: in a loop,
/// the sandbox is what keeps the loop's files out of the command's reach.
const UNSANDBOXED_REASON: &str = "ralph-guard: a Bash call with `dangerouslyDisableSandbox: true` is refused while a Ralph loop runs: the sandbox is what keeps the loop's files and checks out of a command's reach. Run the command inside the sandbox; if it truly needs more (a path, a domain), say so in your reply and the user can widen the sandbox's settings.";

fn prd_removal_reason(display: &str) -> String {
    format!(
        "ralph-guard: this command would delete, empty or move away {display}, the PRD the Ralph loop feeds \
         stories from. Edit it in place instead (mark stories done, add notes); keep every story and its id."
    )
}

fn decide_bash(
    call: &ToolCall,
    policy: Option<&Policy>,
    policy_path: &str,
    ctx: &LoopContext,
    messages: &mut Vec<String>,
) -> Verdict {
    let Some(original) = call.tool_input.get("command").and_then(Value::as_str) else {
        return Verdict::Allow;
    };
    let (command, reasons) = match policy {
        Some(p) if !p.rewrites.is_empty() => rewrite_chain(original, p, policy_path, messages),
        _ => (original.to_string(), Vec::new()),
    };
    if ctx.loop_active
        && call.tool_input.get("dangerouslyDisableSandbox") == Some(&Value::Bool(true))
    {
        return Verdict::Deny(UNSANDBOXED_REASON.to_string());
    }
    if ctx.loop_active
        && let Some(why) = loop_refusal(&command, ctx)
    {
        return Verdict::Deny(why);
    }
    if let Some(p) = policy
        && let Some(reason) = policy_denial(&command, p, policy_path, 0)
    {
        return Verdict::Deny(reason);
    }
    if command == original {
        return Verdict::Allow;
    }
    let mut updated = call.tool_input.clone();
    if let Some(obj) = updated.as_object_mut() {
        obj.insert("command".into(), Value::String(command));
    }
    Verdict::Rewrite {
        updated_input: updated,
        reason: reasons.join("; "),
    }
}

/// Why a Bash command is refused while a loop runs: what it does to the
/// loop's files, the PRD, ralph's entry points, pinned files (the paths it
/// names, and those it reaches through a link it makes), and to git's
/// program-running files. Where it writes is read once
/// (`protect::bash_writes`) for the rules that judge by place.
fn loop_refusal(command: &str, ctx: &LoopContext) -> Option<String> {
    let hit = match protect::check_bash(command, ctx) {
        Some(hit) => hit,
        None => {
            let writes = protect::bash_writes(
                command,
                &ctx.cwd,
                &ctx.root,
                ctx.home.as_deref(),
                ctx.windows,
            );
            if let Some(hole) = git_files::bash(&writes, ctx) {
                return Some(hole.reason());
            }
            protect::check_linked(&writes, ctx)?
        }
    };
    Some(match hit {
        Hit::Loop(d) if settings::is_settings_name(&d) => settings::bash_reason(&d),
        Hit::Loop(d) => pinned::loop_file_reason(&d, "this command would change"),
        Hit::Link(d) => pinned::loop_file_reason(
            &d,
            "this command would make a hard link (a second name the guard does not know) to",
        ),
        Hit::Prd(d) => prd_removal_reason(&d),
        Hit::Control(c) => control_reason(&c),
        Hit::ProgramCopy(p) => program_copy_reason(&p),
        Hit::Pinned { path, why } => pinned::pinned_reason(&path, &why),
        Hit::Arg(_) => return None,
    })
}

/// Apply the first matching `[rewrite]` rule to each command of the chain,
/// leaving the operators, the other commands, assignments and redirections
/// as they were.
fn rewrite_chain(
    cmd: &str,
    p: &Policy,
    policy_path: &str,
    messages: &mut Vec<String>,
) -> (String, Vec<String>) {
    let segments = shell::split_chain(cmd);
    let mut out = cmd.to_string();
    let mut reasons = Vec::new();
    // Back to front, so earlier byte ranges stay valid while splicing.
    for seg in segments.iter().rev() {
        let (k, text) = command_policy::canonical_text(&seg.raw_words, &seg.words);
        if text.is_empty() {
            continue;
        }
        for rule in &p.rewrites {
            let new = match rule.apply(&text) {
                Ok(Some(new)) => new,
                Ok(None) => continue,
                Err(e) => {
                    let m = format!(
                        "ralph-guard: rewrite rule on {policy_path} line {} is skipped: {e}",
                        rule.line
                    );
                    eprintln!("{m}");
                    messages.push(m);
                    continue;
                }
            };
            if new != text {
                let mut parts: Vec<String> = seg.raw_words[..k].to_vec();
                parts.push(new.clone());
                parts.extend(seg.redirects.iter().map(|r| r.raw.clone()));
                out.replace_range(seg.start..seg.end, &parts.join(" "));
                let why = if rule.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", rule.reason)
                };
                reasons.insert(
                    0,
                    format!(
                        "ralph-guard rewrote `{text}` to `{new}` ({policy_path} line {}{why})",
                        rule.line
                    ),
                );
            }
            break;
        }
    }
    (out, reasons)
}

/// The first `[deny]` or `[protect]` rule the command breaks, looking into
/// `sh -c`, `eval` and substitutions as well.
fn policy_denial(cmd: &str, p: &Policy, policy_path: &str, depth: usize) -> Option<String> {
    if depth > 8 || (p.denies.is_empty() && p.protects.is_empty()) {
        return None;
    }
    for seg in shell::split_chain(cmd) {
        for sub in &seg.substitutions {
            if let Some(r) = policy_denial(sub, p, policy_path, depth + 1) {
                return Some(r);
            }
        }
        let (_, shallow) = command_policy::canonical_words(&seg.words);
        // The same command once `sudo`, `command`, `nohup`, `xargs`, a path
        // like /usr/bin/ are peeled off.
        let deep = match protect::unwrap(&seg.words) {
            protect::Invocation::Exec { name, args, .. } => {
                let mut w = vec![name];
                w.extend(command_policy::without_global_options(&w[0], &args));
                command_policy::canonical_words(&w).1
            }
            protect::Invocation::Script { text, .. } => {
                if let Some(r) = policy_denial(&text, p, policy_path, depth + 1) {
                    return Some(r);
                }
                Vec::new()
            }
            // `bash <<EOF ... EOF`, `bash <<< '...'`: the heredoc is the script.
            protect::Invocation::ShellStdin => {
                let here_strings = seg
                    .redirects
                    .iter()
                    .filter_map(shell::Redirect::here_string);
                for body in seg.heredocs.iter().map(String::as_str).chain(here_strings) {
                    if let Some(r) = policy_denial(body, p, policy_path, depth + 1) {
                        return Some(r);
                    }
                }
                Vec::new()
            }
            protect::Invocation::Nothing => Vec::new(),
        };
        let matches = |prefix: &[String], bare: &[String]| {
            command_policy::starts_with_words(&shallow, prefix)
                || command_policy::starts_with_words(&deep, bare)
        };
        for d in &p.denies {
            if matches(&d.prefix, &d.bare_prefix) {
                return Some(format!(
                    "ralph-guard: `{}` is denied by the command policy ({policy_path} line {}): {}",
                    d.prefix.join(" "),
                    d.line,
                    d.reason
                ));
            }
        }
        let output_taken = seg.pipes_out || seg.redirects.iter().any(shell::Redirect::writes_file);
        if output_taken {
            for r in &p.protects {
                if matches(&r.prefix, &r.bare_prefix) {
                    return Some(format!(
                        "ralph-guard: `{}` may be run bare, but its output may not be piped or redirected \
                         (command policy {policy_path} line {} [protect]). Run it on its own.",
                        r.prefix.join(" "),
                        r.line
                    ));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn ctx() -> LoopContext {
        LoopContext {
            root: PathBuf::from("/proj"),
            real_root: Some(PathBuf::from("/real/proj")),
            cwd: PathBuf::from("/proj/sub"),
            loop_active: true,
            loop_files: vec![PathBuf::from(".claude/ralph-loop.local.md")],
            prd_file: Some(PathBuf::from("prd.json")),
            prd_current: Some(r#"{"userStories":[{"id":"A"},{"id":"B"}]}"#.into()),
            ..LoopContext::default()
        }
    }

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool_name: tool.into(),
            tool_input: input,
        }
    }

    /// The decision on one Bash command in `c`, with no command policy.
    fn bash_in(c: &LoopContext, cmd: &str) -> GuardDecision {
        decide(
            &call("Bash", json!({ "command": cmd })),
            &PolicySource::Absent,
            c,
        )
    }

    fn denied(d: &GuardDecision) -> bool {
        matches!(d.verdict, Verdict::Deny(_))
    }

    #[test]
    fn a_symlinked_path_to_a_loop_file_is_denied() {
        let mut c = ctx();
        c.file_real_path = Some(PathBuf::from("/real/proj/.claude/ralph-loop.local.md"));
        let d = decide(
            &call(
                "Write",
                json!({"file_path": "/tmp/innocent", "content": "x"}),
            ),
            &PolicySource::Absent,
            &c,
        );
        assert!(denied(&d));
    }

    #[test]
    fn relative_paths_resolve_against_the_hook_cwd() {
        let c = ctx();
        let w = |p: &str| {
            decide(
                &call("Write", json!({"file_path": p, "content": "x"})),
                &PolicySource::Absent,
                &c,
            )
        };
        assert!(denied(&w("../.claude/ralph-loop.local.md")));
        assert!(
            !denied(&w(".claude/ralph-loop.local.md")),
            "that is /proj/sub/.claude/..."
        );
        let mut c = ctx();
        c.home = Some(PathBuf::from("/"));
        let d = decide(
            &call(
                "Write",
                json!({"file_path": "~/proj/.claude/ralph-loop.local.md", "content": "x"}),
            ),
            &PolicySource::Absent,
            &c,
        );
        assert!(denied(&d), "~ is the home folder");
    }

    #[test]
    fn prd_edits_are_judged_on_the_result() {
        let c = ctx();
        let e = |old: &str, new: &str| {
            decide(
                &call(
                    "Edit",
                    json!({"file_path": "/proj/prd.json", "old_string": old, "new_string": new}),
                ),
                &PolicySource::Absent,
                &c,
            )
        };
        assert!(
            denied(&e(r#"{"id":"B"}"#, "")),
            "invalid JSON (dangling comma)"
        );
        assert!(denied(&e(r#",{"id":"B"}"#, "")), "drops story B");
        assert!(!denied(&e(r#"{"id":"B"}"#, r#"{"id":"B","passes":true}"#)));
    }

    #[test]
    fn a_command_out_of_the_sandbox_is_refused_in_a_loop() {
        let out = json!({"command": "npm test", "dangerouslyDisableSandbox": true});
        let d = decide(&call("Bash", out.clone()), &PolicySource::Absent, &ctx());
        let Verdict::Deny(why) = d.verdict else {
            panic!("{:?}", d.verdict)
        };
        assert!(why.contains("dangerouslyDisableSandbox"), "{why}");
        // Inside it, or asked false, the same command runs.
        for input in [
            json!({"command": "npm test"}),
            json!({"command": "npm test", "dangerouslyDisableSandbox": false}),
        ] {
            let d = decide(&call("Bash", input), &PolicySource::Absent, &ctx());
            assert_eq!(d.verdict, Verdict::Allow);
        }
        let mut c = ctx();
        c.loop_active = false;
        let d = decide(&call("Bash", out), &PolicySource::Absent, &c);
        assert_eq!(d.verdict, Verdict::Allow);
    }

    #[test]
    fn nothing_is_guarded_without_a_loop() {
        let mut c = ctx();
        c.loop_active = false;
        let d = decide(
            &call("Bash", json!({"command": "rm -rf .claude"})),
            &PolicySource::Absent,
            &c,
        );
        assert_eq!(d.to_hook_output(), None);
    }

    #[test]
    fn a_rewrite_keeps_the_other_input_fields() {
        let policy = Policy::parse("[rewrite]\n^npm test$ | pnpm test | pnpm here\n").unwrap();
        let source = PolicySource::Loaded {
            path: ".ralph/command-policy".into(),
            policy,
        };
        let d = decide(
            &call("Bash", json!({"command": "npm test && ls", "timeout": 5})),
            &source,
            &ctx(),
        );
        let Verdict::Rewrite {
            updated_input,
            reason,
        } = d.verdict
        else {
            panic!("{d:?}")
        };
        assert_eq!(
            updated_input,
            json!({"command": "pnpm test && ls", "timeout": 5})
        );
        assert!(
            reason.contains("line 2") && reason.contains("pnpm here"),
            "{reason}"
        );
    }

    #[test]
    fn whole_tree_git_is_allowed_once_the_state_lives_outside() {
        let mut c = ctx();
        c.cwd = PathBuf::from("/proj");
        let bash = |c: &LoopContext, cmd: &str| {
            decide(
                &call("Bash", json!({ "command": cmd })),
                &PolicySource::Absent,
                c,
            )
        };
        let whole_tree = [
            "git stash -u",
            "git stash --include-untracked",
            "git stash push -a -m wip",
            "git clean -fdx",
            "git -C . clean -fdx",
            "git clean -fdx ':/'",
            "git clean -fdx .",
            "git reset --hard && git clean -fdx",
            "git stash push -u -- .",
        ];
        let named = [
            "git clean -fdx .claude",
            "git clean -fx ':/.claude'",
            "git -C .claude clean -fdx",
            "git stash push -u -- .claude",
            "git checkout -- .claude/ralph-loop.local.md",
        ];
        c.kept_from_whole_tree = vec![];
        for cmd in whole_tree {
            assert!(!denied(&bash(&c, cmd)), "{cmd}");
        }
        for cmd in named {
            assert!(denied(&bash(&c, cmd)), "{cmd}");
        }
        c.kept_from_whole_tree = c.loop_files.clone();
        for cmd in whole_tree.iter().chain(&named) {
            assert!(denied(&bash(&c, cmd)), "{cmd}");
        }
        // From a subfolder, `git clean` takes that folder only; `stash` the tree.
        c.cwd = PathBuf::from("/proj/sub");
        assert!(!denied(&bash(&c, "git clean -fdx")));
        assert!(denied(&bash(&c, "git stash -u")));
    }

    #[test]
    fn hard_links_and_data_folders_are_denied_to_file_tools() {
        let mut c = ctx();
        c.file_aliases = vec![PathBuf::from("/proj/.claude/ralph-loop.local.md")];
        let w = |c: &LoopContext, p: &str| {
            decide(
                &call("Write", json!({"file_path": p, "content": "x"})),
                &PolicySource::Absent,
                c,
            )
        };
        assert!(denied(&w(&c, "/proj/notes.md")));
        c.file_aliases = vec![PathBuf::from("/home/u/.claude/ralph/loops/h/state.md")];
        assert!(denied(&w(&c, "/proj/notes.md")));
        c.file_aliases.clear();
        c.protected_dirs = vec![PathBuf::from("/home/u/.claude/ralph")];
        assert!(denied(&w(&c, "/home/u/.claude/ralph/loops/h/state.md")));
        assert!(!denied(&w(&c, "/home/u/.claude/settings.json")));
        // The client's transcripts are kept; its auto-memory is not.
        let projects = PathBuf::from("/home/u/.claude/projects");
        c.protected_dirs = vec![projects.clone()];
        c.client_projects = vec![projects];
        assert!(denied(&w(&c, "/home/u/.claude/projects/-proj/s1.jsonl")));
        assert!(denied(&w(
            &c,
            "/home/u/.claude/projects/-proj/s1/subagents/agent-a.jsonl"
        )));
        assert!(!denied(&w(
            &c,
            "/home/u/.claude/projects/-proj/memory/MEMORY.md"
        )));
        let bash = |cmd: &str| bash_in(&c, cmd);
        assert!(denied(&bash(
            "echo x >> /home/u/.claude/projects/-proj/s1.jsonl"
        )));
        assert!(!denied(&bash(
            "echo note >> /home/u/.claude/projects/-proj/memory/MEMORY.md"
        )));
    }

    #[test]
    fn a_link_made_in_the_command_is_followed_to_the_loop_files() {
        let mut c = ctx();
        c.cwd = PathBuf::from("/proj");
        let bash = |cmd: &str| bash_in(&c, cmd);
        for cmd in [
            "ln -s .claude c && rm c/ralph-loop.local.md",
            "ln -sfn .claude c; echo x > c/ralph-loop.local.md",
            "sh -c 'ln -s .claude c' && sed -i s/a/b/ c/ralph-loop.local.md",
        ] {
            assert!(denied(&bash(cmd)), "{cmd}");
        }
        for cmd in [
            "ln -s ../lib src/x",
            "ln -s .claude c && cat c/ralph-loop.local.md",
        ] {
            assert!(!denied(&bash(cmd)), "{cmd}");
        }
    }

    fn fake_identify(path: &std::path::Path, _: &[crate::context::RalphProgram]) -> Option<String> {
        (path == std::path::Path::new("/tmp/x")).then(|| "ralph-setup".to_string())
    }

    #[test]
    fn ralph_programs_are_known_by_what_they_are() {
        let mut c = ctx();
        c.cwd = PathBuf::from("/proj");
        c.ralph_programs = vec![crate::context::RalphProgram {
            name: "ralph-setup".into(),
            path: PathBuf::from("/opt/ralph/bin/ralph-setup"),
            dev: 1,
            ino: 2,
            size: 3,
        }];
        c.identify = Some(crate::context::Identify(fake_identify));
        let bash = |cmd: &str| bash_in(&c, cmd);
        for cmd in [
            "/tmp/x cancel",
            "env -u AI_AGENT /tmp/x hook-prompt",
            "cd /tmp && ./x cancel",
            "ln -s \"$(command -v ralph-setup)\" \"$TMPDIR/x\" && env -u AI_AGENT \"$TMPDIR/x\" cancel",
            "cp $(which ralph-setup) /tmp/y",
            "ln -s /opt/ralph/bin/ralph-setup y",
            "ln /tmp/x y",
            "cp \"$RALPH_BIN_DIR/ralph-stop-hook\" y",
        ] {
            assert!(denied(&bash(cmd)), "{cmd}");
        }
        for cmd in [
            "/tmp/x status",
            "/tmp/other cancel",
            "/usr/bin/git status",
            "cp target/release/ralph-setup dist/",
            "command -v ralph-setup",
            "ls -l $(command -v ralph-setup)",
        ] {
            assert!(!denied(&bash(cmd)), "{cmd}");
        }
    }
}
