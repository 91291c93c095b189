//! `ralph run --story ID`: one story on one runner. What its loop is given
//! (the PRD cut down to the story: `one_story_prd`), what its end means
//! (`Ended`, with an exit code per kind), and the record it leaves for the
//! merge job (`StoryResult`). Pure.

use crate::prd::Prd;
use crate::run::events::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The one-story PRD the runner's loop works on: in `.claude/ralph-` (a
/// ralph file: not in the working tree's fingerprint, kept out of the
/// story's commit), so the project's PRD on the branch is never the
/// worker's to touch; the merge job marks the story passing there.
pub const STORY_PRD: &str = ".claude/ralph-story.json";

/// What the story branch's commit leaves as the base had it, whatever the
/// worker did: the PRD (ralph marks passes at the merge), the shared notes
/// (every story appends to them: merged, they would conflict each time).
pub fn kept_out(prd_file: &str) -> Vec<String> {
    vec![
        prd_file.to_string(),
        crate::parallel::NOTES_FILE.to_string(),
    ]
}

/// Lines for `.git/info/exclude`: the loop's files in the project, which a
/// `git add -A` (the worker's, or the final commit) must not take.
pub(crate) const EXCLUDE_LINES: [&str; 2] = ["/.claude/ralph-*", "/.ralph-blocker.md"];

/// The exit codes of `ralph run --story`.
pub(crate) const EXIT_DONE: u8 = 0;
pub(crate) const EXIT_NOT_DONE: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub(crate) const EXIT_USAGE_LIMIT: u8 = 3;
pub const EXIT_ERROR: u8 = 4;
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// How a story's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// Its check passed: the branch is ready to merge.
    Done,
    /// It passes on the base already: nothing was run.
    AlreadyPassing,
    /// The cap, a budget, the breaker or a stuck story ended the loop first.
    NotDone,
    /// The model account's usage limit: run it again after the reset.
    UsageLimit,
    /// The client or ralph failed (not the story's fault).
    Error,
    Interrupted,
}

impl Ended {
    pub fn exit_code(self) -> u8 {
        match self {
            Ended::Done | Ended::AlreadyPassing => EXIT_DONE,
            Ended::NotDone => EXIT_NOT_DONE,
            Ended::UsageLimit => EXIT_USAGE_LIMIT,
            Ended::Error => EXIT_ERROR,
            Ended::Interrupted => EXIT_INTERRUPTED,
        }
    }

    /// From the run's `outcome.json` name (`run::end::RunEnd::name`)
    /// and the last log entry's reason and message.
    pub fn of_run(outcome: &str, reason: &str, message: &str) -> Ended {
        match outcome {
            "complete" => Ended::Done,
            "interrupted" => Ended::Interrupted,
            "failed" if reason == "wait_exceeded" && message.contains("usage limit") => {
                Ended::UsageLimit
            }
            "ended" | "cancelled" => Ended::NotDone,
            _ => Ended::Error,
        }
    }
}

/// The check's last run, as the record gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckTail {
    pub command: String,
    pub passed: bool,
    pub output_tail: String,
}

/// Tokens, as the record gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

impl From<Usage> for Tokens {
    fn from(u: Usage) -> Tokens {
        Tokens {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_creation: u.cache_creation,
        }
    }
}

/// `--result FILE`: what one runner did with one story.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoryResult {
    pub story: String,
    pub title: String,
    pub outcome: Ended,
    pub exit_code: u8,
    pub iterations: u64,
    pub tokens: Tokens,
    /// US dollars at the model's list price, when the model is known.
    pub cost_usd: Option<f64>,
    pub elapsed_secs: u64,
    pub check: Option<CheckTail>,
    /// `ralph/<story>`.
    pub branch: String,
    /// The branch's head after the run's commit.
    pub commit: Option<String>,
    /// The loop branch's commit it started from.
    pub base: String,
    pub message: String,
}

