//! `ralph run`'s argv: every loop option `/ralph-loop` takes (passed on to
//! the start as given), `ralph run`'s own options (`Takes::RunOnly` in
//! `options::OPTIONS`: one entry each, read here by name), and the client's
//! flags after `--`. Pure.

use super::options::{self, Takes};
use super::{ArgsError, StartArgs, check_value, parse_argv_of};

/// `ralph run`'s arguments, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunArgv {
    /// What the loop's start gets: the prompt words and the loop options, as typed.
    pub start: Vec<String>,
    /// The same, parsed (checked before anything runs).
    pub args: StartArgs,
    /// The runner's own options (and `--notify`, which the runner fires
    /// itself at the run's end), by name, in the order given.
    pub run: Vec<(&'static str, String)>,
    /// The client's flags, after `--`.
    pub client: Vec<String>,
}

impl RunArgv {
    /// The value of the runner's option `name` (its last), else its default.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.run
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .or_else(|| options::find(name, true).and_then(|o| o.default))
    }

    /// Whether the runner's switch `name` was given.
    pub fn given(&self, name: &str) -> bool {
        self.run.iter().any(|(n, _)| *n == name)
    }
}

/// Options the runner keeps for itself rather than pass to the start.
fn runner_takes(name: &str) -> Option<&'static options::OptSpec> {
    options::find(name, true).filter(|o| o.takes == Takes::RunOnly || o.name == "--notify")
}

/// Split and check `ralph run`'s argv.
pub fn split_run_argv(argv: &[String]) -> Result<RunArgv, ArgsError> {
    let mut out = RunArgv::default();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.client = it.by_ref().cloned().collect();
            break;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let Some(spec) = runner_takes(name) else {
            out.start.push(a.clone());
            continue;
        };
        if out.given(spec.name) && !spec.repeatable {
            return Err(ArgsError::Repeated(spec.name));
        }
        let value = match (spec.kind, inline) {
            (options::ValueKind::Switch, _) => String::new(),
            (_, Some(v)) => v,
            (_, None) => match it.next() {
                Some(v) if !v.starts_with("--") => v.clone(),
                _ => return Err(ArgsError::MissingValue(spec.name, spec.example)),
            },
        };
        check_value(spec, &value)?;
        out.run.push((spec.name, value));
    }
    out.args = parse_argv_of(&out.start, true)?;
    if out.start.iter().any(|w| w == "--help") || argv == ["-h"] {
        out.args.help = true;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn loop_options_go_to_the_start_and_the_runners_stay() {
        let r = split_run_argv(&argv(&[
            "Fix it",
            "--fresh",
            "--max-wait",
            "10m",
            "--max-tokens=2M",
            "--notify",
            "desktop",
            "--",
            "--model",
            "sonnet",
        ]))
        .unwrap();
        assert_eq!(r.start, argv(&["Fix it", "--fresh", "--max-tokens=2M"]));
        assert!(r.args.fresh);
        assert_eq!(r.args.max_tokens, Some(2_000_000));
        assert_eq!(r.value("--max-wait"), Some("10m"));
        assert_eq!(r.value("--notify"), Some("desktop"));
        assert_eq!(r.value("--rotate-at"), Some("120k"), "its default");
        assert_eq!(r.client, argv(&["--model", "sonnet"]));
    }

    #[test]
    fn a_runner_option_is_checked_and_misspelt_ones_named() {
        let e = split_run_argv(&argv(&["x", "--max-wait", "soon"])).unwrap_err();
        assert!(
            matches!(
                e,
                ArgsError::BadValue {
                    flag: "--max-wait",
                    ..
                }
            ),
            "{e}"
        );
        let e = split_run_argv(&argv(&["x", "--max-failure", "3"])).unwrap_err();
        assert!(
            e.to_string().contains("did you mean `--max-failures`?"),
            "{e}"
        );
        let e = split_run_argv(&argv(&["x", "--max-failures", "0"])).unwrap_err();
        assert!(matches!(e, ArgsError::ZeroRefused { .. }), "{e}");
    }
}
