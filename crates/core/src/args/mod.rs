//! `/ralph-loop` arguments, parsed from the raw text the user typed (as a
//! `UserPromptSubmit` hook receives it) or from a terminal's argv.
//!
//! No shell ever sees the user's text: the prompt keeps its quotes,
//! backticks, `$(...)`, `$VAR` and newlines byte for byte. Only known
//! `--flags` (and their values) are taken out; an unknown `--flag` is an
//! error rather than silently becoming prompt words, and ` -- ` ends the
//! options so the rest is prompt text verbatim.
//! Pure.

use crate::budget::Usd;
use crate::run::options::{parse_duration, parse_tokens};
use thiserror::Error;
use words::{join_pieces, next_token, read_word};

mod words;

/// The most stories at once `--parallel` takes.
pub const MAX_PARALLEL: u32 = 16;

/// The options of a loop start, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartArgs {
    /// The prompt words (may be empty when `--prompt-file` or `--prd-file` is given).
    pub prompt: String,
    pub max_iterations: Option<u64>,
    pub completion_promise: Option<String>,
    pub prd_file: Option<String>,
    pub prompt_file: Option<String>,
    pub max_story_attempts: Option<u32>,
    pub verify: Option<String>,
    pub verify_timeout: Option<u64>,
    pub max_stalls: Option<u32>,
    /// Budgets: tokens, seconds of wall time, dollars.
    pub max_tokens: Option<u64>,
    pub max_runtime_secs: Option<u64>,
    pub max_cost: Option<Usd>,
    /// `--review [LIST]`: the reviewers (`acceptance` when no list is given).
    pub review: Option<Vec<String>>,
    /// `--review-cmd CMD`: a program reviews instead of `claude -p`.
    pub review_cmd: Option<String>,
    pub max_reviews: Option<u32>,
    pub review_timeout: Option<u64>,
    /// `--notify CMD|desktop`: run when the loop ends (see `notify`).
    pub notify: Option<String>,
    /// Replace another session's live loop.
    pub replace: bool,
    /// Work each story (or iteration) in a fresh `ralph:ralph-worker` subagent.
    pub fresh: bool,
    /// `--parallel N`: up to N stories at once, each in its own worktree
    /// (implies `--fresh`; PRD mode).
    pub parallel: Option<u32>,
    /// `--pin GLOB` (repeatable): files pinned at start besides those the
    /// checks name (see `pins`).
    pub pin: Vec<String>,
    pub help: bool,
}

pub const USAGE: &str = "/ralph:ralph-loop PROMPT... [--max-iterations N] [--completion-promise TEXT] [--prd-file PATH] [--prompt-file PATH] [--verify CMD] [--verify-timeout SECS] [--max-stalls N] [--max-story-attempts N] [--max-tokens N] [--max-runtime DURATION] [--max-cost USD] [--review [LIST]] [--review-cmd CMD] [--max-reviews N] [--review-timeout SECS] [--fresh] [--parallel N] [--notify CMD|desktop] [--pin GLOB]... [--replace]";

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArgsError {
    #[error(
        "unknown option `{0}`. Options: --max-iterations N, --completion-promise TEXT, --prd-file PATH, --prompt-file PATH, --verify CMD, --verify-timeout SECS, --max-stalls N, --max-story-attempts N, --max-tokens N, --max-runtime DURATION, --max-cost USD, --review [LIST], --review-cmd CMD, --max-reviews N, --review-timeout SECS, --fresh, --parallel N, --notify CMD|desktop, --pin GLOB, --replace. To use `{0}` as prompt text, put it after ` -- `"
    )]
    UnknownFlag(String),
    #[error("`{flag}` takes {what}, not `{value}`")]
    BadValue {
        flag: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("`{0}` needs a value, e.g. {0} {1}")]
    MissingValue(&'static str, &'static str),
    #[error("`{flag}` takes a whole number in base 10{hint}, not `{value}`")]
    BadNumber {
        flag: &'static str,
        value: String,
        hint: &'static str,
    },
    #[error("`{0}` was given twice")]
    Repeated(&'static str),
}

