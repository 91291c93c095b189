//! The PRD (`prd.json`): stories, their dependencies, and which one is next.
//!
//! Reads snarktank's shape (`userStories`, `acceptanceCriteria`, `priority`,
//! `passes`) and the common variants (`stories`, `acceptance_criteria`,
//! `depends_on` / `dependsOn` / `dependencies`). Pure but for [`read`], the file the loop names.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq)]
pub struct Prd {
    pub project: Option<String>,
    pub branch_name: Option<String>,
    pub description: Option<String>,
    pub stories: Vec<Story>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Story {
    pub id: String,
    pub title: String,
    pub description: String,
    pub acceptance_criteria: Vec<String>,
    /// Lower runs first; stories without one run after those with one.
    pub priority: Option<i64>,
    pub passes: bool,
    pub notes: String,
    pub depends_on: Vec<String>,
    /// A command whose success is required before the story counts as passing.
    pub verify: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PrdError {
    #[error("not valid JSON: {0}")]
    NotJson(String),
    #[error("the top level must be a JSON object with a `userStories` (or `stories`) list")]
    NoStories,
    #[error("story #{index} is not a JSON object")]
    StoryNotObject { index: usize },
    #[error("story #{index} has no `id`")]
    MissingId { index: usize },
    #[error("story `{id}`: field `{field}` {problem}")]
    BadField {
        id: String,
        field: &'static str,
        problem: &'static str,
    },
    #[error("story id `{0}` is used by more than one story")]
    DuplicateId(String),
    #[error("story `{story}` depends on `{missing}`, which is not a story in the file")]
    DanglingDependency { story: String, missing: String },
    #[error("stories depend on each other in a cycle: {0}")]
    Cycle(String),
    /// Checked at start only: a loop over no story has nothing to do.
    #[error("it has no stories")]
    Empty,
}

/// The fast path: a well-formed PRD read straight into typed fields, with
/// no map built per story (measured: 0.17 ms instead of 0.39 ms on 200
/// stories). Every spelling the lenient path accepts is an alias here, since
/// serde skips unknown keys; two spellings at once are a duplicate-field
/// error, and anything else it does not accept as is goes through the
/// lenient `Value` path, which also words the errors.
mod fast {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(super) struct Prd {
        pub project: Option<String>,
        #[serde(rename = "branchName", alias = "branch_name")]
        pub branch_name: Option<String>,
        pub description: Option<String>,
        #[serde(rename = "userStories", alias = "stories")]
        pub user_stories: Vec<Story>,
    }

    #[derive(Deserialize)]
    pub(super) struct Story {
        pub id: String,
        #[serde(default)]
        pub title: Option<String>,
        #[serde(default)]
        pub description: Option<String>,
        #[serde(default, rename = "acceptanceCriteria", alias = "acceptance_criteria")]
        pub acceptance_criteria: Option<Vec<String>>,
        #[serde(default)]
        pub priority: Option<i64>,
        #[serde(default)]
        pub passes: Option<bool>,
        #[serde(default)]
        pub notes: Option<String>,
        #[serde(
            default,
            rename = "dependsOn",
            alias = "depends_on",
            alias = "dependencies"
        )]
        pub depends_on: Option<Vec<String>>,
        #[serde(default)]
        pub verify: Option<String>,
    }
}

impl Prd {
    /// The PRD with each story's check replaced by the one recorded for it
    /// (`story_checks`): an edit that weakens or drops a recorded check
    /// changes nothing about what runs.
    #[must_use]
    pub(crate) fn with_recorded_checks(mut self, recorded: &BTreeMap<String, String>) -> Prd {
        for story in &mut self.stories {
            if let Some(cmd) = recorded.get(&story.id) {
                story.verify = Some(cmd.clone());
            }
        }
        self
    }

    /// The checks to record: those recorded already, and the `verify` of each
    /// story seen for the first time.
    pub(crate) fn checks_to_record(
        &self,
        recorded: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut all = recorded.clone();
        for story in &self.stories {
            if let Some(cmd) = &story.verify {
                all.entry(story.id.clone()).or_insert_with(|| cmd.clone());
            }
        }
        all
    }

