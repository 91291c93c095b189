//! What the checker knows while it reads one command from left to right:
//! the folder (`cd`), the variables assigned a literal value earlier in the
//! command (`f=.claude/x; rm "$f"`, `for f in .claude/*; do ...`, a script's
//! `$1` from `sh -c S _ ARG`), and the scripts the command itself wrote
//! (`echo 'rm x' > s.sh && sh s.sh`). It also says what text a command
//! visibly prints (`echo`, `printf`, `cat` of a heredoc), for a shell that
//! reads it on stdin.
//! Pure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::argv::operands;
use super::wrappers::{Invocation, unwrap};
use crate::glob;
use crate::shell::{self, Segment};

/// How many values one word may expand to (a `for` list, a brace group).
const MAX_VALUES: usize = 64;

/// How much text a reused `printf` format may produce before the guard stops
/// reading it (the guard answers before every tool call).
const MAX_TEXT: usize = 1 << 20;

#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    /// The command's folder; None once it is known only at run time.
    pub(super) cwd: Option<PathBuf>,
    /// `$CLAUDE_PROJECT_DIR` and `$HOME`, as the guard knows them.
    root: Option<String>,
    home: Option<String>,
    /// Variables with known values (several for a `for` list or `$@`).
    vars: HashMap<String, Vec<String>>,
    /// Scripts written by this command: (file name, text).
    scripts: Vec<(String, String)>,
    /// ralph's programs (name, path), for `$(command -v ralph-setup)`.
    programs: Vec<(String, String)>,
    /// Windows paths (`winpath`): `$USERPROFILE` is the home folder too.
    pub(super) windows: bool,
}

impl Scope {
    pub(super) fn new(cwd: Option<PathBuf>) -> Scope {
        Scope {
            cwd,
            ..Scope::default()
        }
    }

    /// Also knows `$CLAUDE_PROJECT_DIR` and `$HOME`.
    pub(super) fn with_places(mut self, root: &Path, home: Option<&Path>) -> Scope {
        self.root = Some(root.display().to_string());
        self.home = home.map(|h| h.display().to_string());
        self
    }

    /// Reads words as Windows paths (see [`Scope::windows`]).
    pub(super) fn on_windows(mut self, windows: bool) -> Scope {
        self.windows = windows;
        self
    }

    /// Also knows where ralph's programs are (`command -v`, `which`).
    pub(super) fn with_programs(mut self, programs: &[crate::context::RalphProgram]) -> Scope {
        self.programs = programs
            .iter()
            .map(|p| (p.name.clone(), p.path.display().to_string()))
            .collect();
        self
    }

    /// What `command -v NAME`, `which NAME` or `type -P NAME` prints for
    /// one of ralph's programs: its installed path.
    fn program_lookup(&self, words: &[String]) -> Option<String> {
        let (finder, rest) = words.split_first()?;
        let name = match (finder.as_str(), rest) {
            ("command", [flag, name]) if flag == "-v" || flag == "-V" => name,
            ("which", [name]) => name,
            ("type", [flag, name]) if flag == "-P" || flag == "-p" => name,
            _ => return None,
        };
        let (_, path) = self.programs.iter().find(|(n, _)| n == name)?;
        Some(format!("{path}\n"))
    }