#[derive(Clone, Copy)]
enum Flag {
    MaxIterations,
    CompletionPromise,
    PrdFile,
    PromptFile,
    MaxStoryAttempts,
    Verify,
    VerifyTimeout,
    MaxStalls,
    MaxTokens,
    MaxRuntime,
    MaxCost,
    Review,
    ReviewCmd,
    MaxReviews,
    ReviewTimeout,
    Notify,
    Replace,
    Fresh,
    Parallel,
    Pin,
    Help,
}

impl Flag {
    fn from_name(name: &str) -> Option<Flag> {
        Some(match name {
            "--max-iterations" => Flag::MaxIterations,
            "--completion-promise" => Flag::CompletionPromise,
            "--prd-file" | "--prd" => Flag::PrdFile,
            "--prompt-file" => Flag::PromptFile,
            "--max-story-attempts" => Flag::MaxStoryAttempts,
            "--verify" => Flag::Verify,
            "--verify-timeout" => Flag::VerifyTimeout,
            "--max-stalls" => Flag::MaxStalls,
            "--max-tokens" => Flag::MaxTokens,
            "--max-runtime" => Flag::MaxRuntime,
            "--max-cost" => Flag::MaxCost,
            "--review" => Flag::Review,
            "--review-cmd" => Flag::ReviewCmd,
            "--max-reviews" => Flag::MaxReviews,
            "--review-timeout" => Flag::ReviewTimeout,
            "--notify" => Flag::Notify,
            "--replace" => Flag::Replace,
            "--fresh" => Flag::Fresh,
            "--parallel" => Flag::Parallel,
            "--pin" => Flag::Pin,
            "--help" | "-h" => Flag::Help,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Flag::MaxIterations => "--max-iterations",
            Flag::CompletionPromise => "--completion-promise",
            Flag::PrdFile => "--prd-file",
            Flag::PromptFile => "--prompt-file",
            Flag::MaxStoryAttempts => "--max-story-attempts",
            Flag::Verify => "--verify",
            Flag::VerifyTimeout => "--verify-timeout",
            Flag::MaxStalls => "--max-stalls",
            Flag::MaxTokens => "--max-tokens",
            Flag::MaxRuntime => "--max-runtime",
            Flag::MaxCost => "--max-cost",
            Flag::Review => "--review",
            Flag::ReviewCmd => "--review-cmd",
            Flag::MaxReviews => "--max-reviews",
            Flag::ReviewTimeout => "--review-timeout",
            Flag::Notify => "--notify",
            Flag::Replace => "--replace",
            Flag::Fresh => "--fresh",
            Flag::Parallel => "--parallel",
            Flag::Pin => "--pin",
            Flag::Help => "--help",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Flag::MaxIterations => "20",
            Flag::CompletionPromise => "DONE",
            Flag::PrdFile => "prd.json",
            Flag::PromptFile => "PROMPT.md",
            Flag::MaxStoryAttempts => "5",
            Flag::Verify => "\"cargo test\"",
            Flag::VerifyTimeout => "300",
            Flag::MaxStalls => "3",
            Flag::MaxTokens => "2000000",
            Flag::MaxRuntime => "4h",
            Flag::MaxCost => "25",
            Flag::Review => "acceptance,security,quality",
            Flag::ReviewCmd => "\"./review.sh\"",
            Flag::MaxReviews => "2",
            Flag::ReviewTimeout => "600",
            Flag::Notify => "desktop",
            Flag::Parallel => "4",
            Flag::Pin => "'tests/**'",
            Flag::Replace | Flag::Fresh | Flag::Help => "",
        }
    }

    fn takes_value(self) -> bool {
        !matches!(
            self,
            Flag::Replace | Flag::Fresh | Flag::Help | Flag::Review
        )
    }

    /// A value it takes only when the next word is one: `--review` takes a
    /// list of reviewer names, and is followed by prompt words otherwise.
    fn optional_value(self, next: &str) -> bool {
        matches!(self, Flag::Review) && crate::review_settings::parse_list(next).is_some()
    }
}

impl StartArgs {
    fn set(&mut self, flag: Flag, value: Option<String>) -> Result<(), ArgsError> {
        let repeated = |present: bool| once(flag, present);
        let value = value.unwrap_or_default();
        match flag {
            Flag::MaxIterations => {
                repeated(self.max_iterations.is_some())?;
                self.max_iterations = Some(number(flag, &value, " (0 = unlimited)")?);
            }
            Flag::MaxStoryAttempts => {
                repeated(self.max_story_attempts.is_some())?;
                self.max_story_attempts = Some(positive_u32(flag, &value)?);
            }
            Flag::VerifyTimeout => {
                repeated(self.verify_timeout.is_some())?;
                self.verify_timeout = Some(positive_secs(flag, &value)?);
            }
            Flag::MaxStalls => {
                repeated(self.max_stalls.is_some())?;
                let n = number(flag, &value, " (0 = never stop for lack of progress)")?;
                self.max_stalls = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
            Flag::MaxTokens | Flag::MaxRuntime | Flag::MaxCost => self.set_budget(flag, value)?,
            Flag::Review | Flag::MaxReviews | Flag::ReviewTimeout => {
                self.set_review(flag, value)?;
            }
            Flag::Replace => self.replace = true,
            Flag::Fresh => self.fresh = true,
            Flag::Parallel => {
                repeated(self.parallel.is_some())?;
                let n = positive_u32(flag, &value)?;
                if n > MAX_PARALLEL {
                    return Err(ArgsError::BadValue {
                        flag: flag.name(),
                        value,
                        what: "a number of stories at once from 1 to 16",
                    });
                }
                self.parallel = Some(n);
            }
            // Repeatable: each adds a glob.
            Flag::Pin => {
                if value.trim().is_empty() {
                    return Err(ArgsError::MissingValue(flag.name(), flag.example()));
                }
                self.pin.push(value);
            }
            Flag::Help => self.help = true,
            // The flags that take text as it is.
            text => match self.text_slot(text) {
                Some(slot) if slot.is_none() => *slot = Some(value),
                _ => return Err(ArgsError::Repeated(flag.name())),
            },
        }
        Ok(())
    }

    /// The option a flag taking text as it is sets, once.
    fn text_slot(&mut self, flag: Flag) -> Option<&mut Option<String>> {
        Some(match flag {
            Flag::Verify => &mut self.verify,
            Flag::Notify => &mut self.notify,
            Flag::CompletionPromise => &mut self.completion_promise,
            Flag::PrdFile => &mut self.prd_file,
            Flag::PromptFile => &mut self.prompt_file,
            Flag::ReviewCmd => &mut self.review_cmd,
            _ => return None,
        })
    }

    /// `--review [LIST]`, `--max-reviews N`, `--review-timeout SECS`: each given once.
    fn set_review(&mut self, flag: Flag, value: String) -> Result<(), ArgsError> {
        let given = match flag {
            Flag::Review => self.review.is_some(),
            Flag::MaxReviews => self.max_reviews.is_some(),
            _ => self.review_timeout.is_some(),
        };
        once(flag, given)?;
        match flag {
            Flag::Review => {
                let names = match value.as_str() {
                    "" => vec!["acceptance".to_string()],
                    list => crate::review_settings::parse_list(list).ok_or_else(|| ArgsError::BadValue {
                        flag: flag.name(),
                        value: value.clone(),
                        what: "reviewer names separated by commas: acceptance, security, quality, or all",
                    })?,
                };
                self.review = Some(names);
            }
            Flag::MaxReviews => self.max_reviews = Some(positive_u32(flag, &value)?),
            _ => self.review_timeout = Some(positive_secs(flag, &value)?),
        }
        Ok(())
    }

    /// `--max-tokens 2000000` (or `2M`, `500k`), `--max-runtime 90m`,
    /// `--max-cost 25` (dollars): each above zero, each given once.
    fn set_budget(&mut self, flag: Flag, value: String) -> Result<(), ArgsError> {
        let bad = |what| ArgsError::BadValue {
            flag: flag.name(),
            value: value.clone(),
            what,
        };
        let given = match flag {
            Flag::MaxTokens => self.max_tokens.is_some(),
            Flag::MaxRuntime => self.max_runtime_secs.is_some(),
            _ => self.max_cost.is_some(),
        };
        once(flag, given)?;
        match flag {
            Flag::MaxTokens => {
                let n = parse_tokens(&value).ok().filter(|n| *n > 0);
                self.max_tokens =
                    Some(n.ok_or_else(|| bad("a token count above 0, e.g. 2000000, 500k or 2M"))?);
            }
            Flag::MaxRuntime => {
                let d = parse_duration(&value)
                    .ok()
                    .map(|d| d.as_secs())
                    .filter(|s| *s > 0);
                self.max_runtime_secs =
                    Some(d.ok_or_else(|| bad("a duration, e.g. 90m, 4h or 1h30m"))?);
            }
            _ => {
                let usd = Usd::parse(&value).filter(|u| u.0 > 0);
                self.max_cost = Some(
                    usd.ok_or_else(|| bad("an amount of US dollars above 0, e.g. 25 or 2.50"))?,
                );
            }
        }
        Ok(())
    }
}

/// An option given once only.
fn once(flag: Flag, given: bool) -> Result<(), ArgsError> {
    if given {
        Err(ArgsError::Repeated(flag.name()))
    } else {
        Ok(())
    }
}

/// A count above 0 that fits in 32 bits (`--max-story-attempts`, `--max-reviews`).
fn positive_u32(flag: Flag, value: &str) -> Result<u32, ArgsError> {
    let hint = " above 0";
    let n = number(flag, value, hint)?;
    u32::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ArgsError::BadNumber {
            flag: flag.name(),
            value: value.to_string(),
            hint,
        })
}

/// Seconds above 0 (`--verify-timeout`, `--review-timeout`).
fn positive_secs(flag: Flag, value: &str) -> Result<u64, ArgsError> {
    let hint = " of seconds above 0";
    match number(flag, value, hint)? {
        0 => Err(ArgsError::BadNumber {
            flag: flag.name(),
            value: value.to_string(),
            hint,
        }),
        n => Ok(n),
    }
}

fn number(flag: Flag, value: &str, hint: &'static str) -> Result<u64, ArgsError> {
    let bad = || ArgsError::BadNumber {
        flag: flag.name(),
        value: value.to_string(),
        hint,
    };
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    value.parse().map_err(|_| bad())
}

/// If `text` invokes the loop command (`/ralph:ralph-loop` or `/ralph-loop`),
/// the text after the command name.
pub fn loop_command_args(text: &str) -> Option<&str> {
    command_args(text, LOOP_COMMANDS)
}

/// Every spelling a user may type for each command: qualified by the plugin
/// name, and unqualified (the client resolves an unqualified skill name).
pub const LOOP_COMMANDS: &[&str] = &["/ralph:ralph-loop", "/ralph-loop"];
pub const CANCEL_COMMANDS: &[&str] = &["/ralph:cancel-ralph", "/cancel-ralph"];
pub const STATUS_COMMANDS: &[&str] = &["/ralph:ralph-status", "/ralph-status"];
pub const RESUME_COMMANDS: &[&str] = &["/ralph:ralph-resume", "/ralph-resume"];
/// `/ralph:help` was the name before the commands became skills.
pub const HELP_COMMANDS: &[&str] = &["/ralph:ralph-help", "/ralph-help", "/ralph:help"];

/// The text after one of `names` when `text` starts with it (then whitespace or end).
pub fn command_args<'a>(text: &'a str, names: &[&str]) -> Option<&'a str> {
    let text = text.trim_start();
    names.iter().find_map(|name| {
        let rest = text.strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
    })
}

