//! The PRD stays editable, but never invalid, shorter, or with a story's id
//! changed: the loop feeds stories by id, and a story that disappears is a
//! story silently marked as done. The checks recorded at loop start stay as
//! they were (a story's `verify` changed to `true` would pass without the real
//! check), and a dependency added mid-loop must name a story and must not
//! close a cycle (either would stall the loop as a deadlock).
//! Pure.

use std::collections::{BTreeMap, HashSet};

use ralph_core::prd::{Story, find_cycle, stories_as_written};
use serde_json::Value;

/// Why a new PRD text is refused, if it is. `current` is the file as it is now
/// (None when it does not exist or cannot be read).
pub(crate) fn judge(current: Option<&str>, new: &str) -> Option<String> {
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

/// [`judge`], and then the integrity of the loop's checks and dependencies:
/// `recorded` maps a story id to the `verify` command recorded at loop start.
pub(crate) fn judge_with_checks(
    current: Option<&str>,
    new: &str,
    recorded: &BTreeMap<String, String>,
) -> Option<String> {
    if let Some(why) = judge(current, new) {
        return Some(why);
    }
    // `judge` accepted it, so it parses.
    let new_json: Value = serde_json::from_str(new).ok()?;
    let new_stories = stories_as_written(&new_json);
    if let Some(why) = recorded_checks_kept(&new_stories, recorded) {
        return Some(why);
    }
    let old_stories = current
        .and_then(|c| serde_json::from_str::<Value>(c).ok())
        .map(|v| stories_as_written(&v))
        .unwrap_or_default();
    added_dependencies_sound(&old_stories, &new_stories)
}

/// Each recorded check is still the story's `verify`, and its story is still there.
pub(crate) fn recorded_checks_kept(
    new_stories: &[Story],
    recorded: &BTreeMap<String, String>,
) -> Option<String> {
    for (id, check) in recorded {
        let Some(story) = new_stories.iter().find(|s| s.id == *id) else {
            return Some(format!(
                "the result would delete story {id}, whose check `{check}` was recorded when the loop started"
            ));
        };
        match story.verify.as_deref() {
            Some(v) if v.trim() == check.trim() => {}
            Some(v) => {
                return Some(format!(
                    "the result would change the `verify` of story {id} from `{check}` (recorded when the loop \
                     started) to `{v}`; the recorded check is what decides whether the story passes"
                ));
            }
            None => {
                return Some(format!(
                    "the result would remove the `verify` of story {id} (`{check}`, recorded when the loop \
                     started); the recorded check is what decides whether the story passes"
                ));
            }
        }
    }
    None
}

/// Every dependency not in `old` names a story of `new`, and none closes a
/// cycle. A dependency that was already there is not judged again.
pub(crate) fn added_dependencies_sound(old: &[Story], new: &[Story]) -> Option<String> {
    let ids: HashSet<&str> = new.iter().map(|s| s.id.as_str()).collect();
    let mut added = false;
    for s in new {
        let before = old.iter().find(|o| o.id == s.id);
        for d in &s.depends_on {
            if before.is_some_and(|b| b.depends_on.contains(d)) {
                continue;
            }
            added = true;
            if !ids.contains(d.as_str()) {
                return Some(format!(
                    "story {} would depend on {d}, which is not a story in the file (the loop would stall \
                     on it as a deadlock)",
                    s.id
                ));
            }
        }
    }
    if !added {
        return None;
    }
    let cycle = find_cycle(new)?;
    if find_cycle(old).is_some() {
        // Already there before this edit: not this edit's doing.
        return None;
    }
    Some(format!(
        "the dependencies would form a cycle ({}), and no story in it could ever run",
        cycle.join(" -> ")
    ))
}

/// Story ids, in order, as written (see [`stories_as_written`]).
fn story_ids(v: &Value) -> Vec<String> {
    stories_as_written(v).into_iter().map(|s| s.id).collect()
}

/// Apply one Edit the way the Edit tool does; None when the tool itself would
/// refuse it (old text missing, or not unique without `replace_all`), in which
/// case there is nothing for the guard to judge.
pub(crate) fn apply_edit(text: &str, old: &str, new: &str, replace_all: bool) -> Option<String> {
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

    const CHECKED: &str = r#"{"userStories":[
        {"id":"US-1","verify":"cargo test a","passes":false},
        {"id":"US-2","verify":"cargo test b","dependsOn":["US-1"],"passes":false},
        {"id":"US-3","passes":false}]}"#;

    fn recorded() -> BTreeMap<String, String> {
        [("US-1", "cargo test a"), ("US-2", "cargo test b")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn recorded_checks_may_not_change() {
        let r = recorded();
        let j = |new: &str| judge_with_checks(Some(CHECKED), new, &r);
        let weakened = CHECKED.replace("cargo test a", "true");
        assert!(j(&weakened).unwrap().contains("from `cargo test a`"));
        let removed = CHECKED.replace(r#""verify":"cargo test a","#, "");
        assert!(
            j(&removed)
                .unwrap()
                .contains("remove the `verify` of story US-1")
        );
        let emptied = CHECKED.replace("cargo test a", " ");
        assert!(j(&emptied).unwrap().contains("remove"));
        // Marking done, adding a check to a story without one, spacing: fine.
        assert_eq!(j(&CHECKED.replacen("false", "true", 1)), None);
        assert_eq!(
            j(&CHECKED.replace(r#""id":"US-3","#, r#""id":"US-3","verify":"make t","#)),
            None
        );
        assert_eq!(j(&CHECKED.replace("cargo test a", "cargo test a ")), None);
        // Nothing recorded: nothing to hold to.
        assert_eq!(
            judge_with_checks(Some(CHECKED), &weakened, &BTreeMap::new()),
            None
        );
    }

    #[test]
    fn a_story_with_a_recorded_check_may_not_go() {
        let one_story = r#"{"userStories":[{"id":"US-2","verify":"cargo test b"}]}"#;
        let mut r = recorded();
        r.remove("US-2");
        // Even from a current file that is unreadable (no drop count to compare).
        let why = judge_with_checks(Some("{"), one_story, &r).unwrap();
        assert!(why.contains("delete story US-1"), "{why}");
    }

    #[test]
    fn added_dependencies_must_be_sound() {
        let r = BTreeMap::new();
        let j = |new: &str| judge_with_checks(Some(CHECKED), new, &r);
        let dangling = CHECKED.replace(r#""id":"US-3","#, r#""id":"US-3","dependsOn":["US-9"],"#);
        assert!(j(&dangling).unwrap().contains("US-3 would depend on US-9"));
        let cycle = CHECKED.replace(r#""id":"US-1","#, r#""id":"US-1","depends_on":["US-2"],"#);
        let why = j(&cycle).unwrap();
        assert!(
            why.contains("US-1 -> US-2 -> US-1") || why.contains("US-2 -> US-1 -> US-2"),
            "{why}"
        );
        let fine = CHECKED.replace(
            r#""id":"US-3","#,
            r#""id":"US-3","dependencies":["US-1","US-2"],"#,
        );
        assert_eq!(j(&fine), None);
        // A new story may depend on an existing one, not on a missing one.
        let added = CHECKED.replace(
            r#"{"id":"US-3","passes":false}"#,
            r#"{"id":"US-3","passes":false},{"id":"US-4","dependsOn":["US-3"]}"#,
        );
        assert_eq!(j(&added), None);
    }

    #[test]
    fn dependencies_already_there_are_not_judged_again() {
        let broken =
            r#"{"userStories":[{"id":"A","dependsOn":["Z"]},{"id":"B","dependsOn":["B"]}]}"#;
        let r = BTreeMap::new();
        let marked = broken.replacen(r#""id":"A""#, r#""id":"A","passes":true"#, 1);
        assert_eq!(judge_with_checks(Some(broken), &marked, &r), None);
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
