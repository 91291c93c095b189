//! Every option a loop takes, defined once: its name, the value it takes,
//! its default, what `0` means for it, its one line of help, and which
//! commands take it. The parser (`super`), `--help` of `ralph start` and
//! `ralph run`, `/ralph-help` (`control::help_text`), the skills' argument
//! hints and docs/options.md all come from (or are checked against, by
//! `tests/it/options_doc.rs`) this table. Pure.

/// Which commands take an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// Every loop start: `/ralph-loop`, `ralph start` and `ralph run`.
    Loop,
    /// `ralph run` only (the headless runner's own settings).
    RunOnly,
}

/// The value an option takes, and so how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// No value (`--fresh`).
    Switch,
    /// A whole number in base 10.
    Count,
    /// A duration: `90s`, `10m`, `2h`, `1h30m`, or bare seconds.
    Duration,
    /// A token count: `2000000`, `500k`, `2M`.
    Tokens,
    /// US dollars: `25`, `2.50`.
    Usd,
    /// Text taken as it is (a command, a path, a promise).
    Text,
    /// A value given only with `=` or, as the last of the arguments (or
    /// followed by options only), as the next word when it is one of the
    /// option's values (`--review`, `--review=security,quality`).
    Optional,
}

/// What `0` means for an option that takes a number: one rule for all,
/// "0 turns a cap off"; where nothing can be off (a timeout: ralph runs
/// nothing without one; a count that must be at least one) 0 is refused,
/// and the help says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero {
    /// Not a number: `0` is an ordinary value (or a word).
    NotNumber,
    /// `0` turns it off, as said here ("no cap", "off").
    Off(&'static str),
    /// `0` is refused: why.
    Refused(&'static str),
}

/// One option.
#[derive(Debug, Clone, Copy)]
pub struct OptSpec {
    /// `--name`.
    pub name: &'static str,
    /// The value's placeholder in usage lines (`N`, `DURATION`); empty for a switch.
    pub value: &'static str,
    pub kind: ValueKind,
    /// The default, as the help states it (`None`: unset unless given).
    pub default: Option<&'static str>,
    pub zero: Zero,
    /// One line of help.
    pub help: &'static str,
    pub takes: Takes,
    /// An example value for "needs a value, e.g. ..." (empty for a switch).
    pub example: &'static str,
    /// May be given more than once (each adds a value).
    pub repeatable: bool,
}

const fn opt(
    name: &'static str,
    value: &'static str,
    kind: ValueKind,
    help: &'static str,
) -> OptSpec {
    OptSpec {
        name,
        value,
        kind,
        default: None,
        zero: Zero::NotNumber,
        help,
        takes: Takes::Loop,
        example: "",
        repeatable: false,
    }
}

impl OptSpec {
    const fn default(mut self, d: &'static str) -> OptSpec {
        self.default = Some(d);
        self
    }
    const fn zero(mut self, z: Zero) -> OptSpec {
        self.zero = z;
        self
    }
    const fn eg(mut self, e: &'static str) -> OptSpec {
        self.example = e;
        self
    }
    const fn run_only(mut self) -> OptSpec {
        self.takes = Takes::RunOnly;
        self
    }
    const fn repeatable(mut self) -> OptSpec {
        self.repeatable = true;
        self
    }

    /// `--name VALUE` (or `--name[=VALUE]`, or `--name`), for usage lines.
    pub fn usage(&self) -> String {
        match self.kind {
            ValueKind::Switch => self.name.to_string(),
            ValueKind::Optional => format!("{}[={}]", self.name, self.value),
            _ => format!("{} {}", self.name, self.value),
        }
    }

    /// The help line's tail: the default and what 0 means, when there are.
    pub fn notes(&self) -> String {
        let mut notes = Vec::new();
        if let Some(d) = self.default {
            notes.push(format!("default {d}"));
        }
        match self.zero {
            Zero::Off(what) => notes.push(format!("0 = {what}")),
            // Why is the error's to say (and docs/options.md's).
            Zero::Refused(_) => notes.push("0 refused".to_string()),
            Zero::NotNumber => {}
        }
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        }
    }

    /// The option's full line of help: what it does, its default, its 0.
    pub fn line(&self) -> String {
        format!("{}{}", self.help, self.notes())
    }
}

const TIMEOUT_ZERO: Zero = Zero::Refused("ralph runs nothing without a time limit");
const AT_LEAST_ONE: Zero = Zero::Refused("at least 1");