    /// Parse a PRD's text (structure only; see [`Prd::validate`]).
    pub fn parse(text: &str) -> Result<Prd, PrdError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if let Ok(fast) = serde_json::from_str::<fast::Prd>(text)
            && let Some(prd) = Prd::from_fast(fast)
        {
            return Ok(prd);
        }
        Prd::parse_lenient(text)
    }

    /// The typed read, when every story is as the lenient path would read it.
    fn from_fast(fast: fast::Prd) -> Option<Prd> {
        let stories = fast
            .user_stories
            .into_iter()
            .map(|s| {
                let id = s.id.trim().to_string();
                (!id.is_empty()).then(|| Story {
                    id,
                    title: s.title.unwrap_or_default(),
                    description: s.description.unwrap_or_default(),
                    acceptance_criteria: s.acceptance_criteria.unwrap_or_default(),
                    priority: s.priority,
                    passes: s.passes.unwrap_or(false),
                    notes: s.notes.unwrap_or_default(),
                    depends_on: s
                        .depends_on
                        .unwrap_or_default()
                        .into_iter()
                        .map(|d| d.trim().to_string())
                        .collect(),
                    verify: s.verify.filter(|v| !v.trim().is_empty()),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Prd {
            project: fast.project,
            branch_name: fast.branch_name,
            description: fast.description,
            stories,
        })
    }

    /// Every accepted shape and spelling, with errors that name the story.
    fn parse_lenient(text: &str) -> Result<Prd, PrdError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| PrdError::NotJson(e.to_string()))?;
        let Value::Object(top) = value else {
            return Err(PrdError::NoStories);
        };
        let list = match top.get("userStories").or_else(|| top.get("stories")) {
            Some(Value::Array(list)) => list,
            _ => return Err(PrdError::NoStories),
        };
        let stories = list
            .iter()
            .enumerate()
            .map(|(i, v)| Story::from_value(i + 1, v))
            .collect::<Result<Vec<_>, _>>()?;
        let text_of = |k: &str| top.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(Prd {
            project: text_of("project"),
            branch_name: text_of("branchName").or_else(|| text_of("branch_name")),
            description: text_of("description"),
            stories,
        })
    }

    /// Unique ids, no dangling dependency, no cycle.
    pub fn validate(&self) -> Result<(), PrdError> {
        let mut seen = HashSet::new();
        for s in &self.stories {
            if !seen.insert(s.id.as_str()) {
                return Err(PrdError::DuplicateId(s.id.clone()));
            }
        }
        for s in &self.stories {
            if let Some(missing) = s.depends_on.iter().find(|d| !seen.contains(d.as_str())) {
                return Err(PrdError::DanglingDependency {
                    story: s.id.clone(),
                    missing: missing.clone(),
                });
            }
        }
        if let Some(cycle) = self.find_cycle() {
            return Err(PrdError::Cycle(cycle.join(" -> ")));
        }
        Ok(())
    }

    pub fn story(&self, id: &str) -> Option<&Story> {
        self.stories.iter().find(|s| s.id == id)
    }

    /// (passing, total).
    pub fn progress(&self) -> (usize, usize) {
        let passing = self.stories.iter().filter(|s| s.passes).count();
        (passing, self.stories.len())
    }

    pub fn all_pass(&self) -> bool {
        self.stories.iter().all(|s| s.passes)
    }

    /// The next story to work on: `passes` not true, every dependency present
    /// and passing; lowest priority first, then file order.
    pub fn next_runnable(&self) -> Option<&Story> {
        self.runnable().into_iter().next()
    }

    /// Every story that can be worked on now, in the order they are fed:
    /// `passes` not true, every dependency present and passing; lowest
    /// priority first, then file order. `--parallel` takes several.
    pub fn runnable(&self) -> Vec<&Story> {
        let passing: HashSet<&str> = self
            .stories
            .iter()
            .filter(|s| s.passes)
            .map(|s| s.id.as_str())
            .collect();
        let mut ready: Vec<(usize, &Story)> = self
            .stories
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.passes && s.depends_on.iter().all(|d| passing.contains(d.as_str())))
            .collect();
        ready.sort_by_key(|(i, s)| (s.priority.is_none(), s.priority.unwrap_or(0), *i));
        ready.into_iter().map(|(_, s)| s).collect()
    }

    /// For a deadlock message: each failing story with its unmet dependencies.
    pub fn unmet_dependencies(&self) -> Vec<(String, Vec<String>)> {
        let by_id: HashMap<&str, &Story> =
            self.stories.iter().map(|s| (s.id.as_str(), s)).collect();
        self.stories
            .iter()
            .filter(|s| !s.passes)
            .map(|s| {
                let unmet = s
                    .depends_on
                    .iter()
                    .filter_map(|d| match by_id.get(d.as_str()) {
                        None => Some(format!("{d} (no such story)")),
                        Some(dep) if !dep.passes => Some(d.clone()),
                        Some(_) => None,
                    })
                    .collect();
                (s.id.clone(), unmet)
            })
            .collect()
    }

    fn find_cycle(&self) -> Option<Vec<String>> {
        find_cycle(&self.stories)
    }
}

