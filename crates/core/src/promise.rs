//! The completion promise: `<promise>TEXT</promise>` in the assistant's words.
//!
//! Only a real tag counts: a bare `DONE` in prose is not completion, and a tag
//! quoted as code (an inline code span or a fenced code block, as Markdown
//! reads them) is talk about the promise, not the promise: "I must not print
//! `<promise>DONE</promise>` yet" keeps the loop going. Content and configured
//! promise are compared after trimming and collapsing runs of whitespace, so a
//! promise split over lines still matches.
//! Pure.

const OPEN: &str = "<promise>";
const CLOSE: &str = "</promise>";

/// Trim and collapse every run of whitespace to one space.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The contents of every `<promise>...</promise>` tag printed in `text` (not
/// quoted as code), in order.
pub(crate) fn tags(text: &str) -> Vec<String> {
    let prose = outside_code(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(open) = rest.find(OPEN) {
        let after = &rest[open + OPEN.len()..];
        match after.find(CLOSE) {
            Some(close) => {
                found.push(after[..close].to_string());
                rest = &after[close + CLOSE.len()..];
            }
            None => break,
        }
    }
    found
}

/// Does `text` hold a promise tag equal (normalised) to `promise`?
pub(crate) fn is_kept(text: &str, promise: &str) -> bool {
    let want = normalize(promise);
    !want.is_empty() && tags(text).iter().any(|t| normalize(t) == want)
}

/// `text` with its code removed: fenced code blocks (``` or ~~~, to the
/// closing fence or the end), indented code blocks (lines indented four
/// spaces or a tab that do not continue a paragraph) and inline code spans
/// (a run of backticks to the next run of the same length; an unmatched run
/// is literal), as CommonMark reads them. Each removed piece leaves a space,
/// so no two words join.
pub(crate) fn outside_code(text: &str) -> String {
    let mut prose = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    let mut paragraph = String::new();
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let run = |c: char| trimmed.chars().take_while(|x| *x == c).count();
        match fence {
            Some((c, n)) => {
                if indent <= 3 && run(c) >= n && trimmed[run(c)..].trim().is_empty() {
                    fence = None;
                }
                prose.push(' ');
            }
            None => {
                let opener = ['`', '~'].into_iter().find(|c| indent <= 3 && run(*c) >= 3);
                // An indented line continues a paragraph (lazily), but after
                // a blank line or at the start it is code.
                let continues = !paragraph.trim().is_empty() && !ends_with_blank_line(&paragraph);
                let indented = indent >= 4 || trimmed.starts_with('\t');
                if indented && !continues && !line.trim().is_empty() {
                    prose.push_str(&without_spans(&paragraph));
                    paragraph.clear();
                    prose.push(' ');
                } else if let Some(c) = opener {
                    prose.push_str(&without_spans(&paragraph));
                    paragraph.clear();
                    fence = Some((c, run(c)));
                    prose.push(' ');
                } else {
                    paragraph.push_str(line);
                }
            }
        }
    }
    prose.push_str(&without_spans(&paragraph));
    prose
}

/// Does the text so far end with a blank line (so what follows starts a new block)?
fn ends_with_blank_line(text: &str) -> bool {
    text.split_inclusive('\n')
        .next_back()
        .is_some_and(|l| l.trim().is_empty())
}

/// Inline code spans removed from a stretch of text outside fences.
fn without_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        out.push_str(&rest[..open]);
        let after_open = &rest[open..];
        let n = after_open.chars().take_while(|c| *c == '`').count();
        let body = &after_open[n..];
        match closing_run(body, n) {
            Some(close) => {
                out.push(' ');
                rest = &body[close + n..];
            }
            None => {
                out.push_str(&after_open[..n]);
                rest = body;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where in `text` a run of exactly `n` backticks starts.
fn closing_run(text: &str, n: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let len = bytes[i..].iter().take_while(|b| **b == b'`').count();
            if len == n {
                return Some(i);
            }
            i += len;
        } else {
            i += 1;
        }
    }
    None
}

/// Some promise tag is present, whatever it says (used to tell the model its
/// tag did not match the configured promise).
pub(crate) fn has_any_tag(text: &str) -> bool {
    !tags(text).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_tag_in_prose_across_lines() {
        let text = "All tests pass.\n<promise>\n   ALL   TESTS\n PASS\n</promise>\nBye";
        assert!(is_kept(text, "ALL TESTS PASS"));
        assert!(is_kept(text, "  ALL\tTESTS PASS "));
    }

    #[test]
    fn bare_text_or_wrong_tag_is_not_completion() {
        assert!(!is_kept("DONE", "DONE"));
        assert!(!is_kept("<promise>NOT DONE</promise>", "DONE"));
        assert!(!is_kept("<promise>DONE", "DONE"));
        assert!(!is_kept("<promise></promise>", ""));
    }

    #[test]
    fn any_of_several_tags() {
        assert!(is_kept(
            "<promise>x</promise> then <promise>DONE</promise>",
            "DONE"
        ));
        assert_eq!(tags("<promise>a</promise><promise>b</promise>"), ["a", "b"]);
    }

    #[test]
    fn a_tag_quoted_as_code_is_not_printed() {
        for quoted in [
            "I must not print `<promise>DONE</promise>` yet.",
            "Use ``<promise>DONE</promise>`` when done.",
            "Example:\n```\n<promise>DONE</promise>\n```\nNot yet.",
            "Example:\n~~~~text\n<promise>DONE</promise>\n~~~~\n",
            "Unclosed fence:\n```\n<promise>DONE</promise>\n",
            "Spans lines: `a\n<promise>DONE</promise>` b",
            "The format is:\n\n    <promise>DONE</promise>\n\nI am not done.",
            "\t<promise>DONE</promise>\nnot yet",
            "    indented four, at the start: <promise>DONE</promise>",
        ] {
            assert!(!is_kept(quoted, "DONE"), "{quoted:?}");
            assert!(!has_any_tag(quoted), "{quoted:?}");
        }
    }

    #[test]
    fn a_printed_tag_counts_beside_code() {
        for printed in [
            "Ran `cargo test`: all pass. <promise>DONE</promise>",
            "```\ncargo test\n```\n<promise>DONE</promise>",
            "An unmatched ` backtick, then <promise>DONE</promise>",
            "`a` and ``b`` then <promise>DONE</promise> and `c`",
            "All done, and\n    <promise>DONE</promise>",
            "  two spaces: <promise>DONE</promise>",
        ] {
            assert!(is_kept(printed, "DONE"), "{printed:?}");
        }
    }
}