/// Parse the raw text typed after the command name.
pub fn parse_command_line(text: &str) -> Result<StartArgs, ArgsError> {
    let mut args = StartArgs::default();
    let mut pieces: Vec<&str> = Vec::new();
    let mut keep_from = 0;
    let mut pos = 0;
    while let Some(start) = next_token(text, pos) {
        let word = read_word(text, start);
        if !looks_like_flag(&text[start..word.end]) {
            pos = word.end;
            continue;
        }
        if &text[start..word.end] == "--" {
            pieces.push(&text[keep_from..start]);
            keep_from = text.len();
            // Everything after ` -- ` is prompt text, verbatim.
            pieces.push(
                text[word.end..]
                    .strip_prefix(char::is_whitespace)
                    .unwrap_or(&text[word.end..]),
            );
            break;
        }
        let raw = &text[start..word.end];
        let (name, inline) = match raw.split_once('=') {
            Some((n, _)) => (n, true),
            None => (raw, false),
        };
        let flag = match Flag::from_name(name) {
            Some(f) => f,
            // `-h...` that is not a flag is an ordinary word.
            None if !raw.starts_with("--") => {
                pos = word.end;
                continue;
            }
            None => return Err(ArgsError::UnknownFlag(name.to_string())),
        };
        let mut end = word.end;
        let value = if inline && !flag.takes_value() && matches!(flag, Flag::Review) {
            let eq = start + name.len() + 1;
            let v = read_word(text, eq);
            end = v.end;
            Some(v.value)
        } else if !flag.takes_value() {
            match next_token(text, word.end) {
                Some(vs) if flag.optional_value(&read_word(text, vs).value) => {
                    let v = read_word(text, vs);
                    end = v.end;
                    Some(v.value)
                }
                _ => None,
            }
        } else if inline {
            let eq = start + name.len() + 1;
            let v = read_word(text, eq);
            end = v.end;
            Some(v.value)
        } else {
            match next_token(text, word.end) {
                Some(vs) if !text[vs..].starts_with("--") => {
                    let v = read_word(text, vs);
                    end = v.end;
                    Some(v.value)
                }
                _ => return Err(ArgsError::MissingValue(flag.name(), flag.example())),
            }
        };
        args.set(flag, value)?;
        pieces.push(&text[keep_from..start]);
        keep_from = end;
        pos = end;
    }
    if keep_from < text.len() {
        pieces.push(&text[keep_from..]);
    }
    args.prompt = join_pieces(&pieces);
    Ok(args)
}

