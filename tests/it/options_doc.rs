//! Help from one source (issue 26): docs/options.md's table, the skills'
//! argument hints and `/ralph-help`'s skill text agree with the option
//! definitions (`ralph_core::args::options`), and every message ralph
//! prints spells the in-client commands one way, unqualified.

use ralph_core::args::options::{self, ValueKind};
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

const BEGIN: &str = "<!-- options-table: generated, do not edit by hand -->\n";
const END: &str = "<!-- end options-table -->";

#[test]
fn docs_options_md_holds_the_generated_table() {
    let doc = read("docs/options.md");
    let start = doc.find(BEGIN).expect("the table's start marker") + BEGIN.len();
    let end = doc.find(END).expect("the table's end marker");
    let want = options::markdown_table();
    if doc[start..end] != want {
        if std::env::var_os("RALPH_BLESS").is_some() {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/options.md");
            std::fs::write(path, format!("{}{want}{}", &doc[..start], &doc[end..])).unwrap();
        } else {
            panic!(
                "docs/options.md's table is not the options' own: run RALPH_BLESS=1 cargo test --test integration options_doc"
            );
        }
    }
}

/// Every `--word` in `text` (stopping at `=`, `[`, `]`, `` ` ``, spaces).
fn option_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("--") {
        let after = &rest[i + 2..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        if len > 0 && after.starts_with(|c: char| c.is_ascii_alphabetic()) {
            out.push(format!("--{}", &after[..len]));
        }
        rest = &after[len..];
    }
    out
}

#[test]
fn the_loop_skill_hints_every_loop_option() {
    let skill = read("skills/ralph-loop/SKILL.md");
    let hint = skill
        .lines()
        .find_map(|l| l.strip_prefix("argument-hint: "))
        .expect("an argument hint");
    let want: Vec<String> = options::of(false)
        .map(|o| match o.kind {
            ValueKind::Switch => format!("[{}]", o.name),
            _ => format!("[{}]", o.usage()),
        })
        .collect();
    assert_eq!(hint, format!("\"PROMPT {}\"", want.join(" ")));
}

#[test]
fn the_help_skill_names_every_loop_option_and_no_other() {
    let skill = read("skills/ralph-help/SKILL.md");
    for o in options::of(false) {
        assert!(
            skill.contains(o.name),
            "skills/ralph-help/SKILL.md lacks {}",
            o.name
        );
    }
    for dir in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")).unwrap() {
        let path = dir.unwrap().path().join("SKILL.md");
        let text = std::fs::read_to_string(&path).unwrap();
        for word in option_words(&text) {
            assert!(
                options::find(&word, true).is_some() || KNOWN_ELSEWHERE.contains(&word.as_str()),
                "{}: `{word}` is no option",
                path.display()
            );
        }
    }
    let help = ralph_core::control::help_text();
    assert!(help.contains("pauses the loop") && !help.contains("halts"));
}

/// `--words` the skills name that are not loop options: the help's own,
/// git's and the client's, `/ralph-accept --all`.
const KNOWN_ELSEWHERE: &[&str] = &["--help", "--oneline", "--all"];

/// The one spelling of each in-client command in every message: unqualified.
/// The qualified forms stay accepted (`args::*_COMMANDS`) and may be named
/// in those lists and in tests, nowhere else.
#[test]
fn messages_spell_each_command_unqualified() {
    let qualified = [
        "/ralph:ralph-loop",
        "/ralph:cancel-ralph",
        "/ralph:ralph-status",
        "/ralph:ralph-help",
        "/ralph:help",
        "/ralph:ralph-resume",
        "/ralph:ralph-prd",
        "/ralph:statusline",
        "/ralph:ralph-statusline",
    ];
    let mut found = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "crates",
        "skills",
        "hooks",
        "agents",
        "reviewers",
        "plugin",
        ".claude-plugin",
    ] {
        walk(&root.join(dir), &mut files);
    }
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // Test code types the qualified forms on purpose.
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        if rel.ends_with("_tests.rs")
            || rel.ends_with("/tests.rs")
            || rel == "crates/core/src/args/mod.rs"
        {
            continue;
        }
        for q in qualified {
            if text.contains(q) {
                found.push(format!("{rel}: {q}"));
            }
        }
    }
    assert!(found.is_empty(), "qualified command spellings: {found:#?}");
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("target") {
                walk(&p, out);
            }
        } else {
            out.push(p);
        }
    }
}
