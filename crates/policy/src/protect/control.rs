//! ralph's own control commands: run by the agent, they would end, start or
//! take over the running loop, which only the user may do. Status and help
//! stay allowed.

use super::effects::operands;
use super::wrappers::is_shell;

/// The control command `program ARGS` runs, worded for the agent, if any.
/// `program` is the last component of the word naming the program (so
/// `"$CLAUDE_PLUGIN_ROOT/plugin/ralph"` is `ralph`).
pub(super) fn loop_control(program: &str, args: &[String]) -> Option<String> {
    match program {
        "ralph-setup" => setup(args).map(|s| format!("ralph-setup {s}")),
        "ralph-stop-hook" => Some("ralph-stop-hook".to_string()),
        "ralph" => {
            let (sub, rest) = subcommand(args)?;
            match sub {
                "run" | "start" | "cancel" | "stop-hook" => Some(format!("ralph {sub}")),
                // The plugin's launcher, `plugin/ralph setup cancel`.
                "setup" => setup(rest).map(|s| format!("ralph setup {s}")),
                _ => None,
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

/// `ralph-setup SUBCOMMAND`: `start` (with or without `--replace`),
/// `cancel`, `resume`, and `hook-prompt` (which starts or cancels from the JSON on its
/// stdin) change the loop; `status`, `show`, `help` do not.
fn setup(args: &[String]) -> Option<&'static str> {
    match subcommand(args)?.0 {
        "start" => Some("start"),
        "cancel" => Some("cancel"),
        "resume" => Some("resume"),
        "hook-prompt" => Some("hook-prompt"),
        _ => None,
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
            "/x/target/release/ralph-setup cancel",
            "ralph cancel",
            "ralph run --max-iterations 3 task",
            "ralph start task",
            "ralph-stop-hook",
            "sh plugin/ralph setup cancel",
            "sh /home/u/.claude/plugins/cache/ralph/plugin/ralph setup start --replace x",
            "bash -x plugin/ralph stop-hook",
            "./plugin/ralph setup cancel",
            "$CLAUDE_PLUGIN_ROOT/plugin/ralph setup cancel",
            "cargo run --bin ralph-setup -- cancel",
            "cargo run -q -p ralph --bin=ralph -- run x",
        ] {
            assert!(ctl(s).is_some(), "{s}");
        }
    }

    #[test]
    fn status_and_look_alikes_are_not() {
        for s in [
            "ralph-setup status",
            "ralph-setup status --json",
            "ralph-setup show",
            "ralph-setup --help",
            "ralph status",
            "ralph --help",
            "sh plugin/ralph setup status",
            "sh plugin/ralph guard",
            "sh plugin/ralph prebuild",
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