/// Parse a terminal's argv (already split by the user's shell).
pub fn parse_argv(argv: &[String]) -> Result<StartArgs, ArgsError> {
    let mut args = StartArgs::default();
    let mut words: Vec<&str> = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            words.extend(it.by_ref().map(String::as_str));
            break;
        }
        if !looks_like_flag(a) {
            words.push(a);
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let flag = Flag::from_name(name).ok_or_else(|| ArgsError::UnknownFlag(name.into()))?;
        let value = if !flag.takes_value() {
            match it.as_slice().first() {
                _ if inline.is_some() && matches!(flag, Flag::Review) => inline,
                Some(next) if flag.optional_value(next) => it.next().cloned(),
                _ => None,
            }
        } else if inline.is_some() {
            inline
        } else {
            match it.next() {
                Some(v) if !v.starts_with("--") => Some(v.clone()),
                _ => return Err(ArgsError::MissingValue(flag.name(), flag.example())),
            }
        };
        args.set(flag, value)?;
    }
    args.prompt = words.join(" ").trim().to_string();
    Ok(args)
}

/// `--name...`, `--` or `-h`: anything else (`---`, `-1`, `--5`) is a word.
fn looks_like_flag(word: &str) -> bool {
    word == "--"
        || word == "-h"
        || word
            .strip_prefix("--")
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        let a =
            parse_command_line("go --max-tokens 2M --max-runtime=1h30m --max-cost $2.50").unwrap();
        assert_eq!(a.prompt, "go");
        assert_eq!(a.max_tokens, Some(2_000_000));
        assert_eq!(a.max_runtime_secs, Some(5_400));
        assert_eq!(a.max_cost, Some(Usd(2_500_000)));
        for bad in [
            "--max-tokens 0",
            "--max-runtime soon",
            "--max-cost -1",
            "--max-cost 0",
        ] {
            let e = parse_command_line(&format!("go {bad}")).unwrap_err();
            assert!(matches!(e, ArgsError::BadValue { .. }), "{bad}: {e}");
        }
        let e = parse_command_line("go --max-cost 1 --max-cost 2").unwrap_err();
        assert_eq!(e, ArgsError::Repeated("--max-cost"));
    }

    #[test]
    fn prompt_is_kept_byte_for_byte() {
        let raw = " Build \"x\" with `id` and $(touch pwned) $HOME\n---\niteration: 3\n  indented --max-iterations 5 --completion-promise \"ALL DONE\"";
        let a = parse_command_line(raw).unwrap();
        assert_eq!(
            a.prompt,
            "Build \"x\" with `id` and $(touch pwned) $HOME\n---\niteration: 3\n  indented"
        );
        assert_eq!(a.max_iterations, Some(5));
        assert_eq!(a.completion_promise.as_deref(), Some("ALL DONE"));
    }

    #[test]
    fn flags_anywhere_and_equals_form() {
        let a =
            parse_command_line("--max-iterations=0 fix it --prd-file=plan/prd.json now").unwrap();
        assert_eq!(a.prompt, "fix it now");
        assert_eq!(a.max_iterations, Some(0));
        assert_eq!(a.prd_file.as_deref(), Some("plan/prd.json"));
        let a = parse_command_line("x --completion-promise='it is done'").unwrap();
        assert_eq!(a.completion_promise.as_deref(), Some("it is done"));
    }

    #[test]
    fn errors_are_specific() {
        assert_eq!(
            parse_command_line("fix --verbose flag"),
            Err(ArgsError::UnknownFlag("--verbose".into()))
        );
        assert!(matches!(
            parse_command_line("x --max-iterations 1e3"),
            Err(ArgsError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_command_line("x --max-iterations -1"),
            Err(ArgsError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_command_line("x --max-iterations"),
            Err(ArgsError::MissingValue(..))
        ));
        assert!(matches!(
            parse_command_line("x --max-iterations 0x10"),
            Err(ArgsError::BadNumber { .. })
        ));
        assert_eq!(
            parse_command_line("x --prd-file a --prd-file b"),
            Err(ArgsError::Repeated("--prd-file"))
        );
    }

    #[test]
    fn double_dash_ends_options_and_apostrophes_do_not_group() {
        let a =
            parse_command_line("don't stop --max-iterations 4 -- then --verbose stays").unwrap();
        assert_eq!(a.prompt, "don't stop then --verbose stays");
        assert_eq!(a.max_iterations, Some(4));
        let a = parse_command_line("\"quoted --max-iterations 9\" and").unwrap();
        assert_eq!(a.prompt, "\"quoted --max-iterations 9\" and");
        assert_eq!(a.max_iterations, None);
    }

    #[test]
    fn command_detection() {
        assert_eq!(loop_command_args("/ralph:ralph-loop do it"), Some(" do it"));
        assert_eq!(loop_command_args("  /ralph-loop"), Some(""));
        assert_eq!(loop_command_args("/ralph-loops x"), None);
        assert_eq!(loop_command_args("please /ralph-loop"), None);
    }

    #[test]
    fn verify_flags() {
        let a = parse_command_line(
            "x --verify \"cargo test --quiet\" --verify-timeout 60 --max-stalls 0",
        )
        .unwrap();
        assert_eq!(a.verify.as_deref(), Some("cargo test --quiet"));
        assert_eq!(a.verify_timeout, Some(60));
        assert_eq!(a.max_stalls, Some(0));
        assert!(parse_command_line("x --verify-timeout 0").is_err());
    }

    #[test]
    fn argv_form() {
        let argv: Vec<String> = ["Fix", "the bug", "--max-iterations", "3", "--", "--x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let a = parse_argv(&argv).unwrap();
        assert_eq!(a.prompt, "Fix the bug --x");
        assert_eq!(a.max_iterations, Some(3));
        assert!(parse_argv(&["--nope".to_string()]).is_err());
    }
}