    /// The value(s) of a variable, when known: assigned earlier in the
    /// command, or `$PWD`, `$CLAUDE_PROJECT_DIR`, `$HOME`.
    fn lookup(&self, name: &str) -> Option<Vec<String>> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.clone());
        }
        match name {
            "PWD" => self.cwd.as_ref().map(|c| vec![c.display().to_string()]),
            "CLAUDE_PROJECT_DIR" => self.root.clone().map(|r| vec![r]),
            "HOME" => self.home.clone().map(|h| vec![h]),
            "USERPROFILE" if self.windows => self.home.clone().map(|h| vec![h]),
            _ => None,
        }
    }

    /// A copy for a script run from this one (a substitution, `sh -c`): its
    /// `cd` and assignments do not come back.
    pub(super) fn nested(&self, cwd: Option<PathBuf>, positional: Option<&[String]>) -> Scope {
        let mut s = self.clone();
        s.cwd = cwd;
        if let Some(args) = positional {
            s.vars.retain(|k, _| !is_positional(k));
            for (n, a) in args.iter().enumerate().take(10) {
                s.vars.insert(n.to_string(), vec![a.clone()]);
            }
            let rest: Vec<String> = args.iter().skip(1).cloned().collect();
            s.vars.insert("@".into(), rest.clone());
            s.vars.insert("*".into(), vec![rest.join(" ")]);
        }
        s
    }

    /// Every positional parameter not set is `value` (the operands `xargs`
    /// or `find -exec` hand to `sh -c`).
    pub(super) fn fill_positional(&mut self, value: &str) {
        for n in 0..10 {
            self.vars
                .entry(n.to_string())
                .or_insert_with(|| vec![value.to_string()]);
        }
        for k in ["@", "*"] {
            let v = self.vars.entry(k.to_string()).or_default();
            v.push(value.to_string());
        }
    }

    /// The words of a segment as the program receives them: known variables
    /// and visible `$(echo ...)` substituted, braces expanded.
    pub(super) fn expand_words(&self, seg: &Segment) -> Vec<String> {
        let mut out = Vec::with_capacity(seg.words.len());
        for (raw, w) in seg.raw_words.iter().zip(&seg.words) {
            for v in self.expand(w) {
                if raw.contains(['\'', '"', '\\']) || !v.contains('{') {
                    out.push(v);
                } else {
                    out.extend(glob::expand_braces(&v));
                }
            }
        }
        out
    }

    /// One word with known variables and visible substitutions replaced.
    pub(super) fn expand(&self, word: &str) -> Vec<String> {
        let folded = self.fold_substitutions(word);
        let word = folded.as_deref().unwrap_or(word);
        if !word.contains('$') {
            return vec![word.to_string()];
        }
        let mut outs = vec![String::new()];
        let mut i = 0;
        while i < word.len() {
            if word.as_bytes()[i] == b'$'
                && let Some(r) = var_ref(word, i)
                && let Some(vals) = self.lookup(r.name)
                && let Some(vals) = vals
                    .iter()
                    .map(|v| apply_op(v, r.op))
                    .collect::<Option<Vec<_>>>()
            {
                outs = outs
                    .iter()
                    .flat_map(|o| vals.iter().map(move |v| format!("{o}{v}")))
                    .take(MAX_VALUES)
                    .collect();
                i = r.end;
                continue;
            }
            let ch = word[i..].chars().next().unwrap_or('$');
            for o in &mut outs {
                o.push(ch);
            }
            i += ch.len_utf8();
        }
        outs
    }

    /// `$(echo X)`, `` `printf X` `` inside a word: the text they print.
    fn fold_substitutions(&self, word: &str) -> Option<String> {
        if !word.contains("$(") && !word.contains('`') {
            return None;
        }
        let spans = shell::substitution_spans(word);
        let mut out = String::new();
        let mut last = 0;
        let mut changed = false;
        for (start, end, inner) in spans {
            let segs = shell::split_chain(&inner);
            let [seg] = segs.as_slice() else { continue };
            let Some(text) = self.produced_text(&seg.words, seg) else {
                continue;
            };
            out.push_str(&word[last..start]);
            out.push_str(text.trim_end_matches('\n'));
            last = end;
            changed = true;
        }
        changed.then(|| {
            out.push_str(&word[last..]);
            out
        })
    }

    /// Remember what a segment (its words already expanded) sets: variable
    /// assignments, `for` lists, and a script it writes to a file.
    pub(super) fn record(&mut self, words: &[String], seg: &Segment) {
        if let Some(text) = self.produced_text(words, seg) {
            for r in seg.redirects.iter().filter(|r| r.writes_file()) {
                let name = file_name(&r.target).to_string();
                match self.scripts.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, old)) if r.op.ends_with(">>") => old.push_str(&text),
                    Some((_, old)) => *old = text.clone(),
                    None => self.scripts.push((name, text.clone())),
                }
            }
        }
        let Some(first) = words.first() else { return };
        match first.as_str() {
            "for" if words.get(2).is_some_and(|w| w == "in") => {
                self.set(&words[1], words[3..].to_vec());
            }
            // `for f; do` walks the positional parameters.
            "for" if words.len() == 2 => {
                let all = self.vars.get("@").cloned().unwrap_or_default();
                self.set(&words[1], all);
            }
            // `read [-r] NAME <<< TEXT`: the text is known; read from
            // anything else, the variable is not.
            "read" => {
                let names: Vec<&String> =
                    words[1..].iter().filter(|w| !w.starts_with('-')).collect();
                let text = seg.redirects.iter().find_map(|r| r.here_string());
                for (k, name) in names.iter().enumerate() {
                    let value = text.map(|t| {
                        let mut parts = t.trim().splitn(names.len(), char::is_whitespace);
                        parts.nth(k).unwrap_or("").trim().to_string()
                    });
                    match value {
                        Some(v) => self.set(name, vec![v]),
                        None => {
                            self.vars.remove(name.as_str());
                        }
                    }
                }
            }
            "unset" | "mapfile" | "readarray" => {
                for w in &words[1..] {
                    self.vars.remove(w.as_str());
                }
            }
            // `printf -v NAME FORMAT ARGS` assigns what it would print.
            "printf" if words.get(1).is_some_and(|w| w == "-v") && words.len() > 3 => {
                let text = printf_text(&words[3..]).unwrap_or_default();
                self.set(&words[2], vec![text]);
            }
            // `set -- ARGS` (or `set ARGS`) replaces the positional parameters.
            "set" if words.len() > 1 && (words[1] == "--" || !words[1].starts_with(['-', '+'])) => {
                let start = if words[1] == "--" { 2 } else { 1 };
                let mut args = vec![
                    self.vars
                        .get("0")
                        .and_then(|v| v.first().cloned())
                        .unwrap_or_default(),
                ];
                args.extend(words[start..].iter().cloned());
                *self = self.nested(self.cwd.clone(), Some(&args));
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                self.assign(&words[1..]);
            }
            _ if words.iter().all(|w| shell::is_assignment(w)) => self.assign(words),
            _ => {}
        }
    }

    fn assign(&mut self, words: &[String]) {
        let mut values: Vec<(&str, Vec<String>)> = Vec::new();
        for w in words.iter().filter(|w| shell::is_assignment(w)) {
            let Some((name, value)) = w.split_once('=') else {
                continue;
            };
            let name = name.trim_end_matches('+');
            match values.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(value.to_string()),
                None => values.push((name, vec![value.to_string()])),
            }
        }
        for (name, v) in values {
            self.set(name, v);
        }
    }

    /// A variable whose value is computed at run time is forgotten.
    fn set(&mut self, name: &str, values: Vec<String>) {
        let known =
            !values.is_empty() && values.iter().all(|v| !v.contains('$') && !v.contains('`'));
        if known {
            self.vars.insert(name.to_string(), values);
        } else {
            self.vars.remove(name);
        }
    }

    /// The text of a script this command wrote to a file with this name.
    pub(super) fn script_named(&self, path: &str) -> Option<&str> {
        let name = file_name(path);
        self.scripts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// What a segment visibly prints: `echo`, `printf`, `cat` of a heredoc,
    /// a here-string or a script this command wrote.
    pub(super) fn produced_text(&self, words: &[String], seg: &Segment) -> Option<String> {
        if let Some(path) = self.program_lookup(words) {
            return Some(path);
        }
        let Invocation::Exec { name, args, .. } = unwrap(words) else {
            return None;
        };
        match name.as_str() {
            "true" | "false" | ":" => Some(String::new()),
            "echo" => Some(echo_text(&args)),
            "cygpath" => cygpath_text(&args),
            "printf" => printf_text(&args),
            "cat" => {
                let (ops, _) = operands(&args, "", &[]);
                if ops.iter().all(|o| o == "-") {
                    let mut text: String = seg.heredocs.concat();
                    for r in &seg.redirects {
                        if let Some(h) = r.here_string() {
                            text.push_str(h);
                            text.push('\n');
                        }
                    }
                    return (!text.is_empty()).then_some(text);
                }
                ops.iter()
                    .map(|o| self.script_named(o).map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .map(|t| t.concat())
            }
            _ => None,
        }
    }
}

impl Scope {
    /// The text `<(COMMAND)` (a word, unquoted) visibly prints, when it does.
    pub(super) fn process_substitution_text(&self, word: &str) -> Option<String> {
        let inner = word.strip_prefix("<(")?.strip_suffix(')')?;
        shell::split_chain(inner)
            .iter()
            .map(|seg| self.produced_text(&self.expand_words(seg), seg))
            .collect::<Option<Vec<_>>>()
            .map(|t| t.concat())
    }
}

fn is_positional(k: &str) -> bool {
    k == "@" || k == "*" || k.bytes().all(|b| b.is_ascii_digit())
}

fn file_name(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// A variable reference: `$NAME`, `${NAME}`, `$1`, `$@`, `$*`, or
/// `${NAME<op><arg>}` for the operations in [`apply_op`].
struct VarRef<'a> {
    name: &'a str,
    /// The index after the reference.
    end: usize,
    /// The operation and its argument, e.g. (`%`, `/`) for `${PWD%/}`.
    op: Option<(&'a str, &'a str)>,
}

/// The variable reference at `i` (a `$`), if it is one.
fn var_ref(word: &str, i: usize) -> Option<VarRef<'_>> {
    let rest = &word[i + 1..];
    if let Some(inner) = rest.strip_prefix('{') {
        let close = inner.find('}')?;
        let body = &inner[..close];
        let name_len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '@' || c == '*'))
            .unwrap_or(body.len());
        let (name, tail) = body.split_at(name_len);
        if name.is_empty() {
            return None;
        }
        let op = if tail.is_empty() {
            None
        } else {
            let op = ["%%", "##", ":-", ":=", "%", "#", "-", "="]
                .into_iter()
                .find(|op| tail.starts_with(op))?;
            Some((op, &tail[op.len()..]))
        };
        return Some(VarRef {
            name,
            end: i + 2 + close + 1,
            op,
        });
    }
    let first = rest.chars().next()?;
    let len = if first.is_ascii_digit() || first == '@' || first == '*' {
        1
    } else if first.is_ascii_alphabetic() || first == '_' {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len())
    } else {
        return None;
    };
    Some(VarRef {
        name: &rest[..len],
        end: i + 1 + len,
        op: None,
    })
}