impl Story {
    fn from_value(index: usize, v: &Value) -> Result<Story, PrdError> {
        let Value::Object(o) = v else {
            return Err(PrdError::StoryNotObject { index });
        };
        let id = match o.get("id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(PrdError::MissingId { index }),
        };
        let bad = |field, problem| PrdError::BadField {
            id: id.clone(),
            field,
            problem,
        };
        let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let acceptance_criteria = match pick(o, &["acceptanceCriteria", "acceptance_criteria"]) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().map(display).collect(),
            Some(_) => return Err(bad("acceptanceCriteria", "must be a list of text")),
        };
        let priority = match o.get("priority") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_i64()
                    .or_else(|| n.as_f64().map(|f| f as i64))
                    .ok_or_else(|| bad("priority", "must be a number"))?,
            ),
            Some(Value::String(s)) => Some(
                s.trim()
                    .parse()
                    .map_err(|_| bad("priority", "must be a number"))?,
            ),
            Some(_) => return Err(bad("priority", "must be a number")),
        };
        let passes = match o.get("passes") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("passes", "must be true or false")),
        };
        let depends_on = match pick(o, &["depends_on", "dependsOn", "dependencies"]) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.trim().to_string()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|d| display(d).trim().to_string())
                .collect(),
            Some(_) => return Err(bad("depends_on", "must be a list of story ids")),
        };
        let verify = o
            .get("verify")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty());
        Ok(Story {
            title: text("title"),
            description: text("description"),
            notes: text("notes"),
            id,
            acceptance_criteria,
            priority,
            passes,
            depends_on,
            verify,
        })
    }
}

/// A dependency cycle among `stories`, as the ids along it (the first
/// repeated at the end); a dependency on no story is no edge. Iterative, so a
/// hostile PRD cannot overflow the stack. The guard judges an edit's new
/// dependencies with it too (ralph-policy's prd.rs).
pub fn find_cycle(stories: &[Story]) -> Option<Vec<String>> {
    let index: HashMap<&str, usize> = stories
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // 0 = unvisited, 1 = on the current path, 2 = done.
    let mut mark = vec![0u8; stories.len()];
    let mut path: Vec<usize> = Vec::new();
    for root in 0..stories.len() {
        if mark[root] != 0 {
            continue;
        }
        // Iterative DFS: (node, next dependency to look at).
        let mut stack = vec![(root, 0usize)];
        mark[root] = 1;
        path.push(root);
        while let Some((node, next)) = stack.pop() {
            let deps = &stories[node].depends_on;
            if next >= deps.len() {
                mark[node] = 2;
                path.pop();
                continue;
            }
            stack.push((node, next + 1));
            let Some(&dep) = index.get(deps[next].as_str()) else {
                continue;
            };
            match mark[dep] {
                0 => {
                    mark[dep] = 1;
                    path.push(dep);
                    stack.push((dep, 0));
                }
                1 => {
                    let from = path.iter().position(|&n| n == dep).unwrap_or(0);
                    let mut ids: Vec<String> = path[from..]
                        .iter()
                        .map(|&n| stories[n].id.clone())
                        .collect();
                    ids.push(stories[dep].id.clone());
                    return Some(ids);
                }
                _ => {}
            }
        }
    }
    None
}

