//! `--parallel`: ralph itself marks a merged story passing in the PRD of the
//! main tree (a worker never does: its copy is in its worktree). The edit is
//! textual, so the user's formatting, key order and every other byte stay as
//! they were. Pure.

use crate::prd::Prd;

/// `text` with story `id`'s `"passes"` set to `true` (added when the story
/// has none); `None` when the story cannot be found or the result would not
/// read as the same PRD with that one story passing.
pub(crate) fn mark_passing(text: &str, id: &str) -> Option<String> {
    let (start, end) = story_span(text, id)?;
    let object = &text[start..end];
    let edited = match value_span(object, "passes") {
        Some((from, to)) if &object[from..to] == "true" => return Some(text.to_string()),
        Some((from, to)) => format!("{}true{}", &object[..from], &object[to..]),
        None => format!("{{\"passes\": true, {}", object[1..].trim_start()),
    };
    let out = format!("{}{}{}", &text[..start], edited, &text[end..]);
    let before = Prd::parse(text).ok()?;
    let after = Prd::parse(&out).ok()?;
    let same_otherwise = before.stories.len() == after.stories.len()
        && before
            .stories
            .iter()
            .zip(&after.stories)
            .all(|(b, a)| a.id == b.id && (a.passes == b.passes || (a.id == id && a.passes)));
    (same_otherwise && after.story(id).is_some_and(|s| s.passes)).then_some(out)
}

/// The byte range of the innermost JSON object holding `"id": "<id>"`.
fn story_span(text: &str, id: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut opens: Vec<usize> = Vec::new();
    let mut found: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                if &text[i..end] == "\"id\""
                    && let Some(value) = after_colon(text, end)
                    && text[value..].starts_with('"')
                {
                    let vend = string_end(bytes, value)?;
                    let raw = &text[value + 1..vend - 1];
                    if raw.trim() == id && found.is_none() {
                        found = opens.last().copied();
                    }
                    i = vend;
                    continue;
                }
                i = end;
                continue;
            }
            b'{' => opens.push(i),
            b'}' => {
                let open = opens.pop()?;
                if Some(open) == found {
                    return Some((open, i + 1));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The range of the value of `key` at the top level of `object` (which
/// starts with `{`).
fn value_span(object: &str, key: &str) -> Option<(usize, usize)> {
    let bytes = object.as_bytes();
    let quoted = format!("\"{key}\"");
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1
                    && object[i..end] == quoted
                    && let Some(value) = after_colon(object, end)
                {
                    let len = object[value..]
                        .find(|c: char| c == ',' || c == '}' || c.is_whitespace())
                        .unwrap_or(object.len() - value);
                    return Some((value, value + len));
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Just past the JSON string starting at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Where the value after `key_end` (just past a key) starts, when a `:` follows.
fn after_colon(text: &str, key_end: usize) -> Option<usize> {
    let rest = &text[key_end..];
    let colon = rest.len() - rest.trim_start().len();
    let rest = rest.trim_start().strip_prefix(':')?;
    let value = rest.len() - rest.trim_start().len();
    Some(key_end + colon + 1 + value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_one_story_changes_byte_for_byte() {
        let text = "{\n  \"userStories\": [\n    {\"id\": \"US-1\", \"passes\": false, \"notes\": \"id: US-2\"},\n    {\n      \"id\": \"US-2\",\n      \"meta\": {\"passes\": false},\n      \"passes\": false\n    }\n  ]\n}\n";
        let out = mark_passing(text, "US-2").unwrap();
        assert_eq!(
            out,
            text.replacen("\"passes\": false\n", "\"passes\": true\n", 1)
        );
        let out1 = mark_passing(text, "US-1").unwrap();
        assert!(out1.starts_with(
            "{\n  \"userStories\": [\n    {\"id\": \"US-1\", \"passes\": true, \"notes\""
        ));
    }

    #[test]
    fn a_story_without_passes_gets_one_and_a_passing_one_stays() {
        let text = r#"{"stories":[{"id":"A"},{"id":"B","passes":true}]}"#;
        let out = mark_passing(text, "A").unwrap();
        assert!(Prd::parse(&out).unwrap().story("A").unwrap().passes);
        assert_eq!(mark_passing(text, "B").unwrap(), text);
    }

    #[test]
    fn an_unknown_story_or_garbage_is_refused() {
        assert_eq!(mark_passing(r#"{"stories":[{"id":"A"}]}"#, "Z"), None);
        assert_eq!(mark_passing("{nope", "A"), None);
        // A string that merely holds the id is not the story.
        assert_eq!(
            mark_passing(r#"{"stories":[{"id":"A","x":"\"id\": \"B\""}]}"#, "B"),
            None
        );
    }
}