/// A parameter operation on a known value: a default (`:-`, `-`, `:=`, `=`)
/// or the removal of a matching suffix (`%`, `%%`) or prefix (`#`, `##`).
fn apply_op(value: &str, op: Option<(&str, &str)>) -> Option<String> {
    let Some((op, arg)) = op else {
        return Some(value.to_string());
    };
    if arg.contains('$') || arg.contains('`') {
        return None;
    }
    let ends: Vec<usize> = value
        .char_indices()
        .map(|(k, _)| k)
        .chain([value.len()])
        .collect();
    let suffix = |k: &usize| glob::fnmatch(arg, &value[*k..]);
    let prefix = |k: &usize| glob::fnmatch(arg, &value[..*k]);
    let cut_end = |k: Option<&usize>| k.map_or(value, |k| &value[..*k]).to_string();
    let cut_start = |k: Option<&usize>| k.map_or(value, |k| &value[*k..]).to_string();
    Some(match op {
        ":-" | ":=" if value.is_empty() => arg.to_string(),
        ":-" | ":=" | "-" | "=" => value.to_string(),
        // The shortest matching suffix starts last.
        "%" => cut_end(ends.iter().rev().find(|k| suffix(k))),
        "%%" => cut_end(ends.iter().find(|k| suffix(k))),
        "#" => cut_start(ends.iter().find(|k| prefix(k))),
        "##" => cut_start(ends.iter().rev().find(|k| prefix(k))),
        _ => return None,
    })
}

