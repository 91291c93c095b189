//! The PRD stays editable, but never invalid, shorter, or with a story's id
//! changed: the loop feeds stories by id, and a story that disappears is a
//! story silently marked as done.

use serde_json::Value;

/// Why a new PRD text is refused, if it is. `current` is the file as it is now
/// (None when it does not exist or cannot be read).
pub fn judge(current: Option<&str>, new: &str) -> Option<String> {
    let new_json: Value = match serde_json::from_str(new) {
        Ok(v) => v,
        Err(e) => return Some(format!("the result would not be valid JSON ({e})")),
    };
    // A current file that is itself broken gives nothing to compare against:
    // any valid JSON is an improvement.
    let old_json = current.and_then(|c| serde_json::from_str::<Value>(c).ok())?;
    let old_ids = story_ids(&old_json);
    if old_ids.is_empty() {
        return None;
    }
    let new_ids = story_ids(&new_json);
    if new_ids.len() < old_ids.len() {
        return Some(format!(
            "the result would drop a story ({} stories now, {} after)",
            old_ids.len(),
            new_ids.len()
        ));
    }
    for (i, id) in old_ids.iter().enumerate() {
        if new_ids.contains(id) {
            continue;
        }
        return Some(match new_ids.get(i) {
            Some(other) => format!("the result would change story id {id} to {other}"),
            None => format!("the result would drop story {id}"),
        });
    }
    None
}

/// Story ids, in order, from `userStories` or `stories` (ids may be strings or numbers).
fn story_ids(v: &Value) -> Vec<String> {
    let list = v
        .get("userStories")
        .or_else(|| v.get("stories"))
        .and_then(Value::as_array);
    let Some(list) = list else { return Vec::new() };
    list.iter()
        .map(|s| match s.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        })
        .collect()
}

/// Apply one Edit the way the Edit tool does; None when the tool itself would
/// refuse it (old text missing, or not unique without `replace_all`), in which
/// case there is nothing for the guard to judge.
pub fn apply_edit(text: &str, old: &str, new: &str, replace_all: bool) -> Option<String> {
    if old.is_empty() {
        return None;
    }
    let count = text.matches(old).count();
    match (count, replace_all) {
        (0, _) => None,
        (_, true) => Some(text.replace(old, new)),
        (1, false) => Some(text.replacen(old, new, 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRD: &str =
        r#"{"userStories":[{"id":"US-1","passes":false},{"id":"US-2","passes":false}]}"#;

    #[test]
    fn marking_a_story_done_is_fine() {
        let new = PRD.replacen("false", "true", 1);
        assert_eq!(judge(Some(PRD), &new), None);
    }

    #[test]
    fn invalid_json_is_refused() {
        assert!(judge(Some(PRD), "{").unwrap().contains("valid JSON"));
    }

    #[test]
    fn dropping_or_renaming_is_refused() {
        let dropped = r#"{"userStories":[{"id":"US-1","passes":false}]}"#;
        assert!(judge(Some(PRD), dropped).unwrap().contains("drop"));
        let renamed = PRD.replace("US-2", "US-9");
        assert!(judge(Some(PRD), &renamed).unwrap().contains("US-2 to US-9"));
    }

    #[test]
    fn stories_key_and_numeric_ids() {
        let old = r#"{"stories":[{"id":1},{"id":2}]}"#;
        assert!(judge(Some(old), r#"{"stories":[{"id":1}]}"#).is_some());
        assert!(judge(Some(old), r#"{"stories":[{"id":1},{"id":2},{"id":3}]}"#).is_none());
    }

    #[test]
    fn edit_application_follows_the_tool() {
        assert_eq!(apply_edit("a b a", "a", "c", false), None);
        assert_eq!(
            apply_edit("a b a", "a", "c", true).as_deref(),
            Some("c b c")
        );
        assert_eq!(apply_edit("a b", "b", "c", false).as_deref(), Some("a c"));
        assert_eq!(apply_edit("a b", "z", "c", false), None);
    }
}
