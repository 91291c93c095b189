//! `/ralph-loop` arguments, parsed from the raw text the user typed (as a
//! `UserPromptSubmit` hook receives it) or from a terminal's argv; the
//! options themselves are defined once in [`options`].
//!
//! No shell ever sees the user's text: the prompt keeps its quotes,
//! backticks, `$(...)`, `$VAR` and newlines byte for byte. Only known
//! `--flags` (and their values) are taken out; an unknown `--flag` is an
//! error (with the closest option's name) rather than silently becoming
//! prompt words, and ` -- ` ends the options so the rest is prompt text
//! verbatim. `-h` is help only as the one argument; anywhere else it is a
//! prompt word. An optional value (`--review`) is taken with `=`, or as the
//! next word only when that word is one of its values and nothing but
//! options follows it; a value followed by prompt words is an error asking
//! which was meant, never a word silently eaten.
//! Pure.

use crate::budget::Usd;
use crate::run::units::{parse_duration, parse_tokens};
use options::{OptSpec, ValueKind, Zero};
use thiserror::Error;
use words::{join_pieces, next_token, read_word};

pub mod options;
mod run;
mod words;

pub use run::RunArgv;
pub use run::split_run_argv;

/// The most stories at once `--parallel` takes.
pub(crate) const MAX_PARALLEL: u32 = 16;

/// What a start asks of the client's sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum SandboxAsk {
    /// Used where it runs, said where it does not.
    #[default]
    WhereAble,
    /// `--sandbox=require`: no loop without it.
    Required,
}

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
    /// `--score CMD`: the command that measures each iteration (default: the check).
    pub score: Option<String>,
    /// `--max-plateau N`: scored iterations in a row without a new best that stop the loop.
    pub max_plateau: Option<u32>,
    /// Budgets: tokens, seconds of wall time, dollars (`0`, no cap: `None`).
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
    /// `--sandbox=require`: no loop unless the agent's commands run in the
    /// client's sandbox.
    pub(crate) sandbox: SandboxAsk,
    pub help: bool,
}

/// Why the arguments cannot start a loop: one line each, naming the option.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArgsError {
    #[error("unknown option `{name}`{}", did_you_mean(*.suggestion))]
    UnknownFlag {
        name: String,
        suggestion: Option<&'static str>,
    },
    #[error("`{flag}` takes {what}, not `{value}`")]
    BadValue {
        flag: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("`{flag} 0` is refused: {why}")]
    ZeroRefused {
        flag: &'static str,
        why: &'static str,
    },
    #[error("`{0}` needs a value, e.g. {0} {1}")]
    MissingValue(&'static str, &'static str),
    #[error("`{0}` was given twice")]
    Repeated(&'static str),
    #[error(
        "`{flag} {value}` is followed by prompt words: write `{flag}={value}` to set it, or put `{flag}` after the prompt to keep `{value}` as a prompt word"
    )]
    Ambiguous { flag: &'static str, value: String },
}

/// The unknown option's next step: the option meant, else where the list is.
fn did_you_mean(suggestion: Option<&str>) -> String {
    let keep = "to keep it as prompt text, put it after ` -- `";
    match suggestion {
        Some(s) => format!(": did you mean `{s}`? ({keep})"),
        None => format!(" (the options: /ralph-help, or ralph start --help; {keep})"),
    }
}

impl ArgsError {
    fn unknown(name: &str, run: bool) -> ArgsError {
        ArgsError::UnknownFlag {
            name: name.to_string(),
            suggestion: options::closest(name, run),
        }
    }
}

/// A whole number in base 10, with 0 as the option's rule says.
fn count(spec: &OptSpec, value: &str) -> Result<u64, ArgsError> {
    let bad = || ArgsError::BadValue {
        flag: spec.name,
        value: value.to_string(),
        what: "a whole number in base 10",
    };
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    nonzero_unless_off(spec, value.parse().map_err(|_| bad())?)
}

fn nonzero_unless_off(spec: &OptSpec, n: u64) -> Result<u64, ArgsError> {
    match spec.zero {
        Zero::Refused(why) if n == 0 => Err(ArgsError::ZeroRefused {
            flag: spec.name,
            why,
        }),
        _ => Ok(n),
    }
}