/// What the cost of `tokens` is for `model`, in dollars (`None`: no price).
pub fn cost_usd(model: Option<&str>, tokens: Tokens) -> Option<f64> {
    let price = crate::budget::price(model?)?;
    let usage = Usage {
        input: tokens.input,
        output: tokens.output,
        cache_read: tokens.cache_read,
        cache_creation: tokens.cache_creation,
    };
    Some(crate::budget::cost(&usage, &price).0 as f64 / 1_000_000.0)
}

/// The model the client runs, from its flags (`--model X`, `--model=X`).
pub fn model_in(client_args: &[String]) -> Option<String> {
    let mut it = client_args.iter();
    while let Some(a) = it.next() {
        if a == "--model" {
            return it.next().cloned();
        }
        if let Some(m) = a.strip_prefix("--model=") {
            return Some(m.to_string());
        }
    }
    None
}

/// Why a story cannot be run on this base: no such story, or a dependency
/// not passing here. `Ok(true)`: it passes already (nothing to do).
pub fn may_run(prd: &Prd, id: &str) -> Result<bool, String> {
    let story = prd
        .story(id)
        .ok_or_else(|| format!("no story `{id}` in the PRD"))?;
    if story.passes {
        return Ok(true);
    }
    let unmet: Vec<&str> = story
        .depends_on
        .iter()
        .filter(|d| !prd.story(d).is_some_and(|s| s.passes))
        .map(String::as_str)
        .collect();
    if unmet.is_empty() {
        Ok(false)
    } else {
        Err(format!(
            "story `{id}` depends on {} which do not pass on this base: run `ralph plan` for the stories that can run",
            unmet.join(", ")
        ))
    }
}

/// The PRD cut down to story `id`: the file's other top-level fields kept,
/// the story itself with `passes: false` and no `dependsOn` (they pass on
/// the base: `may_run`), every other story left out, so the loop works on
/// this one and ends when its check passes. `note`: added to the story's
/// `notes` (what the worker must know first: conflicts left to resolve).
pub fn one_story_prd(text: &str, id: &str, note: Option<&str>) -> Result<String, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut top: serde_json::Map<String, Value> =
        serde_json::from_str(text).map_err(|e| format!("the PRD is not a JSON object: {e}"))?;
    let key = ["userStories", "stories"]
        .into_iter()
        .find(|k| top.get(*k).is_some_and(Value::is_array))
        .ok_or("the PRD has no `userStories` list")?;
    let story = top[key]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s.get("id").and_then(Value::as_str).map(str::trim) == Some(id))
        .cloned()
        .ok_or_else(|| format!("no story `{id}` in the PRD"))?;
    let Value::Object(mut story) = story else {
        return Err(format!("story `{id}` is not an object"));
    };
    for dep in ["dependsOn", "depends_on", "dependencies"] {
        story.remove(dep);
    }
    story.insert("passes".into(), Value::Bool(false));
    if let Some(note) = note {
        let notes = story.get("notes").and_then(Value::as_str).unwrap_or("");
        let joined = if notes.is_empty() {
            note.to_string()
        } else {
            format!("{notes}\n{note}")
        };
        story.insert("notes".into(), Value::String(joined));
    }
    top.remove("stories");
    top.insert(
        "userStories".into(),
        Value::Array(vec![Value::Object(story)]),
    );
    serde_json::to_string_pretty(&top).map_err(|e| e.to_string())
}

