//! The guard's Windows table (tests/fixtures/guard/windows-cases.txt):
//! its cases and its placeholders, shared by the run on Linux
//! (tests/it/guard_windows.rs, the pure decision) and the one under Wine
//! (tests/windows, the real ralph-guard.exe).

/// One line of the table.
pub(crate) struct Case {
    pub line: usize,
    /// `deny` or `allow`.
    pub expect: String,
    /// `bash`, `write` or `edit`.
    pub tool: String,
    /// The command or the path, placeholders filled.
    pub rest: String,
}

/// The table, as compiled in (a program under Wine cannot read the
/// checkout's Linux paths).
pub(crate) const TABLE: &str = include_str!("../fixtures/guard/windows-cases.txt");

/// The cases, with `[HOME]` and `[ROOT]` (Windows paths, `C:\...`) filled in
/// each spelling the table names.
pub(crate) fn cases(home: &str, root: &str) -> Vec<Case> {
    let fill = |text: &str| -> String {
        let mut t = text.to_string();
        for (name, path) in [("HOME", home), ("ROOT", root)] {
            let slash = path.replace('\\', "/");
            let msys = format!("/{}{}", slash[..1].to_lowercase(), &slash[2..]);
            let unc = format!(r"\\localhost\{}$\{}", &path[..1], &path[3..]);
            t = t
                .replace(&format!("[{name}/]"), &slash)
                .replace(&format!("[{name}_MSYS]"), &msys)
                .replace(&format!("[{name}_UP]"), &msys.to_uppercase())
                .replace(&format!("[{name}_UNC]"), &unc)
                .replace(&format!("[{name}]"), path);
        }
        t
    };
    TABLE
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(n, l)| {
            let l = l.trim();
            let (expect, r) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            let r = r.trim_start();
            let (tool, rest) = r.split_once(char::is_whitespace).unwrap_or((r, ""));
            Case {
                line: n + 1,
                expect: expect.to_string(),
                tool: tool.to_string(),
                rest: fill(rest.trim()),
            }
        })
        .collect()
}

/// The tool call of a case: its tool's name and input.
pub(crate) fn tool_call(case: &Case) -> (String, serde_json::Value) {
    use serde_json::json;
    match case.tool.as_str() {
        "bash" => (
            "Bash".into(),
            json!({"command": case.rest, "description": "fixture"}),
        ),
        "write" => (
            "Write".into(),
            json!({"file_path": case.rest, "content": "x"}),
        ),
        "edit" => (
            "Edit".into(),
            json!({"file_path": case.rest, "old_string": "a", "new_string": "b"}),
        ),
        other => panic!("line {}: unknown tool {other}", case.line),
    }
}
