//! ralph's own entry points: the agent may run only those that print and
//! change nothing (status, show, help, `report` to stdout, the status line's
//! rendering). Every other way in (start, cancel, resume, `ralph run`, the
//! hook verbs with a forged input, the launcher's verbs, `report --html
//! FILE`, `statusline --install/--off`) is the user's. The binaries refuse
//! the same by themselves when the guard is dodged (`control::
//! this_process_run_by_agent`, which also reads the process's ancestry).
//! Pure.

use std::path::Path;

use super::argv::operands;
use super::matching::Checker;
use super::wrappers::is_shell;
use super::{Hit, normalize};

/// ralph's programs, by their installed names.
pub(super) const RALPH_PROGRAMS: &[&str] =
    &["ralph", "ralph-setup", "ralph-stop-hook", "ralph-guard"];

/// The entry point `program ARGS` runs that is not the agent's, worded for
/// it, if any. `program` is the last component of the word naming the
/// program (so `"$CLAUDE_PLUGIN_ROOT/plugin/ralph"` is `ralph`).
pub(super) fn loop_control(program: &str, args: &[String]) -> Option<String> {
    let program = program.strip_suffix(".exe").unwrap_or(program);
    match program {
        "ralph-setup" => setup(args).map(|s| format!("ralph-setup {s}")),
        // Hooks: their input is the client's, never the agent's to forge.
        "ralph-stop-hook" | "ralph-guard" => Some(program.to_string()),
        "ralph" => {
            let (sub, rest) = subcommand(args)?;
            match sub {
                // The plugin's launcher, `plugin/ralph setup VERB`.
                "setup" => setup(rest).map(|s| format!("ralph setup {s}")),
                _ if read_only(sub, rest) => None,
                // run, start, cancel; the launcher's hooks (stop-hook,
                // guard, event) and its downloads (prebuild, fetch).
                _ => Some(format!("ralph {sub}")),
            }
        }
        "cargo" => cargo_run(args),
        // `sh plugin/ralph setup cancel`: the launcher run by a shell.
        _ if is_shell(program) => {
            let (script, rest) = subcommand(args)?;
            let name = script.rsplit('/').next().unwrap_or(script);
            (name.starts_with("ralph"))
                .then(|| loop_control(name, rest))
                .flatten()
        }
        _ => None,
    }
}

/// Which of ralph's programs the file a word names is (absolute, or from
/// the command's folder), judged by what it is; the word is a path.
pub(super) fn ralph_program(word: &str, cwd: Option<&Path>, ctx: &Checker) -> Option<String> {
    let word = &*ctx.spell(word);
    if !word.contains('/') || word.contains(['$', '`']) {
        return None;
    }
    let path = match cwd {
        _ if word.starts_with('/') => normalize(Path::new(word)),
        Some(c) => normalize(&c.join(word)),
        None => return None,
    };
    ctx.ralph_program_at(&path)
}

/// A link or copy whose source is one of ralph's programs: found to be one,
/// or named like one outside the project (the project's own build of ralph,
/// when ralph develops itself, stays the agent's to copy).
pub(super) fn copies_ralph(
    name: &str,
    sources: &[String],
    cwd: Option<&Path>,
    ctx: &Checker,
) -> Option<Hit> {
    if !matches!(name, "ln" | "cp" | "install" | "rsync" | "link") {
        return None;
    }
    sources.iter().find_map(|s| {
        let s = &*ctx.spell(s);
        if let Some(real) = ralph_program(s, cwd, ctx) {
            return Some(Hit::ProgramCopy(real));
        }
        let base = s.rsplit('/').next().unwrap_or(s);
        let base = base.strip_suffix(".exe").unwrap_or(base);
        let in_project = !s.contains(['$', '`']) && {
            let abs = cwd.map(|c| normalize(&c.join(s)));
            abs.is_some_and(|a| ctx.in_project(&a))
        };
        (RALPH_PROGRAMS.contains(&base) && !in_project).then(|| Hit::ProgramCopy(base.to_string()))
    })
}

/// `ralph-setup SUBCOMMAND`: the read-only ones pass; any other (start,
/// cancel, resume, hook-prompt, hook-event, report --html, statusline
/// --install/--off, a verb it does not know) is named.
fn setup(args: &[String]) -> Option<String> {
    let (sub, rest) = subcommand(args)?;
    if read_only(sub, rest) || sub == "show" {
        return None;
    }
    let flag = rest.iter().find(|a| {
        ["--html", "--install", "--off"]
            .iter()
            .any(|f| a.starts_with(f))
    });
    Some(match flag {
        Some(f) => format!("{sub} {}", f.split('=').next().unwrap_or(f)),
        None => sub.to_string(),
    })
}