/// The start's words with `--prd-file` set to `file` (replaced where
/// given, `--prd-file=X` too; else added before a `--`).
pub fn with_prd_file(start: &[String], file: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(start.len() + 2);
    let mut words = start.iter();
    let mut set = false;
    while let Some(w) = words.next() {
        if w == "--" {
            out.push(w.clone());
            out.extend(words.by_ref().cloned());
            break;
        }
        if w == "--prd-file" {
            words.next();
        } else if !w.starts_with("--prd-file=") {
            out.push(w.clone());
            continue;
        }
        if !set {
            out.extend(["--prd-file".to_string(), file.to_string()]);
            set = true;
        }
    }
    if !set {
        let at = out.iter().position(|w| w == "--").unwrap_or(out.len());
        out.splice(at..at, ["--prd-file".to_string(), file.to_string()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRD: &str = r#"{"project":"demo","userStories":[
        {"id":"A1","title":"one","passes":true,"verify":"sh a1.sh"},
        {"id":"A2","title":"two","passes":false,"dependsOn":["A1"],"verify":"sh a2.sh"},
        {"id":"B1","title":"three","passes":false,"dependsOn":["A2"]}]}"#;

    #[test]
    fn the_story_alone_with_its_check_and_no_dependencies() {
        let one = one_story_prd(PRD, "A2", Some("resolve x")).unwrap();
        let prd = Prd::parse(&one).unwrap();
        assert_eq!(prd.project.as_deref(), Some("demo"));
        assert_eq!(prd.stories.len(), 1);
        let s = &prd.stories[0];
        assert_eq!((s.id.as_str(), s.passes), ("A2", false));
        assert!(s.depends_on.is_empty());
        assert_eq!(s.verify.as_deref(), Some("sh a2.sh"));
        assert!(
            one_story_prd(PRD, "Z", None)
                .unwrap_err()
                .contains("no story `Z`")
        );
    }

    #[test]
    fn may_run_only_on_a_base_where_its_dependencies_pass() {
        let prd = Prd::parse(PRD).unwrap();
        assert_eq!(may_run(&prd, "A1"), Ok(true));
        assert_eq!(may_run(&prd, "A2"), Ok(false));
        assert!(may_run(&prd, "B1").unwrap_err().contains("A2"));
        assert!(may_run(&prd, "Q").is_err());
    }

    #[test]
    fn how_a_run_ended_and_its_exit_code() {
        assert_eq!(
            Ended::of_run("complete", "all_stories_pass", ""),
            Ended::Done
        );
        assert_eq!(Ended::of_run("ended", "max_iterations", ""), Ended::NotDone);
        let limit = Ended::of_run("failed", "wait_exceeded", "usage limit: resets at 5pm");
        assert_eq!(limit, Ended::UsageLimit);
        assert_eq!(Ended::of_run("failed", "client_failed", ""), Ended::Error);
        let codes: Vec<u8> = [Ended::Done, Ended::NotDone, Ended::UsageLimit, Ended::Error]
            .map(Ended::exit_code)
            .to_vec();
        assert_eq!(codes, [0, 1, 3, 4]);
        assert_eq!(
            serde_json::to_value(Ended::AlreadyPassing).unwrap(),
            "already_passing"
        );
    }

    #[test]
    fn cost_from_the_model_flag() {
        let args: Vec<String> = ["--model", "claude-sonnet-4-5"].map(String::from).to_vec();
        let model = model_in(&args);
        assert_eq!(model.as_deref(), Some("claude-sonnet-4-5"));
        let t = Tokens {
            input: 1_000_000,
            ..Tokens::default()
        };
        assert_eq!(cost_usd(model.as_deref(), t), Some(3.0));
        assert_eq!(cost_usd(None, t), None);
        assert_eq!(model_in(&["--model=x".to_string()]).as_deref(), Some("x"));
    }

    #[test]
    fn the_story_run_sets_its_own_prd_file_and_keeps_every_other_word() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let one = ".claude/ralph-story.json";
        assert_eq!(
            with_prd_file(&w(&["--prd-file", "prd.json", "--max-cost", "5"]), one),
            w(&["--prd-file", one, "--max-cost", "5"])
        );
        assert_eq!(
            with_prd_file(&w(&["--prd-file=p.json", "--", "--prd-file", "x"]), one),
            w(&["--prd-file", one, "--", "--prd-file", "x"])
        );
        assert_eq!(
            with_prd_file(&w(&["--max-iterations", "9", "--", "words"]), one),
            w(&["--max-iterations", "9", "--prd-file", one, "--", "words"])
        );
    }
}