fn small(spec: &OptSpec, value: &str) -> Result<u32, ArgsError> {
    u32::try_from(count(spec, value)?).map_err(|_| ArgsError::BadValue {
        flag: spec.name,
        value: value.to_string(),
        what: "a smaller number",
    })
}

/// Seconds, from `90s`, `10m`, `2h`, `1h30m` or bare seconds.
fn seconds(spec: &OptSpec, value: &str) -> Result<u64, ArgsError> {
    let secs = parse_duration(value)
        .map_err(|_| ArgsError::BadValue {
            flag: spec.name,
            value: value.to_string(),
            what: "a duration, e.g. 90s, 10m, 2h or 1h30m (bare numbers are seconds)",
        })?
        .as_secs();
    nonzero_unless_off(spec, secs)
}

fn tokens(spec: &OptSpec, value: &str) -> Result<u64, ArgsError> {
    let n = parse_tokens(value).map_err(|_| ArgsError::BadValue {
        flag: spec.name,
        value: value.to_string(),
        what: "a token count, e.g. 2000000, 500k or 2M",
    })?;
    nonzero_unless_off(spec, n)
}

/// Whether `value` is one `spec` takes (for `ralph run`'s own options,
/// which the runner reads as text).
pub(crate) fn check_value(spec: &OptSpec, value: &str) -> Result<(), ArgsError> {
    match spec.kind {
        ValueKind::Count => count(spec, value).map(drop),
        ValueKind::Duration => seconds(spec, value).map(drop),
        ValueKind::Tokens => tokens(spec, value).map(drop),
        _ => Ok(()),
    }
}

/// `0` turns a cap off: no cap is `None`.
fn cap(n: u64) -> Option<u64> {
    (n > 0).then_some(n)
}

impl StartArgs {
    /// Set one loop option from its value (`None`: a switch, or an
    /// optional value not given).
    fn set(&mut self, spec: &'static OptSpec, value: Option<String>) -> Result<(), ArgsError> {
        let v = value.unwrap_or_default();
        let text = || Some(v.clone());
        match spec.name {
            "--max-iterations" => self.max_iterations = Some(count(spec, &v)?),
            "--max-stalls" => self.max_stalls = Some(small(spec, &v)?),
            "--max-plateau" => self.max_plateau = Some(small(spec, &v)?),
            "--max-story-attempts" => self.max_story_attempts = Some(small(spec, &v)?),
            "--max-reviews" => self.max_reviews = Some(small(spec, &v)?),
            "--verify-timeout" => self.verify_timeout = Some(seconds(spec, &v)?),
            "--review-timeout" => self.review_timeout = Some(seconds(spec, &v)?),
            "--max-runtime" => self.max_runtime_secs = cap(seconds(spec, &v)?),
            "--max-tokens" => self.max_tokens = cap(tokens(spec, &v)?),
            "--max-cost" => {
                let usd = Usd::parse(&v).ok_or_else(|| ArgsError::BadValue {
                    flag: spec.name,
                    value: v.clone(),
                    what: "an amount of US dollars, e.g. 25 or 2.50",
                })?;
                self.max_cost = (usd.0 > 0).then_some(usd);
            }
            "--parallel" => {
                let n = small(spec, &v)?;
                if n > MAX_PARALLEL {
                    return Err(ArgsError::BadValue {
                        flag: spec.name,
                        value: v,
                        what: "a number of stories at once from 1 to 16",
                    });
                }
                self.parallel = Some(n);
            }
            "--review" => self.review = Some(review_list(spec, &v)?),
            "--sandbox" if v.is_empty() || v == "require" => self.sandbox = SandboxAsk::Required,
            "--sandbox" => {
                return Err(ArgsError::BadValue {
                    flag: spec.name,
                    value: v,
                    what: "`require` (or nothing: the same)",
                });
            }
            "--pin" if v.trim().is_empty() => {
                return Err(ArgsError::MissingValue(spec.name, spec.example));
            }
            "--pin" => self.pin.push(v),
            "--replace" => self.replace = true,
            "--fresh" => self.fresh = true,
            "--verify" => self.verify = text(),
            "--score" => self.score = text(),
            "--notify" => self.notify = text(),
            "--completion-promise" => self.completion_promise = text(),
            "--prd-file" => self.prd_file = text(),
            "--prompt-file" => self.prompt_file = text(),
            "--review-cmd" => self.review_cmd = text(),
            // A `ralph run` option: the runner reads it (`split_run_argv`).
            _ => {}
        }
        Ok(())
    }
}

