//! Splitting a Markdown file into its first YAML frontmatter block and body.
//!
//! Written by hand rather than with gray_matter because gray_matter trims the
//! body (leading blank lines, trailing newlines, CRLF bodies), and the loop's
//! prompt must round-trip byte for byte. Only the first block is frontmatter:
//! a later `---` line belongs to the body.
//! Pure.

use std::collections::BTreeMap;
/// The byte ranges of a file's frontmatter and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the opening and closing `---` lines (lines end with `\n`).
    pub yaml: &'a str,
    /// Everything after the closing `---` line, minus the one blank separator line.
    pub body: &'a str,
    /// Byte offset where the YAML starts (just after the opening `---` line).
    pub yaml_start: usize,
    /// Byte offset where the closing `---` line starts.
    pub yaml_end: usize,
}

/// Split `text` (a leading UTF-8 BOM is skipped). `None` when the text does not
/// open with a `---` line or the block is never closed.
pub fn split(text: &str) -> Option<Split<'_>> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &text[start..];
    let first_len = line_len(rest);
    if trim_eol(&rest[..first_len]) != "---" {
        return None;
    }
    let yaml_start = start + first_len;
    let mut pos = yaml_start;
    while pos < text.len() {
        let len = line_len(&text[pos..]);
        let line = &text[pos..pos + len];
        if trim_eol(line).trim_end() == "---" {
            let after = pos + len;
            let mut body = &text[after..];
            // One blank line separates frontmatter from body in the official format.
            if let Some(b) = body
                .strip_prefix("\r\n")
                .or_else(|| body.strip_prefix('\n'))
            {
                body = b;
            }
            return Some(Split {
                yaml: &text[yaml_start..pos],
                body,
                yaml_start,
                yaml_end: pos,
            });
        }
        pos += len;
    }
    None
}

/// Replace the line `key: ...` inside the frontmatter of `text` with
/// `key: value`, or add it at the end of the frontmatter when absent. The body
/// is never touched, so a prompt line that starts with `iteration:` is safe.
/// `None` when `text` has no frontmatter.
pub fn set_field(text: &str, key: &str, value: &str) -> Option<String> {
    let split = split(text)?;
    let mut pos = split.yaml_start;
    while pos < split.yaml_end {
        let len = line_len(&text[pos..]);
        let line = &text[pos..pos + len];
        if line
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with(':'))
        {
            let eol = &line[trim_eol(line).len()..];
            let eol = if eol.is_empty() { "\n" } else { eol };
            return Some(format!(
                "{}{key}: {value}{eol}{}",
                &text[..pos],
                &text[pos + len..]
            ));
        }
        pos += len;
    }
    // A new line takes the line ending of the closing `---` line (CRLF files stay CRLF).
    let eol = if text[split.yaml_end..].starts_with("---\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    Some(format!(
        "{}{key}: {value}{eol}{}",
        &text[..split.yaml_end],
        &text[split.yaml_end..]
    ))
}

/// The value of `key: value` in the frontmatter of `text`, read line by line
/// without YAML, for files that may not parse (a corrupt state, an agent's
/// blocker): the first such line of the frontmatter block (or, when the
/// block is not closed, of the lines before the first blank one), with
/// whitespace and quotes around the value removed.
pub fn scan<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let head = match split(text) {
        Some(split) => split.yaml,
        None => {
            let end = text.find("\n\n").unwrap_or(text.len());
            &text[..end]
        }
    };
    head.lines().find_map(|line| {
        let value = line.trim_start().strip_prefix(key)?.strip_prefix(':')?;
        Some(value.trim().trim_matches(['"', '\'']))
    })
}

