//! The optional command policy, in lockstride's `.ralph/command-policy`
//! format:
//!
//! ```text
//! [gates]
//! basic | cargo test
//! [rewrite]
//! ^pnpm -w run (.+)$ | pnpm \1 | this repo has no -w workspace flag
//! [deny]
//! pnpm test-e2e | containerized E2E is too expensive, use pnpm test-e2e:local
//! [wrap]
//! pnpm lint | lint
//! [protect]
//! pnpm format:write
//! ```
//!
//! Rows are split on `|` and trimmed. A `[rewrite]` row is split from the
//! right (reason, then replacement), so its regex may use `|` alternation.
//! Pure.

mod rewrite;

use crate::shell;
pub use rewrite::RewriteRule;
use rewrite::parse_rewrite;

/// A policy that cannot be read, with the line that broke it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("cannot be read: {0}")]
    Unreadable(String),
}

fn err(line: usize, message: impl Into<String>) -> PolicyError {
    PolicyError::Syntax {
        line,
        message: message.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Basic,
    Full,
    Final,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    pub tier: Tier,
    pub command: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyRule {
    /// The prefix as canonical words.
    pub prefix: Vec<String>,
    /// The same with the program's folder dropped (`/usr/bin/docker` ->
    /// `docker`), matched against commands with their wrappers peeled off.
    pub bare_prefix: Vec<String>,
    pub reason: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapRule {
    pub prefix: String,
    pub label: Option<String>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectRule {
    pub prefix: Vec<String>,
    pub bare_prefix: Vec<String>,
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct Policy {
    pub gates: Vec<Gate>,
    pub rewrites: Vec<RewriteRule>,
    pub denies: Vec<DenyRule>,
    pub wraps: Vec<WrapRule>,
    pub protects: Vec<ProtectRule>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Gates,
    Rewrite,
    Deny,
    Wrap,
    Protect,
}

impl Policy {
    /// Parse a policy file's text. Every rule is checked here (regexes are
    /// parsed, not compiled), so a broken rule is reported with its line
    /// rather than discovered on the one command that reaches it.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        Policy::parse_with(text, true)
    }

    /// `parse`, optionally without the regex syntax check: the binary skips
    /// it for a policy text it has already checked (the check is most of the
    /// parsing cost of a large policy). An unchecked regex that turns out to
    /// be invalid is still caught, when first used, as a reported, skipped rule.
    pub fn parse_with(text: &str, check_regexes: bool) -> Result<Policy, PolicyError> {
        // Editors on some systems save a byte-order mark; it is not part of the first row.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut p = Policy::default();
        let mut section = Section::None;
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let row = raw.trim();
            if row.is_empty() || row.starts_with('#') {
                continue;
            }
            if row.starts_with('[') && row.ends_with(']') {
                section = match row {
                    "[gates]" => Section::Gates,
                    "[rewrite]" => Section::Rewrite,
                    "[deny]" => Section::Deny,
                    // `[gate-wrapped]`: lockstride's older name for [wrap] (rows without a label).
                    "[wrap]" | "[gate-wrapped]" => Section::Wrap,
                    "[protect]" => Section::Protect,
                    other => {
                        return Err(err(
                            line,
                            format!(
                                "unknown section {other} (expected [gates], [rewrite], [deny], [wrap] or [protect])"
                            ),
                        ));
                    }
                };
                continue;
            }
            match section {
                Section::None => return Err(err(line, "a rule before any [section] header")),
                Section::Gates => p.gates.push(parse_gate(row, line)?),
                Section::Rewrite => p.rewrites.push(parse_rewrite(row, line, check_regexes)?),
                Section::Deny => {
                    let (prefix, reason) = split2(row);
                    if reason.is_empty() {
                        return Err(err(line, "a [deny] row needs `command-prefix | reason`"));
                    }
                    let prefix = prefix_words(prefix, line)?;
                    p.denies.push(DenyRule {
                        bare_prefix: bare(&prefix),
                        prefix,
                        reason: reason.to_string(),
                        line,
                    });
                }
                Section::Wrap => {
                    let (prefix, label) = split2(row);
                    if prefix.is_empty() {
                        return Err(err(line, "a [wrap] row needs `command-prefix | label`"));
                    }
                    p.wraps.push(WrapRule {
                        prefix: prefix.to_string(),
                        label: (!label.is_empty()).then(|| label.to_string()),
                        line,
                    });
                }
                Section::Protect => {
                    let (prefix, _) = split2(row);
                    let prefix = prefix_words(prefix, line)?;
                    p.protects.push(ProtectRule {
                        bare_prefix: bare(&prefix),
                        prefix,
                        line,
                    });
                }
            }
        }
        Ok(p)
    }

    /// The command pinned for a gate tier (another part of ralph runs `full`).
    pub fn gate(&self, tier: Tier) -> Option<&str> {
        self.gates
            .iter()
            .find(|g| g.tier == tier)
            .map(|g| g.command.as_str())
    }
}

/// Split on the first `|`, trimming both cells.
fn split2(row: &str) -> (&str, &str) {
    match row.split_once('|') {
        Some((a, b)) => (a.trim(), b.trim()),
        None => (row.trim(), ""),
    }
}

fn parse_gate(row: &str, line: usize) -> Result<Gate, PolicyError> {
    let (tier, command) = split2(row);
    let tier = match tier {
        "basic" => Tier::Basic,
        "full" => Tier::Full,
        "final" => Tier::Final,
        other => {
            return Err(err(
                line,
                format!("unknown gate tier `{other}` (expected basic, full or final)"),
            ));
        }
    };
    if command.is_empty() {
        return Err(err(line, "a [gates] row needs `tier | command`"));
    }
    Ok(Gate {
        tier,
        command: command.to_string(),
        line,
    })
}

fn bare(prefix: &[String]) -> Vec<String> {
    let mut b = prefix.to_vec();
    if let Some(first) = b.first_mut() {
        *first = first.rsplit('/').next().unwrap_or(first).to_string();
    }
    b
}

fn prefix_words(prefix: &str, line: usize) -> Result<Vec<String>, PolicyError> {
    let words =
        shlex::split(prefix).ok_or_else(|| err(line, format!("unbalanced quote in `{prefix}`")))?;
    if words.is_empty() {
        return Err(err(line, "empty command prefix"));
    }
    let canonical = canonical_words(&words).1;
    // `FOO=1` or `env A=1` alone canonicalise to nothing: such a row could
    // never match, and a rule that silently does nothing is worse than an error.
    if canonical.is_empty() {
        return Err(err(
            line,
            format!("`{prefix}` is only variable assignments: name the command to match"),
        ));
    }
    Ok(canonical)
}

/// The canonical form used for matching (a fixed point: canonicalising it
/// again changes nothing): leading `NAME=value` assignments
/// (and an `env` carrying only assignments) stripped, `pnpm run X` and
/// `pnpm exec X` made `pnpm X`. Returns how many words were stripped too.
pub fn canonical_words(words: &[String]) -> (usize, Vec<String>) {
    let mut k = 0;
    loop {
        while k < words.len() && shell::is_assignment(&words[k]) {
            k += 1;
        }
        if k < words.len()
            && words[k] == "env"
            && words.get(k + 1).is_some_and(|w| shell::is_assignment(w))
        {
            k += 1;
            continue;
        }
        break;
    }
    let mut out: Vec<String> = words[k..].to_vec();
    let verb = |w: &String| w == "run" || w == "exec";
    // `pnpm run X` is `pnpm X`, except when X is itself `run` or `exec` (a
    // script so named): dropping the verb there would make `pnpm run run x`
    // read as `pnpm run x`, then as `pnpm x`; the form must be a fixed point.
    if out.len() >= 3 && out[0] == "pnpm" && verb(&out[1]) && !verb(&out[2]) {
        out.remove(1);
    }
    (k, out)
}

/// `git -C dir -c k=v push` is `git push`, `pnpm --filter web -w test` is
/// `pnpm test`: options given before the subcommand (and their values) do
/// not change which command runs, so `[deny]` must not be dodged by them.
pub(crate) fn without_global_options(program: &str, args: &[String]) -> Vec<String> {
    let takes_value: &[&str] = match program {
        "git" => &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--exec-path",
            "--config-env",
        ],
        "pnpm" => &[
            "-C",
            "--dir",
            "-F",
            "--filter",
            "--reporter",
            "--loglevel",
            "--stream-prefix",
        ],
        _ => return args.to_vec(),
    };
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') && args[i] != "--" {
        let a = args[i].as_str();
        i += if takes_value.contains(&a) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or_default().to_vec()
}

/// The canonical form as written, for `[rewrite]`: the same words as
/// `canonical_words` keeps, but with their quoting untouched, so that a
/// rewrite never changes how the rest of the command is expanded
/// (`--filter "$PKG"` stays a variable, `"two words"` stays one word).
pub(crate) fn canonical_text(raw_words: &[String], words: &[String]) -> (usize, String) {
    let (k, canon) = canonical_words(words);
    let mut raw: Vec<&str> = raw_words.iter().skip(k).map(String::as_str).collect();
    // `pnpm run X` -> `pnpm X`: canonical_words dropped the second word.
    if canon.len() + 1 == raw.len() && raw.len() >= 3 {
        raw.remove(1);
    }
    (k, raw.join(" "))
}

/// Does `cmd` start with the words of `prefix` (whole words only, so
/// `pnpm test-e2e` does not match `pnpm test-e2e:local`)?
pub(crate) fn starts_with_words(cmd: &[String], prefix: &[String]) -> bool {
    !prefix.is_empty() && cmd.len() >= prefix.len() && cmd.iter().zip(prefix).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "\
# comment
[gates]
basic | pnpm basic-check
full  | pnpm all-check | tail -5

[rewrite]
^pnpm -w run (.+)$ | pnpm \\1 | no -w workspace flag
^(npx|pnpx) pnpm (.+)$ | pnpm $2 | use the local pnpm

[deny]
pnpm run test-e2e | too expensive

[wrap]
pnpm lint | lint

[protect]
pnpm format:write
";

    #[test]
    fn parses_lockstride_example() {
        let p = Policy::parse(EXAMPLE).unwrap();
        assert_eq!(p.gate(Tier::Basic), Some("pnpm basic-check"));
        assert_eq!(p.gate(Tier::Full), Some("pnpm all-check | tail -5"));
        assert_eq!(p.rewrites.len(), 2);
        assert_eq!(p.rewrites[1].pattern, "^(npx|pnpx) pnpm (.+)$");
        assert_eq!(p.denies[0].prefix, ["pnpm", "test-e2e"]);
        assert_eq!(p.wraps[0].label.as_deref(), Some("lint"));
        assert_eq!(p.protects[0].line, 17);
    }

    #[test]
    fn rewrite_applies_backrefs() {
        let p = Policy::parse(EXAMPLE).unwrap();
        assert_eq!(
            p.rewrites[0].apply("pnpm -w run build").unwrap().as_deref(),
            Some("pnpm build")
        );
        assert_eq!(p.rewrites[0].apply("cargo build").unwrap(), None);
        assert_eq!(
            p.rewrites[1].apply("npx pnpm i").unwrap().as_deref(),
            Some("pnpm i")
        );
    }

    #[test]
    fn errors_carry_the_line() {
        let e = Policy::parse("[deny]\nok | fine\n[rewrite]\n^a( | b | c\n").unwrap_err();
        assert!(e.to_string().starts_with("line 4:"), "{e}");
        let e = Policy::parse("rm | x").unwrap_err();
        assert!(e.to_string().starts_with("line 1:"));
        let e = Policy::parse("[nope]").unwrap_err();
        assert!(e.to_string().contains("unknown section"));
        let e = Policy::parse("[deny]\npnpm x\n").unwrap_err();
        assert!(e.to_string().contains("line 2"));
        let e = Policy::parse("[gates]\nmedium | x\n").unwrap_err();
        assert!(e.to_string().contains("tier"));
        // Parses, but needs Unicode case tables this build leaves out (unless
        // another crate turns them back on): an error, then, with its line.
        match Policy::parse("[rewrite]\n(?i)^npm test$ | pnpm test | x\n") {
            Ok(p) => assert!(p.rewrites[0].apply("NPM test").unwrap().is_some()),
            Err(e) => assert!(e.to_string().starts_with("line 2: invalid regex"), "{e}"),
        }
        // The ASCII form works.
        let p = Policy::parse("[rewrite]\n^(?i-u:npm) test$ | pnpm test | x\n").unwrap();
        assert_eq!(
            p.rewrites[0].apply("NPM test").unwrap().as_deref(),
            Some("pnpm test")
        );
    }

    #[test]
    fn canonical_strips_env_and_pnpm_run() {
        let w = |s: &str| shlex::split(s).unwrap();
        assert_eq!(
            canonical_words(&w("CI=1 pnpm run test")),
            (1, w("pnpm test"))
        );
        assert_eq!(
            canonical_words(&w("env A=1 B=2 pnpm exec vitest")),
            (3, w("pnpm vitest"))
        );
        assert!(starts_with_words(
            &w("pnpm test-e2e --x"),
            &w("pnpm test-e2e")
        ));
        assert!(!starts_with_words(
            &w("pnpm test-e2e:local"),
            &w("pnpm test-e2e")
        ));
    }
}