/// `--review` alone: `acceptance`; else the names given.
fn review_list(spec: &OptSpec, value: &str) -> Result<Vec<String>, ArgsError> {
    if value.is_empty() {
        return Ok(vec!["acceptance".to_string()]);
    }
    crate::review_settings::parse_list(value).ok_or_else(|| ArgsError::BadValue {
        flag: spec.name,
        value: value.to_string(),
        what: "reviewer names separated by commas: acceptance, security, quality, all, story",
    })
}

/// Whether `value` is one an optional value may be (`--review`'s names).
fn optional_fits(spec: &OptSpec, value: &str) -> bool {
    match spec.name {
        "--review" => crate::review_settings::parse_list(value).is_some(),
        "--sandbox" => value == "require",
        _ => false,
    }
}

/// The options seen so far: each once, unless it repeats by definition.
#[derive(Default)]
struct Seen(Vec<&'static str>);

impl Seen {
    fn note(&mut self, spec: &OptSpec) -> Result<(), ArgsError> {
        if !spec.repeatable && self.0.contains(&spec.name) {
            return Err(ArgsError::Repeated(spec.name));
        }
        self.0.push(spec.name);
        Ok(())
    }
}

/// If `text` invokes the loop command (`/ralph:ralph-loop` or `/ralph-loop`),
/// the text after the command name.
pub fn loop_command_args(text: &str) -> Option<&str> {
    command_args(text, LOOP_COMMANDS)
}

/// Every spelling a user may type for each command: qualified by the plugin
/// name, and unqualified (the client resolves an unqualified skill name).
/// Messages spell each the first unqualified way (`tests/it/spelling.rs`).
pub(crate) const LOOP_COMMANDS: &[&str] = &["/ralph:ralph-loop", "/ralph-loop"];
pub(crate) const CANCEL_COMMANDS: &[&str] = &["/ralph:cancel-ralph", "/cancel-ralph"];
pub(crate) const STATUS_COMMANDS: &[&str] = &["/ralph:ralph-status", "/ralph-status"];
pub(crate) const RESUME_COMMANDS: &[&str] = &["/ralph:ralph-resume", "/ralph-resume"];
pub(crate) const ACCEPT_COMMANDS: &[&str] = &["/ralph:ralph-accept", "/ralph-accept"];
/// `/ralph:help` was the name before the commands became skills.
pub(crate) const HELP_COMMANDS: &[&str] = &["/ralph:ralph-help", "/ralph-help", "/ralph:help"];
/// The status line's skill; `statusline` was its name before (beside the
/// client's own `/statusline`, hence the rename).
pub const STATUSLINE_COMMANDS: &[&str] = &[
    "/ralph:ralph-statusline",
    "/ralph-statusline",
    "/ralph:statusline",
];

/// The text after one of `names` when `text` starts with it (then whitespace or end).
pub(crate) fn command_args<'a>(text: &'a str, names: &[&str]) -> Option<&'a str> {
    let text = text.trim_start();
    names.iter().find_map(|name| {
        let rest = text.strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
    })
}

/// Help: `--help` given as an option, or `-h` as the only argument.
fn asks_help(word: &str, only: bool) -> bool {
    word == options::HELP_FLAG || (only && word == "-h")
}