/// The stories of `userStories` (or `stories`) as written, never refused:
/// what the guard compares when an edit would change the PRD, which may be
/// no valid PRD yet. An id is trimmed text, or the JSON of another value
/// (empty when missing); the dependencies are the first of `dependsOn` /
/// `depends_on` / `dependencies` given, ids read the same way, empty ones
/// dropped (a value that is not a list gives none); an empty `verify` is
/// none. The other fields are read when they have their type, else left
/// empty.
pub fn stories_as_written(v: &Value) -> Vec<Story> {
    let list = v
        .get("userStories")
        .or_else(|| v.get("stories"))
        .and_then(Value::as_array);
    let Some(list) = list else { return Vec::new() };
    list.iter().map(Story::as_written).collect()
}

impl Story {
    /// One story of [`stories_as_written`].
    fn as_written(s: &Value) -> Story {
        let text = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Story {
            id: id_as_written(s.get("id")),
            title: text("title"),
            description: text("description"),
            acceptance_criteria: pick_any(s, &["acceptanceCriteria", "acceptance_criteria"])
                .and_then(Value::as_array)
                .map(|a| a.iter().map(display).collect())
                .unwrap_or_default(),
            priority: s.get("priority").and_then(Value::as_i64),
            passes: s.get("passes").and_then(Value::as_bool).unwrap_or(false),
            notes: text("notes"),
            depends_on: pick_any(s, &["dependsOn", "depends_on", "dependencies"])
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|d| id_as_written(Some(d)))
                        .filter(|d| !d.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            verify: s
                .get("verify")
                .and_then(Value::as_str)
                .filter(|v| !v.trim().is_empty())
                .map(str::to_string),
        }
    }
}

fn id_as_written(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(id)) => id.trim().to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The first of `keys` present in `v` (any JSON value: a non-object has none).
fn pick_any<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| v.get(*k))
}

fn pick<'a>(o: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| o.get(*k))
}

fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Why the loop's PRD cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PrdReadError {
    #[error(transparent)]
    File(#[from] crate::store::FileError),
    #[error(transparent)]
    Invalid(#[from] PrdError),
}

/// The loop's PRD `file` (relative to `root`) as it reads now (structure
/// only, not validated).
pub fn read(root: &std::path::Path, file: &str) -> Result<Prd, PrdReadError> {
    Ok(Prd::parse(&crate::store::read_named(root, file)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prd(json: &str) -> Prd {
        Prd::parse(json).unwrap()
    }

    #[test]
    fn reads_snarktank_shape() {
        let p = prd(
            r#"{"project":"P","branchName":"ralph/x","description":"D","userStories":[
            {"id":"US-001","title":"T","description":"d","acceptanceCriteria":["a","b"],
             "priority":1,"passes":false,"notes":""}]}"#,
        );
        assert_eq!(p.project.as_deref(), Some("P"));
        assert_eq!(p.branch_name.as_deref(), Some("ralph/x"));
        let s = &p.stories[0];
        assert_eq!(s.acceptance_criteria, ["a", "b"]);
        assert_eq!(s.priority, Some(1));
        assert!(!s.passes);
    }

    #[test]
    fn reads_variants_and_orders_by_priority_then_file_order() {
        let p = prd(r#"{"stories":[
            {"id":"c","priority":2},
            {"id":"a","priority":1,"depends_on":["b"]},
            {"id":"b","priority":3,"acceptance_criteria":"one"},
            {"id":"d"},
            {"id":"e","priority":2,"dependsOn":["b"]}]}"#);
        p.validate().unwrap();
        assert_eq!(p.next_runnable().unwrap().id, "c");
        let mut p2 = p.clone();
        p2.stories[0].passes = true;
        assert_eq!(p2.next_runnable().unwrap().id, "b");
        p2.stories[2].passes = true;
        assert_eq!(p2.next_runnable().unwrap().id, "a");
        p2.stories[1].passes = true;
        assert_eq!(p2.next_runnable().unwrap().id, "e");
        p2.stories[4].passes = true;
        assert_eq!(p2.next_runnable().unwrap().id, "d");
    }

    #[test]
    fn validation_names_the_story() {
        let dup = prd(r#"{"stories":[{"id":"a"},{"id":"a"}]}"#).validate();
        assert_eq!(dup, Err(PrdError::DuplicateId("a".into())));
        let dangling = prd(r#"{"stories":[{"id":"a","dependencies":["zz"]}]}"#).validate();
        assert!(
            dangling
                .unwrap_err()
                .to_string()
                .contains("`a` depends on `zz`")
        );
        let cycle = prd(r#"{"stories":[{"id":"a","depends_on":["b"]},{"id":"b","depends_on":["c"]},{"id":"c","depends_on":["a"]}]}"#).validate();
        assert_eq!(cycle, Err(PrdError::Cycle("a -> b -> c -> a".into())));
        let self_loop = prd(r#"{"stories":[{"id":"a","depends_on":["a"]}]}"#).validate();
        assert!(matches!(self_loop, Err(PrdError::Cycle(_))));
    }

    #[test]
    fn fast_and_lenient_paths_agree() {
        let snark = r#"{"project":"P","branchName":"b","description":"D","userStories":[
            {"id":" US-1 ","title":"T","description":"d","acceptanceCriteria":["a"],"priority":2,"passes":true,"notes":"n","dependsOn":[" US-0"],"verify":"make"},
            {"id":"US-0","verify":"  "}]}"#;
        let fast = Prd::parse(snark).unwrap();
        let lenient = Prd::parse_lenient(snark).unwrap();
        assert_eq!(fast, lenient);
        // Every spelling of the optional fields.
        let spelled = r#"{"stories":[{"id":"a","acceptance_criteria":["x"],"depends_on":["b"]},{"id":"b","dependencies":["c"]},{"id":"c"}]}"#;
        assert_eq!(
            Prd::parse(spelled).unwrap(),
            Prd::parse_lenient(spelled).unwrap()
        );
        assert_eq!(Prd::parse(spelled).unwrap().stories[1].depends_on, ["c"]);
        // Two spellings at once: the lenient path's order decides.
        let both = r#"{"userStories":[{"id":"a","dependsOn":["b"],"depends_on":["c"]},{"id":"b"},{"id":"c"}]}"#;
        assert_eq!(Prd::parse(both).unwrap(), Prd::parse_lenient(both).unwrap());
        // Shapes only the lenient path reads still parse.
        let odd = r#"{"userStories":[{"id":7,"priority":"3","acceptanceCriteria":"one","depends_on":"x"}],"extra":1}"#;
        assert_eq!(Prd::parse(odd).unwrap(), Prd::parse_lenient(odd).unwrap());
    }

    #[test]
    fn bad_shapes() {
        assert!(matches!(Prd::parse("{"), Err(PrdError::NotJson(_))));
        assert_eq!(Prd::parse("[]"), Err(PrdError::NoStories));
        assert_eq!(
            Prd::parse(r#"{"stories":[{"title":"x"}]}"#),
            Err(PrdError::MissingId { index: 1 })
        );
        assert!(Prd::parse(r#"{"stories":[{"id":"a","passes":"yes"}]}"#).is_err());
    }

    #[test]
    fn deadlock_reports_unmet() {
        let p = prd(r#"{"stories":[{"id":"a","depends_on":["b"]},{"id":"b","depends_on":["a"]}]}"#);
        assert!(p.next_runnable().is_none());
        assert_eq!(
            p.unmet_dependencies()[0],
            ("a".to_string(), vec!["b".to_string()])
        );
    }

    #[test]
    fn stories_as_written_never_refuse() {
        let v: Value = serde_json::from_str(
            r#"{"stories":[{"id":" a ","verify":" ","dependsOn":["b",""," "],"depends_on":["c"]},
                {"id":7,"passes":"yes","dependencies":"b"},{"title":"no id"},3]}"#,
        )
        .unwrap();
        let s = stories_as_written(&v);
        let ids: Vec<&str> = s.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "7", "", ""]);
        // The first spelling given wins; empty ids are dropped.
        assert_eq!(s[0].depends_on, ["b"]);
        assert_eq!(s[0].verify, None);
        // A dependency that is not a list names nothing; a bad type is no error.
        assert!(s[1].depends_on.is_empty() && !s[1].passes);
        assert!(stories_as_written(&Value::Null).is_empty());
    }

    #[test]
    fn cycles_are_found_among_any_stories() {
        let v: Value = serde_json::from_str(
            r#"{"stories":[{"id":"a","dependsOn":["x","b"]},{"id":"b","dependsOn":["a"]}]}"#,
        )
        .unwrap();
        assert_eq!(
            find_cycle(&stories_as_written(&v)),
            Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
        );
        assert_eq!(find_cycle(&[]), None);
    }
}