/// The value of `key: {JSON object of text to text}` in the frontmatter
/// of `text` (a flow mapping, possibly folded over indented lines, as the
/// state writes `story_checks` and `pins`), read without YAML; empty when
/// absent, `null` or not such an object.
pub fn scan_map(text: &str, key: &str) -> BTreeMap<String, String> {
    let Some(split) = split(text) else {
        return BTreeMap::new();
    };
    let mut value: Option<String> = None;
    for line in split.yaml.lines() {
        match &mut value {
            Some(v) if line.starts_with([' ', '\t']) => {
                v.push(' ');
                v.push_str(line.trim());
            }
            Some(_) => break,
            None => {
                if let Some(v) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
                    value = Some(v.trim().to_string());
                }
            }
        }
    }
    match value.map(|v| serde_json::from_str::<serde_json::Value>(&v)) {
        Some(Ok(serde_json::Value::Object(m))) => m
            .into_iter()
            .filter_map(|(k, v)| match v {
                serde_json::Value::String(c) => Some((k, c)),
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// Length of the first line of `s`, including its `\n` if any.
fn line_len(s: &str) -> usize {
    s.find('\n').map_or(s.len(), |i| i + 1)
}

fn trim_eol(line: &str) -> &str {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_maps_are_read_from_the_frontmatter_only() {
        let m = scan_map(
            "---\niteration: 1\nstory_checks: {\"US-1\": \"cargo test a\", \"US-2\": \"cargo test b\"}\n---\nx\n",
            "story_checks",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m["US-1"], "cargo test a");
        let folded = scan_map(
            "---\nstory_checks: {\"US-1\": \"a\",\n  \"US-2\": \"b\"}\nnext: 1\n---\n",
            "story_checks",
        );
        assert_eq!(folded.len(), 2);
        for absent in [
            "---\niteration: 1\n---\n",
            "---\nstory_checks: null\n---\n",
            "---\nstory_checks: {broken\n---\n",
            "no frontmatter",
            "---\n---\nstory_checks: {\"A\": \"x\"}\n",
        ] {
            assert!(scan_map(absent, "story_checks").is_empty(), "{absent}");
        }
        assert!(scan_map("---\nstory_checks_x: {\"A\": \"x\"}\n---\n", "story_checks").is_empty());
    }

    #[test]
    fn splits_first_block_only_and_keeps_body_verbatim() {
        let text = "---\na: 1\n---\n\nbody\n---\niteration: 5\n\n  end  \n\n";
        let s = split(text).unwrap();
        assert_eq!(s.yaml, "a: 1\n");
        assert_eq!(s.body, "body\n---\niteration: 5\n\n  end  \n\n");
    }

    #[test]
    fn crlf_and_bom() {
        let s = split("\u{feff}---\r\na: 1\r\n---\r\n\r\nx\r\n").unwrap();
        assert_eq!(s.yaml, "a: 1\r\n");
        assert_eq!(s.body, "x\r\n");
    }

    #[test]
    fn unclosed_or_missing_is_none() {
        assert!(split("---\na: 1\n").is_none());
        assert!(split("no frontmatter").is_none());
        assert!(split("").is_none());
    }

    #[test]
    fn set_field_touches_only_frontmatter() {
        let text = "---\niteration: 1\nmax: 3\n---\n\niteration: 1\n";
        let out = set_field(text, "iteration", "2").unwrap();
        assert_eq!(out, "---\niteration: 2\nmax: 3\n---\n\niteration: 1\n");
        let added = set_field(text, "session_id", "\"s\"").unwrap();
        assert_eq!(
            added,
            "---\niteration: 1\nmax: 3\nsession_id: \"s\"\n---\n\niteration: 1\n"
        );
    }

    #[test]
    fn scan_reads_a_key_of_a_file_that_does_not_parse() {
        let corrupt = "---\nsession_id: \"other\"\niteration: [3\n---\n\nsession_id: body\n";
        assert_eq!(scan(corrupt, "session_id"), Some("other"));
        assert_eq!(scan(corrupt, "iteration"), Some("[3"));
        assert_eq!(scan(corrupt, "iter"), None, "whole keys only");
        let unclosed = "---\niteration: 4\n\nsession_id: body\n";
        assert_eq!(scan(unclosed, "iteration"), Some("4"));
        assert_eq!(scan(unclosed, "session_id"), None, "the body is not read");
        assert_eq!(
            scan("---\r\n  story_id: 'US-2'\r\n---\r\n", "story_id"),
            Some("US-2")
        );
    }

    #[test]
    fn set_field_keeps_crlf() {
        let out = set_field("---\r\na: 1\r\n---\r\n\r\nx\r\n", "b", "2").unwrap();
        assert_eq!(out, "---\r\na: 1\r\nb: 2\r\n---\r\n\r\nx\r\n");
    }

    #[test]
    fn set_field_does_not_match_key_prefixes() {
        let text = "---\niterations: 9\niteration: 1\n---\n\nx";
        let out = set_field(text, "iteration", "2").unwrap();
        assert_eq!(out, "---\niterations: 9\niteration: 2\n---\n\nx");
    }
}