/// Every option, in the order the help lists them.
pub const OPTIONS: &[OptSpec] = &[
    opt("--max-iterations", "N", ValueKind::Count, "iterations in all, then the loop stops")
        .default("0")
        .zero(Zero::Off("no cap"))
        .eg("20"),
    opt("--completion-promise", "TEXT", ValueKind::Text, "the loop ends when Claude prints <promise>TEXT</promise>, only when true (PRD default: RALPH-COMPLETE)")
        .eg("DONE"),
    opt("--prd-file", "PATH", ValueKind::Text, "PRD mode: work a prd.json story by story (write one with /ralph-prd)")
        .eg("prd.json"),
    opt("--prompt-file", "PATH", ValueKind::Text, "read the prompt from a file (its frontmatter is not part of it)")
        .eg("PROMPT.md"),
    opt("--verify", "CMD", ValueKind::Text, "completion counts only when CMD exits 0 (default: the policy's [gates] full row)")
        .eg("\"cargo test\""),
    opt("--verify-timeout", "DURATION", ValueKind::Duration, "how long --verify may run")
        .default("300s")
        .zero(TIMEOUT_ZERO)
        .eg("5m"),
    opt("--max-stalls", "N", ValueKind::Count, "stop after N iterations in a row that change nothing")
        .default("3")
        .zero(Zero::Off("off"))
        .eg("3"),
    opt("--score", "CMD", ValueKind::Text, "measure each changed iteration with CMD: its test counts, else its last number (default: the check)")
        .eg("\"./score.sh\""),
    opt("--max-plateau", "N", ValueKind::Count, "stop after N iterations in a row that change the code without beating the best score")
        .default("5")
        .zero(Zero::Off("off"))
        .eg("8"),
    opt("--max-story-attempts", "N", ValueKind::Count, "stop when one story is fed N times in a row without passing")
        .default("5")
        .zero(AT_LEAST_ONE)
        .eg("5"),
    opt("--max-tokens", "N", ValueKind::Tokens, "stop once the loop's turns used N tokens (input, output, cache; 500k, 2M)")
        .zero(Zero::Off("no cap"))
        .eg("2M"),
    opt("--max-runtime", "DURATION", ValueKind::Duration, "stop once the loop has run this long")
        .zero(Zero::Off("no cap"))
        .eg("4h"),
    opt("--max-cost", "USD", ValueKind::Usd, "stop once the loop's tokens cost this much (the model must be in ralph's price table)")
        .zero(Zero::Off("no cap"))
        .eg("25"),
    opt("--review", "LIST", ValueKind::Optional, "reviewers approve the work before the loop ends: acceptance (default), security, quality, all; PRD: story")
        .eg("acceptance,security"),
    opt("--review-cmd", "CMD", ValueKind::Text, "a program reviews instead (request JSON on stdin, verdict JSON on stdout)")
        .eg("\"./review.sh\""),
    opt("--max-reviews", "N", ValueKind::Count, "review rounds before a rejected loop stops")
        .default("3")
        .zero(AT_LEAST_ONE)
        .eg("2"),
    opt("--review-timeout", "DURATION", ValueKind::Duration, "how long one review may run")
        .default("600s")
        .zero(TIMEOUT_ZERO)
        .eg("10m"),
    opt("--fresh", "", ValueKind::Switch, "each story (or iteration) is worked by a subagent in a fresh context"),
    opt("--parallel", "N", ValueKind::Count, "PRD mode: up to N stories at once (at most 16), each in its own git worktree; implies --fresh")
        .zero(AT_LEAST_ONE)
        .eg("4"),
    opt("--notify", "CMD|desktop", ValueKind::Text, "run CMD (sh -c), or `desktop`, when the loop ends or pauses for you")
        .eg("desktop"),
    opt("--pin", "GLOB", ValueKind::Text, "pin more files (repeatable): checks use them as at start; the agent may not write them")
        .eg("'tests/**'")
        .repeatable(),
    opt("--replace", "", ValueKind::Switch, "take over another session's running loop in this project"),
    opt("--sandbox", "require", ValueKind::Optional, "refuse to start unless the agent's commands run in Claude Code's sandbox (by default: used where it can be)")
        .eg("require"),
    // `ralph run` only.
    opt("--claude", "PATH", ValueKind::Text, "the Claude Code client to run (default: $RALPH_CLAUDE, else `claude` on PATH)")
        .run_only()
        .eg("/usr/local/bin/claude"),
    opt("--max-failures", "N", ValueKind::Count, "end the run after N client failures in a row (crash, non-zero exit, API error)")
        .default("3")
        .zero(AT_LEAST_ONE)
        .run_only()
        .eg("3"),
    opt("--max-wait", "DURATION", ValueKind::Duration, "the longest the run waits out rate and usage limits in a row")
        .default("6h")
        .zero(Zero::Off("never wait: end at the first limit"))
        .run_only()
        .eg("90m"),
    opt("--rotate-at", "TOKENS", ValueKind::Tokens, "ask the agent for a hand-off when its context reaches TOKENS")
        .default("120k")
        .zero(Zero::Off("off"))
        .run_only()
        .eg("120k"),
    opt("--rotate-hard", "TOKENS", ValueKind::Tokens, "stop the client when its context reaches TOKENS")
        .default("160k")
        .zero(Zero::Off("off"))
        .run_only()
        .eg("160k"),
    opt("--iteration-timeout", "DURATION", ValueKind::Duration, "stop an iteration that runs longer than this")
        .default("2h")
        .zero(Zero::Off("no cap"))
        .run_only()
        .eg("30m"),
    opt("--no-sandbox", "", ValueKind::Switch, "run the client without Claude Code's sandbox: ralph's files are then only guarded by reading commands, and what gets past is caught after the fact")
        .run_only(),
    opt("--story", "ID", ValueKind::Text, "work on story ID of --prd-file (default prd.json) only, on branch ralph/ID; exit 0 done, 1 not done, 3 usage limit, 4 error (docs/github-actions.md)")
        .run_only()
        .eg("US-1"),
    opt("--result", "FILE", ValueKind::Text, "with --story: write what the run did as JSON to FILE (read by `ralph merge --from-results`)")
        .run_only()
        .eg("result.json"),
];

