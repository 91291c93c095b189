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

/// A function's length in lines, from its `fn` line to the `}` at its own
/// indentation (a declaration without a body counts one line).
fn function_lengths(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = &line[..line.len() - line.trim_start().len()];
        let rest = line.trim_start();
        let rest = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub(super) "))
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        let rest = rest.strip_prefix("const ").unwrap_or(rest);
        let Some(sig) = rest.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = sig
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        let end = (i..lines.len())
            .find(|&j| lines[j] == close || (j == i && lines[j].trim_end().ends_with(';')))
            .unwrap_or(i);
        out.push((name, end - i + 1));
        i = end + 1;
    }
    out
}

/// The most lines of a function and of a file, outside tests (issue 25).
const FUNCTION_CAP: usize = 80;
const FILE_CAP: usize = 600;

#[test]
fn no_function_over_80_lines_nor_file_over_600() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let mut grown = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with("_tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let lines = code.lines().count();
        if lines > FILE_CAP {
            grown.push(format!("{rel}: {lines} lines (at most {FILE_CAP})"));
        }
        for (name, len) in function_lengths(code) {
            if len > FUNCTION_CAP {
                grown.push(format!(
                    "{rel}: fn {name} is {len} lines (at most {FUNCTION_CAP})"
                ));
            }
        }
    }
    assert!(
        grown.is_empty(),
        "split these (issue 25: no function over 80 lines, no file over 600):\n{}",
        grown.join("\n")
    );
}

/// A crate's top-level modules (a file, or a folder counted as one), each
/// with the names its non-test code imports from the crate: `crate::NAME`,
/// or each `NAME` of `crate::{NAME, ...}`.
type Graph = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

/// The import graph of the crate whose sources are in `src` (from the root).
fn crate_imports(src: &str) -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        if top == "lib" || top.ends_with("_tests") || rel.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code: Vec<&str> = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        let code = code.join("\n");
        let used = graph.entry(top.to_string()).or_default();
        for (at, _) in code.match_indices("crate::") {
            for name in names_after_crate(&code[at + "crate::".len()..]) {
                if !name.is_empty() && name != top {
                    used.insert(name);
                }
            }
        }
    }
    graph
}

/// The names that follow a `crate::`: one, or the first name of each item
/// of a group (`{a, b::{C, d}}` gives `a` and `b`).
fn names_after_crate(rest: &str) -> Vec<String> {
    let name = |item: &str| -> String {
        item.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![name(rest)];
    };
    let (mut depth, mut start, mut names) = (0, 0, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            ',' | '}' if depth == 0 => {
                names.push(name(&group[start..i]));
                start = i + 1;
                if c == '}' {
                    break;
                }
            }
            _ => {}
        }
    }
    names
}

/// docs/architecture.md's table under `heading`: `| N name | `module`, ... |`.
fn documented_layers(heading: &str) -> std::collections::BTreeMap<String, (u32, String)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let section = doc
        .split(&format!("{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/architecture.md has a \"{heading}\" section"));
    let mut layers = std::collections::BTreeMap::new();
    for row in section.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let Some((n, name)) = cells[1].split_once(' ') else {
            continue;
        };
        let Ok(n) = n.parse::<u32>() else { continue };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            let old = layers.insert(module.to_string(), (n, name.to_string()));
            assert!(old.is_none(), "`{module}` is in two layers");
        }
    }
    layers
}

/// What breaks the layers of the crate in `src` as the table under `heading`
/// gives them: a module in no layer, a layer's module that is not there, an
/// import from a layer above, and a name imported from the crate's root
/// rather than from the module that holds it.
fn imports_out_of_layer(src: &str, heading: &str) -> Vec<String> {
    let graph = crate_imports(src);
    let layers = documented_layers(heading);
    let mut wrong = Vec::new();
    for module in graph.keys() {
        if !layers.contains_key(module) {
            wrong.push(format!("`{module}` is in no row of \"{heading}\""));
        }
    }
    for module in layers.keys() {
        if !graph.contains_key(module) {
            wrong.push(format!(
                "\"{heading}\" names `{module}`, which is no module"
            ));
        }
    }
    for (module, used) in &graph {
        let Some((own, own_name)) = layers.get(module) else {
            continue;
        };
        for dep in used {
            match layers.get(dep) {
                Some((theirs, their_name)) if theirs > own => wrong.push(format!(
                    "`{module}` ({own} {own_name}) imports `{dep}` ({theirs} {their_name}), a layer above"
                )),
                None if !graph.contains_key(dep) => wrong.push(format!(
                    "`{module}` imports `crate::{dep}`, which is no module (the crate's root only \
                     hands on): import it from the module that holds it"
                )),
                _ => {}
            }
        }
    }
    wrong
}