/// What `cygpath [-u|-w|-m|-a|-l|-s] PATH` prints (Git Bash's converter):
/// PATH in another spelling of the same place, which the guard reads in
/// one spelling anyway. Its own folders (`-H`, `-D`, `-W`, ...), a path
/// list or a file of paths: not known.
fn cygpath_text(args: &[String]) -> Option<String> {
    let (flags, ops): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.starts_with('-') && a.len() > 1);
    let plain = flags.iter().all(|f| {
        f.strip_prefix("--")
            .map(|l| {
                [
                    "unix",
                    "windows",
                    "mixed",
                    "absolute",
                    "long-name",
                    "short-name",
                ]
                .contains(&l)
            })
            .unwrap_or_else(|| f[1..].chars().all(|c| "uwmals".contains(c)))
    });
    match ops.as_slice() {
        [path] if plain => Some(format!("{path}\n")),
        _ => None,
    }
}

/// What `echo ARGS` prints, with backslash escapes read as `echo -e` (and
/// dash's echo) reads them, so `echo 'a\nrm x' | sh` shows both lines.
pub(super) fn echo_text(args: &[String]) -> String {
    let start = args
        .iter()
        .position(|a| {
            !(a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)))
        })
        .unwrap_or(args.len());
    let mut text = unescape(&args[start..].join(" "));
    text.push('\n');
    text
}