/// `--help`, and `-h` when it is the only argument (in a prompt, `-h` is a word).
pub(crate) const HELP_FLAG: &str = "--help";

/// The rule for `0`, stated once in every help.
pub(crate) const ZERO_RULE: &str =
    "0 turns a cap off; where nothing can be off (a timeout, a count of at least 1) 0 is refused.";

/// The rule for durations, stated once in every help.
pub(crate) const DURATION_RULE: &str = "DURATION: 90s, 10m, 2h, 1h30m or bare seconds.";

/// The option named `name` (exactly) that `takes` allows.
pub fn find(name: &str, run: bool) -> Option<&'static OptSpec> {
    OPTIONS
        .iter()
        .find(|o| o.name == name && (run || o.takes == Takes::Loop))
}

/// The options of a command: `run` adds `ralph run`'s own.
pub fn of(run: bool) -> impl Iterator<Item = &'static OptSpec> {
    OPTIONS
        .iter()
        .filter(move |o| run || o.takes == Takes::Loop)
}

/// The known option closest to a misspelt `name` (at most two edits, or
/// one in three of its letters), for "did you mean".
pub(crate) fn closest(name: &str, run: bool) -> Option<&'static str> {
    let typed = name.split('=').next().unwrap_or(name);
    let limit = (typed.len() / 3).clamp(1, 3);
    of(run)
        .map(|o| (edit_distance(typed, o.name), o.name))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
        .or_else(|| {
            // A prefix typed short (`--max-iter`) is meant too.
            let mut hits = of(run).filter(|o| typed.len() > 4 && o.name.starts_with(typed));
            match (hits.next(), hits.next()) {
                (Some(o), None) => Some(o.name),
                _ => None,
            }
        })
}

/// Levenshtein distance over bytes (option names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The options' lines of help, aligned: `  --name VALUE   help (default; 0)`.
pub(crate) fn help_lines(run: bool) -> String {
    let width = of(run).map(|o| o.usage().len()).max().unwrap_or(0) + 2;
    of(run)
        .map(|o| format!("  {:width$}{}\n", o.usage(), o.line()))
        .collect()
}

/// The options as a Markdown table (docs/options.md holds it, checked by
/// `tests/it/options_doc.rs`).
pub fn markdown_table() -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "| option | value | default | 0 means | what it does | taken by |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for o in OPTIONS {
        let zero = match o.zero {
            Zero::NotNumber => String::new(),
            Zero::Off(what) => what.to_string(),
            Zero::Refused(why) => format!("refused: {why}"),
        };
        let takes = match o.takes {
            Takes::Loop => "/ralph-loop, ralph start, ralph run",
            Takes::RunOnly => "ralph run",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            o.name,
            cell(o.value),
            o.default.unwrap_or(""),
            zero,
            cell(o.help),
            takes
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_option_finds_its_name() {
        assert_eq!(closest("--max-iteration", false), Some("--max-iterations"));
        assert_eq!(closest("--max-iter", false), Some("--max-iterations"));
        assert_eq!(closest("--verfy", false), Some("--verify"));
        assert_eq!(closest("--prd", false), Some("--prd-file"));
        assert_eq!(closest("--verbose", false), None);
        assert_eq!(closest("--max-failure", false), None);
        assert_eq!(closest("--max-failure", true), Some("--max-failures"));
    }

    #[test]
    fn every_option_is_written_once_and_says_its_zero() {
        for (i, o) in OPTIONS.iter().enumerate() {
            assert!(o.name.starts_with("--"), "{}", o.name);
            assert!(
                OPTIONS[i + 1..].iter().all(|p| p.name != o.name),
                "{}",
                o.name
            );
            let numeric = matches!(
                o.kind,
                ValueKind::Count | ValueKind::Duration | ValueKind::Tokens | ValueKind::Usd
            );
            assert_eq!(
                numeric,
                o.zero != Zero::NotNumber,
                "{}: what does 0 mean?",
                o.name
            );
            assert_eq!(
                o.kind == ValueKind::Switch,
                o.example.is_empty(),
                "{}",
                o.name
            );
        }
    }
}