#[test]
fn every_core_module_sits_in_its_documented_layer_and_imports_none_above() {
    let wrong = imports_out_of_layer("crates/core/src", "## Layers");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_policy_module_sits_on_its_documented_floor_and_imports_none_above() {
    let wrong = imports_out_of_layer("crates/policy/src", "## ralph-policy's floors");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Tarjan's walk: the strongly connected components (circles) of a graph.
struct Walk<'e> {
    edges: &'e [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    next: usize,
    circles: Vec<Vec<usize>>,
}
impl Walk<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.edges[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut circle = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                circle.push(w);
                if w == v {
                    break;
                }
            }
            if circle.len() > 1 {
                self.circles.push(circle);
            }
        }
    }
}

/// The circles of a crate's import graph (Tarjan's strongly connected
/// components over its top-level modules), each as `a <-> b <-> ...`.
fn circles(graph: &Graph) -> Vec<String> {
    let names: Vec<&String> = graph.keys().collect();
    let index_of = |n: &str| names.iter().position(|m| m.as_str() == n);
    let edges: Vec<Vec<usize>> = names
        .iter()
        .map(|n| graph[*n].iter().filter_map(|d| index_of(d)).collect())
        .collect();
    let n = names.len();
    let mut walk = Walk {
        edges: &edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        circles: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.circles
        .iter()
        .map(|c| {
            c.iter()
                .map(|&i| names[i].as_str())
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect()
}

#[test]
fn no_core_module_imports_one_that_imports_it_back() {
    let graph = crate_imports("crates/core/src");
    let n = graph.len();
    assert!(
        n > 30,
        "only {n} modules read: is the scan reading crates/core/src?"
    );
    let circles = circles(&graph);
    assert!(
        circles.is_empty(),
        "ralph-core's modules import each other in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn no_policy_module_imports_one_that_imports_it_back() {
    let graph = crate_imports("crates/policy/src");
    let n = graph.len();
    assert!(
        n > 10,
        "only {n} modules read: is the scan reading crates/policy/src?"
    );
    let circles = circles(&graph);
    assert!(
        circles.is_empty(),
        "ralph-policy's modules import each other in a circle:\n{}",
        circles.join("\n")
    );
}

/// The code a documented path names (`stop::plan::Plan::new`): the module
/// the leading segments reach (a file, or every file of a folder), and the
/// names left to find in it. `None` when the first segment is no module.
fn resolve(path: &str) -> Option<(String, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut segments: Vec<&str> = path.split("::").collect();
    let mut dir = root.join("crates/core/src");
    if segments[0] == "ralph_policy" {
        dir = root.join("crates/policy/src");
        segments.remove(0);
    } else if segments[0] == "ralph_core" {
        segments.remove(0);
    }
    let mut text = None;
    let mut rest = segments.as_slice();
    while let Some((first, tail)) = rest.split_first() {
        let file = dir.join(format!("{first}.rs"));
        let folder = dir.join(first);
        if folder.is_dir() {
            let mut files = Vec::new();
            rust_files(&folder, &mut files);
            text = Some(
                files
                    .iter()
                    .map(|f| std::fs::read_to_string(f).unwrap())
                    .collect(),
            );
            dir = folder;
        } else if file.is_file() {
            text = Some(std::fs::read_to_string(&file).unwrap());
            dir = dir.join(first);
        } else {
            break;
        }
        rest = tail;
    }
    Some((text?, rest.iter().map(|s| s.to_string()).collect()))
}

/// `name` is defined in `text`: an item, a field, a method or a variant.
fn defines(text: &str, name: &str) -> bool {
    let starts = [
        "fn ", "struct ", "enum ", "const ", "static ", "type ", "trait ", "mod ",
    ];
    starts.iter().any(|s| text.contains(&format!("{s}{name}")))
        || text.lines().any(|l| {
            let l = l.trim_start().trim_start_matches("pub ");
            [":", ",", " {", "(", " =>"]
                .iter()
                .any(|end| l.starts_with(&format!("{name}{end}")))
        })
}

#[test]
fn every_path_the_architecture_doc_names_is_in_the_code() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let mut checked = 0;
    let mut missing = Vec::new();
    for (i, span) in doc.split('`').enumerate() {
        // Odd pieces are inside backticks; a path has `::` and nothing else.
        let is_path = i % 2 == 1
            && span.contains("::")
            && span
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if !is_path {
            continue;
        }
        let Some((text, names)) = resolve(span) else {
            continue; // not ralph's (`std::process`, a client's name)
        };
        checked += 1;
        if let Some(name) = names.iter().find(|n| !defines(&text, n)) {
            missing.push(format!("`{span}`: no `{name}` there"));
        }
    }
    assert!(
        checked > 40,
        "only {checked} paths checked: is the doc read?"
    );
    assert!(
        missing.is_empty(),
        "docs/architecture.md names code that is not there (say what the code does now):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_library_module_says_whether_it_is_pure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for lib in ["crates/core/src", "crates/policy/src"] {
        rust_files(&root.join(lib), &mut files);
    }
    let silent: Vec<String> = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with("_tests.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            !text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .any(|l| l.contains("Pure") || l.contains("I/O"))
        })
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    assert!(
        silent.is_empty(),
        "say at the top whether these are pure (\"Pure.\") or do I/O (\"Does I/O: ...\"):\n{}",
        silent.join("\n")
    );
}

/// Every read of a transcript goes through one wait (issue 34): the client
/// writes a turn after its hooks start, so a reader must be told what the
/// file must hold and wait for it. `transcript::written` is the one function
/// that opens a transcript, its `Written` the only reader; these are its
/// calls (a new one is read and added here), and these the files that
/// hand a hook's transcript path on (to the wait, or to a Stop input).
#[test]
fn every_transcript_read_goes_through_one_wait() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["crates/core/src", "crates/policy/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    for bin in ["stop-hook", "guard", "setup", "ralph"] {
        rust_files(&root.join("crates").join(bin), &mut files);
    }
    let code_of = |f: &Path| {
        let text = std::fs::read_to_string(f).unwrap();
        text.split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let rel = |f: &Path| f.strip_prefix(root).unwrap().display().to_string();
    let mut waits = Vec::new();
    let mut hands_on = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let code = code_of(f);
        let name = rel(f);
        let calls = code.matches("transcript::written(").count();
        if calls > 0 {
            waits.push(format!("{name} ×{calls}"));
        }
        if code.contains("transcript_path") && !name.ends_with("hook_input.rs") {
            hands_on.push(name.clone());
        }
        // Only the wait opens one.
        if !name.ends_with("transcript/wait.rs") {
            assert!(
                !code.contains("open_regular("),
                "{name} opens a transcript itself"
            );
        }
    }
    waits.sort();
    hands_on.sort();
    assert_eq!(
        waits,
        [
            "crates/core/src/continuity/mod.rs ×1",
            "crates/core/src/parallel/bound.rs ×2",
            "crates/core/src/parallel/claim.rs ×1",
            "crates/core/src/start/commands.rs ×2",
            "crates/core/src/stop/mod.rs ×2",
        ],
        "the wait's callers changed: read the new one, then list it here"
    );
    assert_eq!(
        hands_on,
        [
            "crates/core/src/continuity/mod.rs",
            "crates/core/src/parallel/bound.rs",
            "crates/core/src/parallel/claim.rs",
            "crates/core/src/parallel/hooks.rs",
            "crates/core/src/stop/gather.rs",
            "crates/core/src/stop/mod.rs",
            "crates/guard/main.rs",
            "crates/ralph/runner.rs",
            "crates/setup/main.rs",
        ],
        "a file reads a hook's transcript path: it must hand it to transcript::written"
    );
    // The readers are `Written`'s: the module hands out no other.
    let module = code_of(&root.join("crates/core/src/transcript/mod.rs"));
    let public: Vec<&str> = module
        .lines()
        .filter(|l| l.starts_with("pub fn "))
        .collect();
    assert!(
        public.is_empty(),
        "transcript's free functions are its own: its readers are Written's ({public:?})"
    );
}

/// One name, one job (issue 35): a file or folder of ralph's crates is named
/// for the one thing it holds, and a name found in two places means the same
/// job in each. These are the names allowed to repeat, and why; any other
/// repeat fails (name it for what it holds, or add it here with its reason).
/// The test tools (`crates/fake-model`, `crates/bench`) are not ralph.
const SAME_JOB: &[(&str, &str)] = &[
    (
        "disk",
        "a feature's own files read and written (parallel, pins, review)",
    ),
    ("rules", "a feature's pure rules (continuity, start)"),
    ("text", "every word a hook says (start, stop)"),
    (
        "gather",
        "a hook's reads before it decides (the Stop, the guard)",
    ),
    ("decide", "a hook's pure decision (the Stop, the guard)"),
    (
        "merge_queue",
        "a merge queue: one story at a time (parallel, ci)",
    ),
    ("run", "`ralph run`: its argv (args) and its rules (run/)"),
    (
        "statusline",
        "the status line: its rules (core) and its entry (ralph-setup)",
    ),
    (
        "wave",
        "`ralph plan`: the wave's rules (ci) and the verb (crates/ralph)",
    ),
    (
        "merge",
        "`ralph merge`: its rules (ci) and the verb (crates/ralph)",
    ),
    (
        "story",
        "`ralph run --story`: its rules (ci) and the verb (crates/ralph)",
    ),
    (
        "fresh",
        "`--fresh`: its rules (core) and its guard (policy)",
    ),
    (
        "parallel",
        "`--parallel`: its rules (core) and its guard (policy)",
    ),
    ("prd", "the PRD: its rules (core) and its guard (policy)"),
    (
        "control",
        "the user's controls: carried out (core) and kept the user's (policy)",
    ),
    (
        "git",
        "git: run by ralph (core), and what it does to paths (a program of the guard's effects/)",
    ),
];

#[test]
fn a_name_means_one_job() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut places: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut stack: Vec<PathBuf> = ["crates/core/src", "crates/policy/src"]
        .iter()
        .chain(&[
            "crates/stop-hook",
            "crates/guard",
            "crates/setup",
            "crates/ralph",
        ])
        .map(|d| root.join(d))
        .collect();
    let top: Vec<PathBuf> = stack.clone();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                stack.push(path.clone());
            } else if path.extension().is_none_or(|e| e != "rs")
                || ["mod", "main", "lib", "tests"].contains(&stem.as_str())
                || stem.ends_with("_tests")
            {
                continue;
            }
            if !top.contains(&path) {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                places.entry(stem).or_default().push(rel);
            }
        }
    }
    let mut repeats: Vec<String> = places
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(stem, _)| stem.clone())
        .collect();
    repeats.sort();
    let mut allowed: Vec<String> = SAME_JOB.iter().map(|(s, _)| s.to_string()).collect();
    allowed.sort();
    let new: Vec<String> = repeats
        .iter()
        .filter(|s| !allowed.contains(s))
        .map(|s| format!("{s}: {}", places[s].join(", ")))
        .collect();
    assert!(
        new.is_empty(),
        "one name for two things: name each for what it holds, or list it in SAME_JOB with why\n{}",
        new.join("\n")
    );
    let stale: Vec<&String> = allowed.iter().filter(|s| !repeats.contains(s)).collect();
    assert!(
        stale.is_empty(),
        "SAME_JOB lists names that no longer repeat: {stale:?}"
    );
    // The glossary the names follow is the architecture page's first section.
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let glossary = doc.split("\n## ").nth(1).unwrap_or_default();
    assert!(
        glossary.starts_with("Glossary"),
        "docs/architecture.md opens with its glossary"
    );
    for term in [
        "loop",
        "iteration",
        "story",
        "check",
        "pin",
        "seal",
        "feed",
        "lane",
        "wave",
        "merge queue",
        "queued message",
        "pass",
        "gate",
    ] {
        assert!(
            glossary.contains(&format!("**{term}**")),
            "the glossary defines {term}"
        );
    }
}