/// Parse the raw text typed after the command name.
pub fn parse_command_line(text: &str) -> Result<StartArgs, ArgsError> {
    let mut args = StartArgs::default();
    if asks_help(text.trim(), true) {
        args.help = true;
        return Ok(args);
    }
    let mut seen = Seen::default();
    let mut pieces: Vec<&str> = Vec::new();
    let mut keep_from = 0;
    let mut pos = 0;
    while let Some(start) = next_token(text, pos) {
        let word = read_word(text, start);
        let raw = &text[start..word.end];
        pos = word.end;
        if !looks_like_flag(raw) {
            continue;
        }
        if raw == "--" {
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
        if raw == options::HELP_FLAG {
            args.help = true;
            continue;
        }
        let (name, inline) = match raw.split_once('=') {
            Some((n, _)) => (n, true),
            None => (raw, false),
        };
        let spec = options::find(name, false).ok_or_else(|| ArgsError::unknown(name, false))?;
        seen.note(spec)?;
        let (value, end) = text_value(
            text,
            spec,
            word.end,
            inline.then_some(start + name.len() + 1),
        )?;
        args.set(spec, value)?;
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

/// The value of `spec` in typed text after its name (ending at `after`;
/// `eq`: where an inline `=VALUE` starts), and where the option ends.
fn text_value(
    text: &str,
    spec: &'static OptSpec,
    after: usize,
    eq: Option<usize>,
) -> Result<(Option<String>, usize), ArgsError> {
    if let Some(eq) = eq.filter(|_| spec.kind != ValueKind::Switch) {
        let v = read_word(text, eq);
        return Ok((Some(v.value), v.end));
    }
    let next = next_token(text, after).map(|vs| (vs, read_word(text, vs)));
    match spec.kind {
        ValueKind::Switch => Ok((None, after)),
        ValueKind::Optional => match next {
            Some((_, v)) if optional_fits(spec, &v.value) => {
                let then = next_token(text, v.end).map(|s| &text[s..read_word(text, s).end]);
                if then.is_none_or(looks_like_flag) {
                    Ok((Some(v.value), v.end))
                } else {
                    Err(ArgsError::Ambiguous {
                        flag: spec.name,
                        value: v.value,
                    })
                }
            }
            _ => Ok((None, after)),
        },
        _ => match next {
            Some((vs, v)) if !text[vs..].starts_with("--") => Ok((Some(v.value), v.end)),
            _ => Err(ArgsError::MissingValue(spec.name, spec.example)),
        },
    }
}

/// Parse a terminal's argv (already split by the user's shell).
pub fn parse_argv(argv: &[String]) -> Result<StartArgs, ArgsError> {
    parse_argv_of(argv, false)
}

/// `parse_argv`; `run`: for `ralph run` (its own options are known, and
/// skipped here: `split_run_argv` takes them).
pub(crate) fn parse_argv_of(argv: &[String], run: bool) -> Result<StartArgs, ArgsError> {
    let mut args = StartArgs::default();
    if argv.len() == 1 && asks_help(&argv[0], true) {
        args.help = true;
        return Ok(args);
    }
    let mut seen = Seen::default();
    let mut words: Vec<&str> = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            words.extend(it.by_ref().map(String::as_str));
            break;
        }
        if a == options::HELP_FLAG {
            args.help = true;
            continue;
        }
        if !looks_like_flag(a) {
            words.push(a);
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let spec = options::find(name, run).ok_or_else(|| ArgsError::unknown(name, run))?;
        seen.note(spec)?;
        let value = match (spec.kind, inline) {
            (ValueKind::Switch, _) => None,
            (_, Some(v)) => Some(v),
            (ValueKind::Optional, None) => {
                let rest = it.as_slice();
                match rest.first() {
                    Some(next) if optional_fits(spec, next) => {
                        if !rest.get(1).is_none_or(|t| looks_like_flag(t)) {
                            return Err(ArgsError::Ambiguous {
                                flag: spec.name,
                                value: next.clone(),
                            });
                        }
                        it.next().cloned()
                    }
                    _ => None,
                }
            }
            (_, None) => match it.next() {
                Some(v) if !v.starts_with("--") => Some(v.clone()),
                _ => return Err(ArgsError::MissingValue(spec.name, spec.example)),
            },
        };
        args.set(spec, value)?;
    }
    args.prompt = words.join(" ").trim().to_string();
    Ok(args)
}

/// `--name...` or `--`: anything else (`---`, `-1`, `--5`, `-h`) is a word.
fn looks_like_flag(word: &str) -> bool {
    word == "--"
        || word
            .strip_prefix("--")
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests;
