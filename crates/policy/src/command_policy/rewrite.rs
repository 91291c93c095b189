//! `[rewrite]` rules: a regex, a replacement with `\1` / `$1` backrefs and a
//! reason. Rules are parsed (not compiled) up front; the common anchored
//! shapes run by hand, and the others are compiled on first use.
//! Pure.

use std::cell::OnceCell;

use regex::Regex;

use super::{PolicyError, err};

#[derive(Debug)]
pub struct RewriteRule {
    pub pattern: String,
    /// As written (`\1` or `$1` backrefs).
    pub replacement: String,
    pub reason: String,
    pub line: usize,
    /// The replacement in the `regex` crate's syntax (`${1}`).
    expansion: String,
    /// A literal every match must start with, when the pattern is anchored
    /// with `^` and simple enough to tell; lets most rules be skipped without
    /// compiling them, which keeps a 100-rule policy within the time budget.
    literal_prefix: Option<String>,
    /// The common lockstride shape `^literal(.+)$` (and its `.*` / bare
    /// variants), applied without building a regex at all: compiling one
    /// costs tens of microseconds, a noticeable share of a hook's budget.
    shape: Option<Shape>,
    compiled: OnceCell<Result<Regex, String>>,
}

/// What follows the literal prefix in a pattern the guard runs by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `^L$`
    Exact,
    /// `^L(.+)$` or `^L(.+)`
    RestNonEmpty,
    /// `^L(.*)$` or `^L(.*)`
    Rest,
}

impl Shape {
    fn of(pattern: &str, literal: &str) -> Option<Shape> {
        let rest = pattern.strip_prefix('^')?.strip_prefix(literal)?;
        match rest {
            "$" => Some(Shape::Exact),
            "(.+)$" | "(.+)" => Some(Shape::RestNonEmpty),
            "(.*)$" | "(.*)" => Some(Shape::Rest),
            _ => None,
        }
    }
}

/// Expand a template in the form `expansion()` produces (`${N}`, `${name}`,
/// `$$`) with group 0 = `whole` and group 1 = `rest`, as `regex` would: an
/// unknown group expands to nothing.
fn expand_by_hand(template: &str, whole: &str, rest: Option<&str>) -> String {
    let mut out = String::with_capacity(template.len() + whole.len());
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.peek().map(|&(_, n)| n) {
            Some('$') => {
                out.push('$');
                chars.next();
            }
            Some('{') => {
                let Some(close) = template[i..].find('}') else {
                    out.push('$');
                    continue;
                };
                match &template[i + 2..i + close] {
                    "0" => out.push_str(whole),
                    "1" => out.push_str(rest.unwrap_or("")),
                    _ => {}
                }
                while chars.peek().is_some_and(|&(j, _)| j <= i + close) {
                    chars.next();
                }
            }
            _ => out.push('$'),
        }
    }
    out
}