/// No two of ralph's public types share a name (a `Verdict` of the guard and
/// one of a reviewer read alike in a signature).
#[test]
fn a_type_name_means_one_thing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "crates/core/src",
        "crates/policy/src",
        "crates/stop-hook",
        "crates/guard",
        "crates/setup",
        "crates/ralph",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut seen: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for line in code.lines() {
            let l = line.trim_start();
            let Some(rest) = [
                "pub struct ",
                "pub enum ",
                "pub(crate) struct ",
                "pub(crate) enum ",
                "pub trait ",
                "pub type ",
            ]
            .iter()
            .find_map(|p| l.strip_prefix(p)) else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let rel = f.strip_prefix(root).unwrap().display().to_string();
            seen.entry(name).or_default().push(rel);
        }
    }
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(n, at)| format!("{n}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "types of one name for two things:\n{}",
        twice.join("\n")
    );
}

/// ralph-core's and ralph-policy's types that are public only because a public item it hands
/// out carries them (a field, an argument, a result the binaries use without
/// naming its type): the compiler keeps them public (`private_interfaces`).
const CARRIED: &[&str] = &[
    "IterationScore",
    "RecordGens",
    "BaselineSummary",
    "ScoreSummary",
    "LogScore",
    "ArgsError",
    "Audit",
    "BackgroundTask",
    "Blocker",
    "Board",
    "Brief",
    "BudgetStatus",
    "Budgets",
    "CachedRead",
    "ChangedFile",
    "CheckResult",
    "ConfigRead",
    "CountedThrough",
    "DenyRule",
    "Ending",
    "Entered",
    "FeedHook",
    "FileError",
    "FileStat",
    "Finding",
    "Form",
    "FullGateOf",
    "Gate",
    "Gathered",
    "History",
    "GitError",
    "Guarded",
    "HandedStory",
    "Hit",
    "Identify",
    "IgnoredFile",
    "Injected",
    "Invocation",
    "Jobs",
    "Kind",
    "LaneStatus",
    "LaneSync",
    "Matrix",
    "MatrixJob",
    "MessageUsage",
    "Mirror",
    "Objection",
    "OpKind",
    "OptSpec",
    "ParallelStatus",
    "Pause",
    "PauseReason",
    "PauseStatus",
    "PinError",
    "PrdReadError",
    "PrdStatus",
    "Proc",
    "ProtectRule",
    "PutBack",
    "QueueAction",
    "QueueOp",
    "Queued",
    "RalphProgram",
    "Redirect",
    "Refusal",
    "ReviewConfig",
    "ReviewJob",
    "ReviewLog",
    "ReviewResult",
    "ReviewStage",
    "ReviewVerdict",
    "RewriteRule",
    "Seal",
    "Segment",
    "Standing",
    "StateError",
    "StopInputs",
    "Takes",
    "Tier",
    "ToolRecord",
    "TurnEffect",
    "TurnResult",
    "Usd",
    "WaveStatus",
    "WorkerInputs",
    "WorkerPlan",
    "WorkerRecord",
    "WorkerVerdict",
    "WrapRule",
    "Zero",
];