/// A verb both `ralph` and `ralph-setup` know that only prints: status,
/// help, the report on stdout, the status line's rendering.
fn read_only(sub: &str, rest: &[String]) -> bool {
    let has = |flag: &str| {
        rest.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    match sub {
        "status" | "help" => true,
        "report" => !has("--html"),
        // `ralph statusline install|off`, `ralph-setup statusline --install/--off`.
        "statusline" => {
            !has("--install") && !has("--off") && !rest.iter().any(|a| a == "install" || a == "off")
        }
        _ => false,
    }
}

/// The first operand and the words after it.
fn subcommand(args: &[String]) -> Option<(&str, &[String])> {
    let i = args.iter().position(|a| !a.starts_with('-') || a == "-")?;
    Some((args[i].as_str(), &args[i + 1..]))
}

/// `cargo run [options] --bin NAME [-- ARGS]`, run in ralph's own checkout.
fn cargo_run(args: &[String]) -> Option<String> {
    let (sub, rest) = subcommand(args)?;
    if sub != "run" && sub != "r" {
        return None;
    }
    let split = rest.iter().position(|a| a == "--").unwrap_or(rest.len());
    let (opts, program_args) = (&rest[..split], &rest[(split + 1).min(rest.len())..]);
    let (_, o) = operands(
        opts,
        "pjFZ",
        &[
            "--bin",
            "--package",
            "--example",
            "--features",
            "--jobs",
            "--target",
            "--target-dir",
            "--profile",
            "--manifest-path",
            "--color",
            "--config",
            "--message-format",
        ],
    );
    let bin = o
        .iter()
        .find(|(k, _)| k == "--bin")
        .map(|(_, v)| v.as_str())?;
    loop_control(bin, program_args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl(s: &str) -> Option<String> {
        let w = shlex::split(s).unwrap();
        let program = w[0].rsplit('/').next().unwrap().to_string();
        loop_control(&program, &w[1..])
    }

    #[test]
    fn control_commands_are_named() {
        for s in [
            "ralph-setup cancel",
            "ralph-setup start --replace 'do it'",
            "ralph-setup start --prd-file prd.json",
            "ralph-setup hook-prompt",
            "ralph-setup hook-event",
            "ralph-setup resume",
            "ralph-setup report --html /tmp/r.html",
            "ralph-setup report --html=/home/u/.claude/settings.json",
            "ralph-setup statusline --install",
            "ralph-setup statusline --off",
            "ralph-setup unknown-verb",
            "/x/target/release/ralph-setup cancel",
            "/x/target/release/ralph-setup.exe hook-event",
            "ralph cancel",
            "ralph run --max-iterations 3 task",
            "ralph start task",
            "ralph report --html out.html",
            "ralph statusline --install",
            "ralph statusline install",
            "ralph statusline off",
            "ralph resume",
            "ralph-stop-hook",
            "ralph-guard",
            "sh plugin/ralph setup cancel",
            "sh plugin/ralph setup hook-event",
            "sh plugin/ralph event",
            "sh plugin/ralph guard",
            "sh plugin/ralph prebuild",
            "sh plugin/ralph fetch",
            "sh /home/u/.claude/plugins/cache/ralph/plugin/ralph setup start --replace x",
            "bash -x plugin/ralph stop-hook",
            "./plugin/ralph setup cancel",
            "./plugin/ralph event",
            "$CLAUDE_PLUGIN_ROOT/plugin/ralph setup cancel",
            "cargo run --bin ralph-setup -- cancel",
            "cargo run --bin ralph-setup -- hook-event",
            "cargo run -q -p ralph --bin=ralph -- run x",
        ] {
            assert!(ctl(s).is_some(), "{s}");
        }
        assert_eq!(
            ctl("ralph-setup report --html=x.html").as_deref(),
            Some("ralph-setup report --html")
        );
    }

    #[test]
    fn status_and_look_alikes_are_not() {
        for s in [
            "ralph-setup status",
            "ralph-setup status --json",
            "ralph-setup show",
            "ralph-setup --help",
            "ralph-setup help",
            "ralph-setup report",
            "ralph-setup statusline",
            "ralph-setup statusline --then 'echo hi'",
            "ralph status",
            "ralph report",
            "ralph statusline",
            "ralph --help",
            "sh plugin/ralph setup status",
            "sh plugin/ralph setup report",
            "sh scripts/test",
            "cargo run --bin ralph-setup -- status",
            "cargo run --bin other -- cancel",
            "cargo test cancel",
            "echo ralph-setup cancel",
        ] {
            assert_eq!(ctl(s), None, "{s}");
        }
    }
}