/// What `printf FORMAT ARGS` prints: `%s`, `%b`, `%d`, ... take the
/// arguments in turn, and the format is reused while arguments remain.
pub(super) fn printf_text(args: &[String]) -> Option<String> {
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        // `printf -v NAME` assigns instead of printing.
        Some("-v") => return None,
        _ => args,
    };
    let (format, mut rest) = args.split_first()?;
    let format = unescape(format);
    let mut out = String::new();
    for _ in 0..MAX_VALUES {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                out.push('%');
                continue;
            }
            // Flags, width and precision, then the conversion letter.
            while chars
                .peek()
                .is_some_and(|c| "-+ #0123456789.*".contains(*c))
            {
                chars.next();
            }
            let conv = chars.next();
            if let Some((a, tail)) = rest.split_first() {
                out.push_str(&if conv == Some('b') {
                    unescape(a)
                } else {
                    a.clone()
                });
                rest = tail;
                used = true;
            }
        }
        if rest.is_empty() || !used || out.len() > MAX_TEXT {
            break;
        }
    }
    Some(out)
}

/// Backslash escapes as `echo -e` and `printf` read them: `\n`, `\t`, `\\`,
/// `\0` (a NUL, which `xargs -0` splits on); others are kept as written.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some('\\') | None => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(s: &str) -> Segment {
        shell::split_chain(s).remove(0)
    }

    #[test]
    fn variables_assigned_earlier_are_expanded() {
        let mut sc = Scope::new(None);
        let s = seg("f=.claude/x D=\"a b\"");
        sc.record(&sc.expand_words(&s), &s);
        assert_eq!(sc.expand("$f"), [".claude/x"]);
        assert_eq!(sc.expand("${f}.bak"), [".claude/x.bak"]);
        assert_eq!(sc.expand("${f:-y}"), [".claude/x"]);
        assert_eq!(sc.expand("$D/$f"), ["a b/.claude/x"]);
        assert_eq!(sc.expand("$TMPDIR/$f"), ["$TMPDIR/.claude/x"]);
        assert_eq!(sc.expand("${f%/x}"), [".claude"]);
        assert_eq!(sc.expand("${f#*/}"), ["x"]);
        assert_eq!(
            sc.expand("${f/x/y}"),
            ["${f/x/y}"],
            "other operations are not applied"
        );
        let s = seg("for g in a b{1,2}");
        sc.record(&sc.expand_words(&s), &s);
        assert_eq!(sc.expand("rm-$g"), ["rm-a", "rm-b1", "rm-b2"]);
        let s = seg("f=$(mktemp)");
        sc.record(&sc.expand_words(&s), &s);
        assert_eq!(sc.expand("$f"), ["$f"], "a value known at run time only");
    }

    #[test]
    fn known_places_and_parameter_operations() {
        let sc = Scope::new(Some(PathBuf::from("/p/sub")))
            .with_places(Path::new("/p"), Some(Path::new("/h")));
        assert_eq!(sc.expand("${PWD%/}/x"), ["/p/sub/x"]);
        assert_eq!(sc.expand("${PWD%/*}/x"), ["/p/x"]);
        assert_eq!(sc.expand("${PWD%%/*}x"), ["x"]);
        assert_eq!(sc.expand("${PWD##*/}"), ["sub"]);
        assert_eq!(sc.expand("${PWD#/}"), ["p/sub"]);
        assert_eq!(sc.expand("$HOME/${CLAUDE_PROJECT_DIR:-/x}"), ["/h//p"]);
        assert_eq!(sc.expand("${TMPDIR:-/tmp}/x"), ["${TMPDIR:-/tmp}/x"]);
        assert_eq!(apply_op("", Some((":-", "d"))).as_deref(), Some("d"));
    }

    #[test]
    fn values_set_by_builtins() {
        let mut sc = Scope::new(None);
        for cmd in [
            "printf -v t '%s/x' .claude",
            "read -r a b <<< 'one two three'",
            "set -- p1 p2",
        ] {
            let s = seg(cmd);
            sc.record(&sc.expand_words(&s), &s);
        }
        assert_eq!(sc.expand("$t"), [".claude/x"]);
        assert_eq!(sc.expand("$a|$b"), ["one|two three"]);
        assert_eq!(sc.expand("$1 $2"), ["p1 p2"]);
        assert_eq!(sc.expand("x$(true)"), ["x"]);
        let s = seg("read f");
        sc.record(&s.words, &s);
        assert_eq!(sc.expand("$f"), ["$f"]);
        assert_eq!(
            sc.process_substitution_text("<(echo rm x)").as_deref(),
            Some("rm x\n")
        );
        assert_eq!(sc.process_substitution_text("<(ls)"), None);
    }

    #[test]
    fn positional_parameters() {
        let sc = Scope::new(None).nested(None, Some(&["_".into(), "a".into(), "b".into()]));
        assert_eq!(sc.expand("$0 $1 $2"), ["_ a b"]);
        assert_eq!(sc.expand("$@"), ["a", "b"]);
        let mut sc = Scope::new(None).nested(None, Some(&["_".into()]));
        sc.fill_positional("ARG");
        assert_eq!(sc.expand("$1"), ["ARG"]);
        assert_eq!(sc.expand("$0"), ["_"]);
    }

    #[test]
    fn echoed_substitutions_are_folded() {
        let sc = Scope::new(None);
        assert_eq!(sc.expand(".claude/$(echo x).md"), [".claude/x.md"]);
        assert_eq!(sc.expand("`printf %s y`"), ["y"]);
        assert_eq!(sc.expand("$(ls)"), ["$(ls)"]);
    }

    #[test]
    fn visible_text() {
        assert_eq!(echo_text(&["-e".into(), "a\\nb".into()]), "a\nb\n");
        assert_eq!(echo_text(&["-x".into()]), "-x\n");
        assert_eq!(unescape("a\\0b\\\\n\\q"), "a\0b\\n\\q");
        let p = |a: &[&str]| printf_text(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(p(&["%s\\n", "rm a", "rm b"]).unwrap(), "rm a\nrm b\n");
        assert_eq!(p(&["rm %s", "x"]).unwrap(), "rm x");
        assert_eq!(p(&["100%%"]).unwrap(), "100%");
        assert_eq!(p(&["-v", "x", "y"]), None);
        let sc = Scope::new(None);
        let s = seg("cat <<< 'rm x'");
        assert_eq!(sc.produced_text(&s.words, &s).as_deref(), Some("rm x\n"));
    }

    #[test]
    fn written_scripts_are_remembered() {
        let mut sc = Scope::new(None);
        let s = seg("echo 'rm x' > /tmp/s.sh");
        sc.record(&s.words, &s);
        let s = seg("printf 'rm y' >> /tmp/s.sh");
        sc.record(&s.words, &s);
        assert_eq!(sc.script_named("./s.sh"), Some("rm x\nrm y"));
        assert_eq!(sc.script_named("t.sh"), None);
    }
}
