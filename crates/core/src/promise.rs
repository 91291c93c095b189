//! The completion promise: `<promise>TEXT</promise>` in the assistant's words.
//!
//! Only a real tag counts: a bare `DONE` in prose is not completion. Content
//! and configured promise are compared after trimming and collapsing runs of
//! whitespace, so a promise split over lines still matches.

const OPEN: &str = "<promise>";
const CLOSE: &str = "</promise>";

/// Trim and collapse every run of whitespace to one space.
pub fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The contents of every `<promise>...</promise>` tag in `text`, in order.
pub fn tags(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(OPEN) {
        let after = &rest[open + OPEN.len()..];
        match after.find(CLOSE) {
            Some(close) => {
                found.push(&after[..close]);
                rest = &after[close + CLOSE.len()..];
            }
            None => break,
        }
    }
    found
}

/// Does `text` hold a promise tag equal (normalised) to `promise`?
pub fn is_kept(text: &str, promise: &str) -> bool {
    let want = normalize(promise);
    !want.is_empty() && tags(text).into_iter().any(|t| normalize(t) == want)
}

/// Some promise tag is present, whatever it says (used to tell the model its
/// tag did not match the configured promise).
pub fn has_any_tag(text: &str) -> bool {
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
}