/// A small public face (issue 35): what ralph-core and ralph-policy make
/// `pub` is what something outside them uses (the binaries, the other
/// crate, the tests, the bench, the fuzz targets); the rest is
/// `pub(crate)`. An item is used outside when its name is written in a
/// file outside the crate, or, for a type, when a public item carries it
/// (`CARRIED`).
#[test]
fn what_a_library_makes_public_is_used_outside_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for dir in ["crates", "tests", "fuzz/src", "fuzz/fuzz_targets"] {
        rust_files(&root.join(dir), &mut all);
    }
    let mut carried_seen: Vec<String> = Vec::new();
    for lib in ["crates/core", "crates/policy"] {
        let inside = |f: &PathBuf| f.starts_with(root.join(lib));
        let mut names = std::collections::BTreeSet::new();
        // This file names them to hold them: it does not use them.
        let this = root.join("tests/it/design.rs");
        for f in all.iter().filter(|f| !inside(f) && **f != this) {
            let text = std::fs::read_to_string(f).unwrap();
            names.extend(
                text.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
        let mut unused = Vec::new();
        let mut public = 0;
        let src = root.join(lib).join("src");
        for f in all.iter().filter(|f| f.starts_with(&src)) {
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code.lines() {
                let l = line.trim_start();
                let Some(rest) = [
                    "fn ", "struct ", "enum ", "const ", "type ", "trait ", "static ", "mod ",
                ]
                .iter()
                .find_map(|k| l.strip_prefix("pub ").and_then(|r| r.strip_prefix(k))) else {
                    continue;
                };
                public += 1;
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if names.contains(&name) {
                    continue;
                }
                if CARRIED.contains(&name.as_str()) {
                    carried_seen.push(name);
                } else {
                    let rel = f.strip_prefix(root).unwrap().display();
                    unused.push(format!("{rel}: {name}"));
                }
            }
        }
        assert!(public > 10, "{lib}: only {public} public items read");
        assert!(
            unused.is_empty(),
            "{lib} makes these public, and nothing outside it names them: make them pub(crate)\n{}",
            unused.join("\n")
        );
    }
    let stale: Vec<&&str> = CARRIED
        .iter()
        .filter(|c| !carried_seen.iter().any(|s| s == *c))
        .collect();
    assert!(
        stale.is_empty(),
        "CARRIED lists types named outside now, or no longer public: {stale:?}"
    );
}

/// The files docs/architecture.md sends a newcomer to are there.
#[test]
fn every_file_the_architecture_doc_names_is_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut named = 0;
    for span in doc.split('`').skip(1).step_by(2) {
        if span.starts_with("crates/") && !span.contains(' ') {
            named += 1;
            assert!(
                root.join(span).exists(),
                "docs/architecture.md names {span}, which is not there"
            );
        }
    }
    assert!(named >= 8, "only {named} files named: is the doc read?");
}
