//! The wrappers that only change how their command runs (`sudo`, `nice`,
//! `timeout`, `time`, ...), one table row each: which options take a value,
//! how many operands come before the command, and what the wrapper does
//! itself (a file it writes, a folder it runs the command in). Pure.

use super::{Invocation, Step, Unwrapped};
use crate::protect::argv::{NO_OPTS, Spec, has_opt, leading_opts, opt};

/// A wrapper that only changes how its command runs, read by its table.
pub(super) struct Plain {
    pub(super) names: &'static [&'static str],
    /// Which of its options take a value.
    spec: Spec,
    /// Operands before the command (`timeout DURATION`, `chrt PRIORITY`,
    /// `taskset MASK`).
    skip: usize,
    /// Options whose value is a file the wrapper writes itself.
    writes: &'static [&'static str],
    /// Options whose value is the folder the command runs in.
    chdir: &'static [&'static str],
    /// Options that make it act on a running process: no command is run.
    no_command: &'static [&'static str],
}

const PLAIN: Plain = Plain {
    names: &[],
    spec: NO_OPTS,
    skip: 0,
    writes: &[],
    chdir: &[],
    no_command: &[],
};

pub(super) const WRAPPERS: &[Plain] = &[
    Plain {
        names: &[
            "{",
            "}",
            "!",
            "then",
            "do",
            "else",
            "elif",
            "if",
            "while",
            "until",
            "busybox",
            "nohup",
            "builtin",
            "chronic",
            "unbuffer",
            "caffeinate",
            "setsid",
        ],
        ..PLAIN
    },
    // bash's `time -p`, GNU time's `-o FILE` (which it writes) and `-f FMT`.
    Plain {
        names: &["time"],
        spec: Spec {
            short: "of",
            long: &["--output", "--format"],
        },
        writes: &["-o", "--output"],
        ..PLAIN
    },
    Plain {
        names: &["strace"],
        spec: Spec {
            short: "abeEIoOpPsSuX",
            long: &[
                "--output", "--attach", "--user", "--env", "--trace", "--signal",
            ],
        },
        writes: &["-o", "--output"],
        ..PLAIN
    },
    Plain {
        names: &["exec"],
        spec: Spec {
            short: "a",
            long: &[],
        },
        ..PLAIN
    },
    Plain {
        names: &["sudo"],
        spec: Spec {
            short: "ugCDhprtUT",
            long: &[
                "--user",
                "--group",
                "--chdir",
                "--close-from",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
            ],
        },
        chdir: &["-D", "--chdir"],
        ..PLAIN
    },
    Plain {
        names: &["doas"],
        spec: Spec {
            short: "uC",
            long: &[],
        },
        ..PLAIN
    },
    Plain {
        names: &["nice"],
        spec: Spec {
            short: "n",
            long: &["--adjustment"],
        },
        ..PLAIN
    },
    Plain {
        names: &["stdbuf"],
        spec: Spec {
            short: "ioe",
            long: &["--input", "--output", "--error"],
        },
        ..PLAIN
    },
    // `ionice -p PID` changes a running process: no command.
    Plain {
        names: &["ionice"],
        spec: Spec {
            short: "cnpPu",
            long: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
        },
        no_command: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
        ..PLAIN
    },
    // `chrt [options] PRIORITY command`.
    Plain {
        names: &["chrt"],
        spec: Spec {
            short: "TPD",
            long: &["--sched-runtime", "--sched-period", "--sched-deadline"],
        },
        skip: 1,
        no_command: &["-p", "--pid", "-m", "--max"],
        ..PLAIN
    },
    // `taskset [options] MASK command`.
    Plain {
        names: &["taskset"],
        skip: 1,
        no_command: &["-p", "--pid"],
        ..PLAIN
    },
    // `timeout [options] DURATION command`.
    Plain {
        names: &["timeout", "gtimeout"],
        spec: Spec {
            short: "sk",
            long: &["--signal", "--kill-after"],
        },
        skip: 1,
        ..PLAIN
    },
];

/// Step over a wrapper of the table at `next` (the word after its name).
pub(super) fn plain(w: &Plain, words: &[String], next: usize, u: &mut Unwrapped) -> Step {
    let (at, o) = leading_opts(words, next, &w.spec);
    if has_opt(&o, w.no_command) {
        return Step::Done(Invocation::Nothing);
    }
    u.writes.extend(opt(&o, w.writes).map(str::to_string));
    u.chdir.extend(opt(&o, w.chdir).map(str::to_string));
    Step::Next(at + w.skip)
}