impl RewriteRule {
    /// The compiled regex, built on first use.
    pub(crate) fn regex(&self) -> Result<&Regex, String> {
        self.compiled
            .get_or_init(|| Regex::new(&self.pattern).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Rewrite `text` if this rule matches it; Err when the regex cannot be
    /// compiled (it parsed, so only a size limit can do that).
    pub fn apply(&self, text: &str) -> Result<Option<String>, String> {
        if let Some(p) = &self.literal_prefix
            && !text.starts_with(p.as_str())
        {
            return Ok(None);
        }
        // `.` stops at a newline, which only the regex engine handles.
        if let (Some(shape), Some(p)) = (self.shape, &self.literal_prefix)
            && !text.contains('\n')
        {
            let rest = &text[p.len()..];
            let matched = match shape {
                Shape::Exact => rest.is_empty(),
                Shape::RestNonEmpty => !rest.is_empty(),
                Shape::Rest => true,
            };
            let group = (shape != Shape::Exact).then_some(rest);
            return Ok(matched.then(|| expand_by_hand(&self.expansion, text, group)));
        }
        let re = self.regex()?;
        if !re.is_match(text) {
            return Ok(None);
        }
        Ok(Some(re.replace(text, self.expansion.as_str()).into_owned()))
    }
}

pub(super) fn parse_rewrite(
    row: &str,
    line: usize,
    check: bool,
) -> Result<RewriteRule, PolicyError> {
    let mut cells = row.rsplitn(3, '|');
    let reason = cells.next().unwrap_or("").trim();
    let replacement = cells.next().map(str::trim);
    let pattern = cells.next().map(str::trim);
    let (Some(pattern), Some(replacement)) = (pattern, replacement) else {
        return Err(err(
            line,
            "a [rewrite] row needs `regex | replacement | reason`",
        ));
    };
    if pattern.is_empty() || replacement.is_empty() {
        return Err(err(line, "a [rewrite] row needs a regex and a replacement"));
    }
    // Only the syntax tree is built here (a few microseconds a rule); the
    // few errors that only translation finds (an unknown Unicode class, say)
    // surface when the rule is first used, as a reported, skipped rule.
    if check && let Err(e) = regex_syntax::ast::parse::Parser::new().parse(pattern) {
        return Err(invalid_regex(line, pattern, &e));
    }
    // Flags and Unicode classes are where a pattern can parse yet not
    // compile with the Unicode data this build carries (see Cargo.toml): such
    // rare rules are compiled now, so the error comes with its line.
    let compiled = OnceCell::new();
    if check && (pattern.contains("(?") || pattern.contains("\\p") || pattern.contains("\\P")) {
        match Regex::new(pattern) {
            Ok(re) => {
                let _ = compiled.set(Ok(re));
            }
            Err(e) => return Err(invalid_regex(line, pattern, &e)),
        }
    }
    let literal = literal_prefix(pattern);
    Ok(RewriteRule {
        pattern: pattern.to_string(),
        replacement: replacement.to_string(),
        reason: reason.to_string(),
        line,
        expansion: expansion(replacement),
        shape: literal.as_deref().and_then(|l| Shape::of(pattern, l)),
        literal_prefix: literal,
        compiled,
    })
}

/// The error for a rule whose regex does not parse or compile. Both regex
/// crates report over several lines (pattern, caret, message): the last line
/// says what is wrong.
fn invalid_regex(line: usize, pattern: &str, e: &dyn std::fmt::Display) -> PolicyError {
    let msg = e.to_string();
    let last = msg.lines().last().unwrap_or(&msg).trim();
    let last = last.strip_prefix("error: ").unwrap_or(last);
    err(line, format!("invalid regex `{pattern}`: {last}"))
}

/// `\1` and `$1` backrefs into the `regex` crate's `${1}`; any other `$` is a
/// literal dollar (so `$HOME` in a replacement stays `$HOME`). `&` is literal,
/// unlike sed's.
fn expansion(rep: &str) -> String {
    let c: Vec<char> = rep.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' | '$' if c.get(i + 1).is_some_and(char::is_ascii_digit) => {
                let mut j = i + 1;
                while j < c.len() && c[j].is_ascii_digit() {
                    j += 1;
                }
                out.push_str("${");
                out.extend(&c[i + 1..j]);
                out.push('}');
                i = j;
            }
            '\\' if c.get(i + 1) == Some(&'\\') => {
                out.push('\\');
                i += 2;
            }
            '$' if c.get(i + 1) == Some(&'{') => {
                let end = c[i..].iter().position(|&x| x == '}').map(|p| i + p);
                match end {
                    Some(e) => {
                        out.extend(&c[i..=e]);
                        i = e + 1;
                    }
                    None => {
                        out.push_str("$$");
                        i += 1;
                    }
                }
            }
            '$' => {
                out.push_str("$$");
                i += if c.get(i + 1) == Some(&'$') { 2 } else { 1 };
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

fn literal_prefix(pattern: &str) -> Option<String> {
    if pattern.contains('|') || pattern.contains("(?") {
        return None;
    }
    let rest = pattern.strip_prefix('^')?;
    let mut out = String::new();
    for ch in rest.chars() {
        if "\\.+*?()[]{}|^$".contains(ch) {
            // `*`, `?` and `{0,..}` may make the previous character optional.
            if matches!(ch, '*' | '?' | '{') {
                out.pop();
            }
            break;
        }
        out.push(ch);
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_forms() {
        assert_eq!(expansion("pnpm \\1"), "pnpm ${1}");
        assert_eq!(expansion("$1x"), "${1}x");
        assert_eq!(expansion("echo $HOME"), "echo $$HOME");
        assert_eq!(expansion("a && b"), "a && b");
    }

    #[test]
    fn hand_run_shapes_agree_with_the_regex_engine() {
        let patterns = [
            "^pnpm -w run (.+)$",
            "^pnpm -w run (.*)$",
            "^npm test$",
            "^cargo test (.+)",
            "^go vet(.*)",
        ];
        let reps = [
            "pnpm \\1",
            "x $1 y",
            "$0!",
            "${1}${1}",
            "a $HOME b",
            "\\1 $$ ${name}",
            "plain",
        ];
        let texts = [
            "pnpm -w run build",
            "pnpm -w run ",
            "pnpm -w run",
            "npm test",
            "npm test x",
            "cargo test --lib é",
            "go vet",
            "go vet ./...",
            "pnpm -w run a\nb",
            "other",
        ];
        for pat in patterns {
            for rep in reps {
                let row = format!("{pat} | {rep} | why");
                let rule = parse_rewrite(&row, 1, true).unwrap();
                assert!(rule.shape.is_some(), "{pat} should run by hand");
                let re = Regex::new(pat).unwrap();
                for text in texts {
                    let by_hand = rule.apply(text).unwrap();
                    let by_regex = re
                        .is_match(text)
                        .then(|| re.replace(text, rule.expansion.as_str()).into_owned());
                    assert_eq!(by_hand, by_regex, "{pat} / {rep} / {text:?}");
                }
            }
        }
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(
            literal_prefix("^pnpm -w run (.+)$").as_deref(),
            Some("pnpm -w run ")
        );
        assert_eq!(literal_prefix("^npm? x").as_deref(), Some("np"));
        assert_eq!(literal_prefix("pnpm"), None);
        assert_eq!(literal_prefix("^(a|b)"), None);
    }
}
