//! The design, held by tests where it can be (issue 25): a module whose
//! header says it is pure does no I/O. Read from the source tree, so a
//! new file is held as soon as its header makes the claim.

use std::path::{Path, PathBuf};

/// What a pure module may not name outside its tests: the file system,
/// processes, the environment, standard input.
const IO: &[&str] = &[
    "std::fs",
    "fs::",
    "File::",
    "OpenOptions",
    "Command::",
    "std::process",
    ".exists()",
    ".is_file()",
    ".is_dir()",
    "metadata(",
    "read_dir(",
    "canonicalize(",
    "read_link(",
    "env::var",
    "stdin()",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module claims purity in its header: "Pure." (or "Pure:", "Pure;"),
/// not "Pure, but ..." or "Pure, except ...", which name their exceptions.
fn claims_pure(text: &str) -> bool {
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .any(|l| ["Pure.", "Pure:", "Pure;"].iter().any(|m| l.contains(m)))
}

#[test]
fn modules_documented_as_pure_do_no_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for lib in ["crates/core/src", "crates/policy/src"] {
        rust_files(&root.join(lib), &mut files);
    }
    let mut pure = 0;
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if !claims_pure(&text) {
            continue;
        }
        pure += 1;
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            if let Some(io) = IO.iter().find(|io| line.contains(*io)) {
                let rel = file.strip_prefix(root).unwrap_or(file);
                found.push(format!("{}:{}: `{io}`", rel.display(), n + 1));
            }
        }
    }
    assert!(
        pure >= 15,
        "only {pure} modules claim purity: is the scan reading the headers?"
    );
    assert!(
        found.is_empty(),
        "modules documented as pure do I/O (move it to the caller, or say so in the header):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_architecture_doc_gives_the_stops_rounds_as_the_binary_runs_them() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven",
    ];
    let n = ralph_core::stop::MAX_ROUNDS;
    let said = format!("at most\n  {} rounds", words[n]);
    assert!(
        doc.contains(&said) || doc.contains(&format!("at most {} rounds", words[n])),
        "docs/architecture.md should say the Stop makes at most {} rounds",
        words[n]
    );
    for (i, w) in words.iter().enumerate() {
        if i != n {
            assert!(
                !doc.contains(&format!("at most {w} rounds"))
                    && !doc.contains(&format!("at most\n  {w} rounds")),
                "docs/architecture.md says {w} rounds; the Stop makes {n}"
            );
        }
    }
}
