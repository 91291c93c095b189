//! What the hook meets on disk and on stdin: temp projects (git
//! repositories with uncommitted work), loop states, a 200-story PRD, the
//! Stop input, and the deterministic filler they are made of.

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub(crate) const SESSION: &str = "5f0c1d2e-7b3a-4a6b-9c3d-be0c4b0a0001";
const PROMISE: &str = "ALL TESTS PASS";
/// What `ralph-setup` writes as the promise of a PRD loop.
const PRD_PROMISE: &str = "RALPH-COMPLETE";

/// The loop files a case rewrites before every run. Spelled out rather than
/// taken from ralph-core: the bench links nothing of ralph (see Cargo.toml).
pub(crate) const STATE_FILE: &str = ".claude/ralph-loop.local.md";

/// Deterministic filler, so every bench run writes the same files.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        // xorshift64*: plenty for picking sizes and ids.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }
}

/// Code-like text with quotes, backslashes and newlines, so JSON escaping
/// (and the hook's byte scan over it) is as in a real transcript.
const CODE: &str = "fn parse_field(input: &str) -> Result<Field, ParseError> {\n    let (name, rest) = input.split_once('=').ok_or(ParseError::NoEquals)?;\n    if rest.starts_with('\"') {\n        return Ok(Field::Quoted(unescape(&rest[1..rest.len() - 1])?));\n    }\n    // \\t and \\n inside values are kept as typed\n    Ok(Field::Plain(name.trim().to_string(), rest.to_string()))\n}\n";

pub(crate) fn filler(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + CODE.len());
    while s.len() < len {
        let _ = write!(s, "// chunk {}\n{CODE}", rng.next() % 10_000);
    }
    s.truncate(len);
    s
}

/// Source files in each temp project, and how many of them the agent has
/// changed since the last commit (plus as many new, untracked ones).
pub(crate) const PROJECT_FILES: usize = 300;
pub(crate) const PROJECT_CHANGED: usize = 3;

/// A project as the hook meets it: a git repository with a few hundred
/// committed files and some uncommitted work. It matters because in a loop
/// the hook fingerprints the working tree with `git status` (the no-progress
/// breaker), whose cost grows with the tree.
pub(crate) fn project(root: &Path, name: &str) -> std::io::Result<PathBuf> {
    let dir = root.join("projects").join(name);
    // A real project has `.claude/` (settings) whether or not a loop runs.
    fs::create_dir_all(dir.join(".claude"))?;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let source = |i: usize| dir.join(format!("src/mod{:02}/file{:03}.rs", i % 20, i));
    for i in 0..PROJECT_FILES {
        let path = source(i);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let len = rng.range(500, 6_000);
        fs::write(path, filler(&mut rng, len))?;
    }
    if git(&dir, &["init", "-q"]) && git(&dir, &["add", "-A"]) {
        git(
            &dir,
            &[
                "-c",
                "user.name=ralph-bench",
                "-c",
                "user.email=ralph-bench@example.invalid",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "-m",
                "initial",
            ],
        );
    }
    for i in 0..PROJECT_CHANGED {
        fs::write(source(i * 7), filler(&mut rng, 3_000))?;
        fs::write(dir.join(format!("src/new{i}.rs")), filler(&mut rng, 1_000))?;
    }
    Ok(dir)
}

/// Run git quietly in `dir`; `false` when git is missing or fails (the
/// project then stays a plain folder, which the report says).
fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The assistant's last words in the loop cases: work reported, no promise.
pub(crate) const PROMISELESS: &str = "I split the tokenizer into its own module and the parser tests pass now. Two integration tests still fail on nested quotes; I will look at those next.";

/// Stop input as Claude Code 2.1 sends it (see shared/claude-code-facts.md).
pub(crate) fn stop_input(
    project: &Path,
    transcript: &Path,
    last: Option<&str>,
    after_block: bool,
) -> Vec<u8> {
    let mut v = json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": project,
        "prompt_id": "bd17655d-2f4e-4c41-9a0e-3c1f9d2b7e10",
        "permission_mode": "default",
        "effort": {"level": "medium"},
        "hook_event_name": "Stop",
        "stop_hook_active": after_block,
        "background_tasks": [],
        "session_crons": [],
    });
    if let Some(text) = last {
        v["last_assistant_message"] = json!(text);
    }
    v.to_string().into_bytes()
}

/// A plain loop as setup writes it, at iteration 1 of no cap.
/// `extra` holds more frontmatter lines (or nothing, for setup's defaults).
pub(crate) fn plain_state_with(extra: &str) -> String {
    format!(
        "---\nactive: true\niteration: 1\nsession_id: \"{SESSION}\"\nmax_iterations: 0\ncompletion_promise: \"{PROMISE}\"\nstarted_at: \"2026-11-29T23:00:00Z\"\n{extra}---\n\n{}",
        "Make every test in tests/ pass without weakening any test.\n\n\
         Work in small steps: run `cargo test`, pick the first failure, fix its cause (not its symptom), \
         run the tests again, and commit each fix with a message that says why. Keep the public API \
         stable; if a test seems wrong, write down why in NOTES.md instead of changing it.\n\n\
         When every test passes and `cargo clippy -- -D warnings` is clean, print \
         <promise>ALL TESTS PASS</promise>. Do not print it before that is completely true.\n"
    )
}

pub(crate) fn prd_state(ids: &[String]) -> String {
    let ids: Vec<String> = ids.iter().map(|id| format!("\"{id}\"")).collect();
    format!(
        "---\nactive: true\niteration: 1\nsession_id: \"{SESSION}\"\nmax_iterations: 0\ncompletion_promise: \"{PRD_PROMISE}\"\nstarted_at: \"2026-11-29T23:00:00Z\"\nprd_file: \"prd.json\"\nstory_ids: [{}]\n---\n\nWork through the stories of the PRD one at a time, as the Ralph loop feeds them.\n",
        ids.join(", ")
    )
}

/// A PRD of `n` stories in a dependency chain (each on the one before), with
/// priorities, the first half passing: the next story is found only after
/// walking the whole list and its dependencies.
pub(crate) fn prd(n: usize) -> (String, Vec<String>) {
    let ids: Vec<String> = (1..=n).map(|i| format!("US-{i:03}")).collect();
    let stories: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            json!({
                "id": id,
                "title": format!("Story {}: handle case {} of the import format", i + 1, i + 1),
                "description": format!(
                    "As a user importing legacy files, I want record type {} to be read with its \
                     optional fields and its escaped separators, so that nothing is lost when I \
                     move my data over from the old tool.", i + 1),
                "acceptanceCriteria": [
                    format!("Records of type {} with every optional field are imported", i + 1),
                    "Escaped separators inside quoted fields are kept verbatim",
                    "A malformed record is reported with its line number and skipped",
                    "Typecheck passes and `cargo test` passes",
                ],
                "priority": i + 1,
                "passes": i < n / 2,
                "notes": "",
                "depends_on": if i == 0 { json!([]) } else { json!([ids[i - 1]]) },
            })
        })
        .collect();
    let doc = json!({
        "project": "legacy-import",
        "branchName": "ralph/legacy-import",
        "description": "Import every record type of the legacy export format",
        "userStories": stories,
    });
    // Pretty, as people and agents write PRDs.
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    (text, ids)
}
