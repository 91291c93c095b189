//! Reading a Bash command the way the shell will.
//!
//! Two layers. [`split_chain`] is a small quote-aware scanner that finds what
//! no word tokenizer reports: the control operators (`&&`, `||`, `;`, `|`,
//! `&`, newlines, subshell parentheses), redirections, heredocs, comments and
//! command substitutions (`$(...)`, backticks, `<(...)`). Within one simple
//! command it only finds word *boundaries*; the unquoting of each word (quotes,
//! backslashes) is done by the `shlex` crate, so the guard sees `"rm"`, `\rm`
//! and `r''m` as the same `rm` the shell runs.
//!
//! Everything here is text in, values out: no file system, no environment.
//! Pure.

mod quote;

pub use quote::{join, unquote};

/// One simple command of a chain, with where it sits in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Byte range of the trimmed segment in the source command.
    pub start: usize,
    pub end: usize,
    /// The words as written (quotes kept), redirections taken out.
    pub raw_words: Vec<String>,
    /// The same words unquoted, as the program will receive them.
    pub words: Vec<String>,
    pub redirects: Vec<Redirect>,
    /// Inner text of every `$(...)`, backtick, `<(...)` and `>(...)`: each is a
    /// command of its own that runs before (or beside) this one.
    pub substitutions: Vec<String>,
    /// Bodies of `<<WORD` heredocs fed to this command.
    pub heredocs: Vec<String>,
    /// The previous segment's output is piped into this one.
    pub piped_in: bool,
    /// This segment's output is piped into the next one.
    pub pipes_out: bool,
}

/// A redirection such as `> file`, `2>>log` or `&> out`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator with its file descriptor, e.g. `>`, `2>>`, `&>`, `<`.
    pub op: String,
    /// The target word, unquoted.
    pub target: String,
    /// Operator and target as written, to put back after a rewrite.
    pub raw: String,
}

impl Redirect {
    /// Whether this redirection writes (or truncates) a file: `>`, `>>`,
    /// `>|`, `&>`, `&>>`, `N>`, `<>`, and `>&FILE` / `N>&FILE` (bash reads
    /// `>&WORD` as `&>WORD` unless WORD is a descriptor). `>&2`, `2>&1`,
    /// `>&-` and `2>&1-` only duplicate or close descriptors.
    pub(crate) fn writes_file(&self) -> bool {
        if !self.op.contains('>') {
            return false;
        }
        if self.op.ends_with('&') {
            return !is_descriptor(&self.target);
        }
        true
    }

    /// The text of a here-string (`<<< WORD`), which a command reads on stdin.
    pub(crate) fn here_string(&self) -> Option<&str> {
        self.op.ends_with("<<<").then_some(self.target.as_str())
    }

    /// `< FILE` (or `0< FILE`): the command reads FILE on stdin.
    pub(crate) fn reads_stdin_from(&self) -> Option<&str> {
        let fd = self.op.trim_end_matches('<');
        (self.op.ends_with('<') && !self.op.ends_with("<<") && (fd.is_empty() || fd == "0"))
            .then_some(self.target.as_str())
    }
}

/// `1`, `2`, `-`, `1-`: the target of a descriptor duplication or close.
fn is_descriptor(target: &str) -> bool {
    let t = target.strip_suffix('-').unwrap_or(target);
    t.is_empty() || t.bytes().all(|b| b.is_ascii_digit())
}

struct Builder {
    seg_start: Option<usize>,
    last_end: usize,
    raw_words: Vec<String>,
    word: String,
    in_word: bool,
    redirects: Vec<Redirect>,
    substitutions: Vec<String>,
    piped_in: bool,
}

impl Builder {
    fn new(piped_in: bool) -> Builder {
        Builder {
            seg_start: None,
            last_end: 0,
            raw_words: Vec::new(),
            word: String::new(),
            in_word: false,
            redirects: Vec::new(),
            substitutions: Vec::new(),
            piped_in,
        }
    }

    fn mark(&mut self, start: usize, end: usize) {
        if self.seg_start.is_none() {
            self.seg_start = Some(start);
        }
        self.last_end = end;
    }

    fn push_text(&mut self, text: &str, start: usize, end: usize) {
        self.mark(start, end);
        self.word.push_str(text);
        self.in_word = true;
    }

    fn end_word(&mut self) {
        if self.in_word {
            self.raw_words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    fn finish(mut self, pipes_out: bool) -> Option<Segment> {
        self.end_word();
        let start = self.seg_start?;
        let words = self.raw_words.iter().map(|w| unquote(w)).collect();
        Some(Segment {
            start,
            end: self.last_end,
            raw_words: self.raw_words,
            words,
            redirects: self.redirects,
            substitutions: self.substitutions,
            heredocs: Vec::new(),
            piped_in: self.piped_in,
            pipes_out,
        })
    }
}

/// How deep `"$("$(...)")"` nesting is followed while scanning; deeper
/// quotes are skipped as plain text (no shell command nests this deep, and
/// the stack stays bounded on hostile input).
const MAX_NESTING: usize = 64;

/// The text between a backtick at `start` and its closing one at `end - 1`
/// (or the end of the text, when it is not closed).
fn backtick_inner(s: &str, start: usize, end: usize) -> String {
    let close = if end > start + 1 && s.as_bytes().get(end - 1) == Some(&b'`') {
        end - 1
    } else {
        end
    };
    s.get(start + 1..close).unwrap_or_default().to_string()
}

/// The index after a backslash at `i` and the whole character it escapes
/// (which may be several bytes long).
fn past_escape(s: &str, i: usize) -> usize {
    s[i + 1..]
        .chars()
        .next()
        .map_or(s.len(), |c| i + 1 + c.len_utf8())
}

/// End of a single-quoted string starting at `i` (the opening quote).
fn skip_single(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() && b[j] != b'\'' {
        j += 1;
    }
    (j + 1).min(b.len())
}

/// End of a double-quoted string starting at `i`; substitutions inside it
/// still run, so they are collected.
fn skip_double(s: &str, i: usize, subs: &mut Vec<String>, nesting: usize) -> usize {
    let b = s.as_bytes();
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j = past_escape(s, j),
            b'"' => return j + 1,
            b'`' => {
                let end = skip_backtick(s, j);
                subs.push(backtick_inner(s, j, end));
                j = end;
            }
            b'$' if b.get(j + 1) == Some(&b'(') => {
                let end = skip_paren(s, j + 1, subs, nesting + 1);
                j = end;
            }
            _ => j += 1,
        }
    }
    b.len()
}

fn skip_backtick(s: &str, i: usize) -> usize {
    let b = s.as_bytes();
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j = past_escape(s, j),
            b'`' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// `i` points at `(`; returns the index after the matching `)`, recording the
/// inner text as a substitution (arithmetic `$((...))` is not a command).
fn skip_paren(s: &str, i: usize, subs: &mut Vec<String>, nesting: usize) -> usize {
    let b = s.as_bytes();
    let arithmetic = b.get(i + 1) == Some(&b'(');
    let mut depth = 0usize;
    let mut j = i;
    let mut inner_subs = Vec::new();
    while j < b.len() {
        match b[j] {
            b'\\' => j = past_escape(s, j),
            b'\'' => j = skip_single(b, j),
            b'"' if nesting < MAX_NESTING => j = skip_double(s, j, &mut inner_subs, nesting + 1),
            b'"' => j = s[j + 1..].find('"').map_or(b.len(), |p| j + p + 2),
            b'(' => {
                depth += 1;
                j += 1;
            }
            b')' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    if !arithmetic {
                        subs.push(s[i + 1..j - 1].to_string());
                    }
                    return j;
                }
            }
            _ => j += 1,
        }
    }
    // Unbalanced: the shell would not run it; still inspect what is there.
    if !arithmetic && i + 1 < s.len() {
        subs.push(s[i + 1..].to_string());
    }
    b.len()
}

fn is_word_end(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
    )
}

/// Read one raw word starting at `i` (after blanks); returns (raw, end).
fn read_word(s: &str, mut i: usize, subs: &mut Vec<String>) -> (String, usize) {
    let b = s.as_bytes();
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    let start = i;
    while i < b.len() && !is_word_end(b[i]) {
        i = match b[i] {
            b'\\' => past_escape(s, i),
            b'\'' => skip_single(b, i),
            b'"' => skip_double(s, i, subs, 0),
            b'`' => {
                let end = skip_backtick(s, i);
                subs.push(backtick_inner(s, i, end));
                end
            }
            b'$' if b.get(i + 1) == Some(&b'(') => skip_paren(s, i + 1, subs, 0),
            _ => i + 1,
        };
    }
    (s[start..i].to_string(), i)
}

/// Split a command line into simple commands. Never fails: text it cannot
/// make sense of is kept as words, so checks err on the side of seeing more.
pub fn split_chain(s: &str) -> Vec<Segment> {
    let b = s.as_bytes();
    let mut out: Vec<Segment> = Vec::new();
    let mut cur = Builder::new(false);
    // Heredoc delimiters declared on the current line: (delimiter, strip
    // tabs, index in `out` of the segment they feed); bodies start at the
    // next newline.
    let mut pending: Vec<(String, bool, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => {
                cur.end_word();
                i += 1;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                // Line continuation.
                cur.end_word();
                i += 2;
            }
            b'#' if !cur.in_word => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\n' | b';' | b'&' | b'|' | b'(' | b')' => {
                // `&>` and `&>>` are redirections, not a background `&`.
                if c == b'&' && b.get(i + 1) == Some(&b'>') {
                    i = redirect(s, i, &mut cur, &mut pending, out.len());
                    continue;
                }
                let (len, pipe) = match (c, b.get(i + 1).copied()) {
                    (b'&', Some(b'&')) | (b'|', Some(b'|')) | (b';', Some(b';')) => (2, false),
                    (b'|', Some(b'&')) => (2, true),
                    (b'|', _) => (1, true),
                    _ => (1, false),
                };
                // A `(` inside a word (e.g. `foo(`) is rare; treat any as a boundary.
                let finished = std::mem::replace(&mut cur, Builder::new(pipe));
                if let Some(seg) = finished.finish(pipe) {
                    out.push(seg);
                }
                i += len;
                if c == b'\n' && !pending.is_empty() {
                    i = read_heredocs(s, i, &pending, &mut out);
                    pending.clear();
                }
            }
            b'>' | b'<' => {
                // Process substitution runs a command.
                if b.get(i + 1) == Some(&b'(') && !cur.in_word {
                    let mut subs = Vec::new();
                    let end = skip_paren(s, i + 1, &mut subs, 0);
                    cur.substitutions.extend(subs);
                    cur.push_text(&s[i..end], i, end);
                    i = end;
                    continue;
                }
                i = redirect(s, i, &mut cur, &mut pending, out.len());
            }
            b'0'..=b'9' if !cur.in_word && fd_redirect_ahead(b, i) => {
                i = redirect(s, i, &mut cur, &mut pending, out.len());
            }
            _ => i = word_piece(s, i, &mut cur),
        }
    }
    if let Some(seg) = cur.finish(false) {
        out.push(seg);
    }
    out
}

/// Add the piece of a word at `i` (a quoted string, a substitution, an
/// escape, or one character) to the current word; returns the index after it.
fn word_piece(s: &str, i: usize, cur: &mut Builder) -> usize {
    let b = s.as_bytes();
    let end = match b[i] {
        b'\'' => skip_single(b, i),
        b'"' => {
            let mut subs = Vec::new();
            let e = skip_double(s, i, &mut subs, 0);
            cur.substitutions.extend(subs);
            e
        }
        b'`' => {
            let e = skip_backtick(s, i);
            cur.substitutions.push(backtick_inner(s, i, e));
            e
        }
        b'$' if b.get(i + 1) == Some(&b'(') => {
            let mut subs = Vec::new();
            let e = skip_paren(s, i + 1, &mut subs, 0);
            cur.substitutions.extend(subs);
            e
        }
        b'\\' => past_escape(s, i),
        _ => {
            // Advance one whole UTF-8 character.
            let mut e = i + 1;
            while e < b.len() && !s.is_char_boundary(e) {
                e += 1;
            }
            e
        }
    };
    let end = end.min(b.len());
    cur.push_text(&s[i..end], i, end);
    end
}

fn fd_redirect_ahead(b: &[u8], i: usize) -> bool {
    let mut j = i;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    j < b.len() && (b[j] == b'>' || b[j] == b'<')
}

/// Parse a redirection at `i`; returns the index after its target.
fn redirect(
    s: &str,
    i: usize,
    cur: &mut Builder,
    pending: &mut Vec<(String, bool, usize)>,
    owner: usize,
) -> usize {
    let b = s.as_bytes();
    cur.end_word();
    let start = i;
    let mut j = i;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    if b.get(j) == Some(&b'&') {
        j += 1; // &> / &>>
    }
    let op_start = j;
    // The operator: > >> >| >& < << <<- <<< <> <&
    if j < b.len() {
        let first = b[j];
        j += 1;
        match (first, b.get(j).copied()) {
            (b'>', Some(b'>' | b'|' | b'&')) | (b'<', Some(b'>' | b'&')) => j += 1,
            (b'<', Some(b'<')) => {
                j += 1;
                if b.get(j) == Some(&b'<') || b.get(j) == Some(&b'-') {
                    j += 1;
                }
            }
            _ => {}
        }
    }
    let op = s[start..j].to_string();
    let heredoc = s[op_start..j].starts_with("<<") && !s[op_start..j].starts_with("<<<");
    let mut subs = Vec::new();
    let (raw_target, end) = read_word(s, j, &mut subs);
    cur.substitutions.extend(subs);
    let target = unquote(&raw_target);
    if heredoc {
        pending.push((target.clone(), s[op_start..j].ends_with('-'), owner));
    }
    cur.mark(start, end);
    cur.redirects.push(Redirect {
        op,
        target,
        raw: s[start..end].trim().to_string(),
    });
    end
}

/// Consume heredoc bodies after a newline at `i`; attach them to their owners.
fn read_heredocs(
    s: &str,
    mut i: usize,
    pending: &[(String, bool, usize)],
    out: &mut [Segment],
) -> usize {
    for (delim, strip_tabs, owner) in pending {
        let mut body = String::new();
        loop {
            if i >= s.len() {
                break;
            }
            let line_end = s[i..].find('\n').map(|p| i + p).unwrap_or(s.len());
            let line = &s[i..line_end];
            let cmp = if *strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            i = (line_end + 1).min(s.len());
            if cmp == delim {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        if let Some(seg) = out.get_mut(*owner) {
            seg.heredocs.push(body);
        }
    }
    i
}

/// The outermost command substitutions of one (unquoted) word: `$(...)` and
/// backticks, as (start, end, inner text); arithmetic `$((...))` is not one.
pub(crate) fn substitution_spans(word: &str) -> Vec<(usize, usize, String)> {
    let b = word.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'$' if b.get(i + 1) == Some(&b'(') && b.get(i + 2) != Some(&b'(') => {
                let mut subs = Vec::new();
                let end = skip_paren(word, i + 1, &mut subs, 0);
                if let Some(inner) = subs.pop() {
                    out.push((i, end, inner));
                }
                i = end;
            }
            b'`' => {
                let end = skip_backtick(word, i);
                out.push((i, end, backtick_inner(word, i, end)));
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// Is `w` a shell variable assignment (`NAME=value`, `NAME+=value`)?
pub(crate) fn is_assignment(w: &str) -> bool {
    let Some(eq) = w.find('=') else { return false };
    let name = w[..eq].strip_suffix('+').unwrap_or(&w[..eq]);
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Vec<String>> {
        split_chain(s).into_iter().map(|g| g.words).collect()
    }

    #[test]
    fn splits_on_every_operator() {
        let w = words("a 1 && b; c || d | e & f\ng");
        let names: Vec<&str> = w.iter().map(|x| x[0].as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g"]);
    }

    #[test]
    fn quotes_hide_operators() {
        let w = words("echo 'a && b' \"c; d\" e\\;f");
        assert_eq!(w, vec![vec!["echo", "a && b", "c; d", "e;f"]]);
    }

    #[test]
    fn redirects_are_taken_out_of_words() {
        let s = split_chain("echo hi >> out.txt 2>&1 | tee -a log");
        assert_eq!(s[0].words, ["echo", "hi"]);
        assert_eq!(s[0].redirects[0].target, "out.txt");
        assert!(s[0].redirects[0].writes_file());
        assert!(!s[0].redirects[1].writes_file());
        assert!(s[0].pipes_out && s[1].piped_in);
    }

    #[test]
    fn descriptor_duplication_is_not_a_file_write() {
        let writes = |src: &str| {
            split_chain(src)[0]
                .redirects
                .iter()
                .map(Redirect::writes_file)
                .collect::<Vec<_>>()
        };
        assert_eq!(writes("echo x >&2 2>&1 >&- 2>&1-"), [false; 4]);
        assert_eq!(
            writes("echo x >&out 1>&out &>out &>>out >|out 2>out <>out"),
            [true; 7]
        );
        assert_eq!(writes("echo x >& out"), [true]);
        assert_eq!(writes("cat < in <<< text"), [false, false]);
    }

    #[test]
    fn here_strings_and_stdin_files() {
        let s = split_chain("bash <<< 'rm x' < script.sh 2< err");
        let r = &s[0].redirects;
        assert_eq!(r[0].here_string(), Some("rm x"));
        assert_eq!(r[1].reads_stdin_from(), Some("script.sh"));
        assert_eq!(r[2].reads_stdin_from(), None);
        assert_eq!(r[0].reads_stdin_from(), None);
    }

    #[test]
    fn substitutions_are_collected_even_in_double_quotes() {
        let s = split_chain("echo \"$(rm x)\" `rm y` '$(rm z)'");
        assert_eq!(s[0].substitutions, ["rm x", "rm y"]);
    }

    #[test]
    fn comments_are_not_commands() {
        let s = split_chain("ls # rm -rf .claude");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].words, ["ls"]);
    }

    #[test]
    fn heredoc_body_is_not_split_into_commands() {
        let s = split_chain("cat <<'EOF' > notes.txt\nrm -rf .claude\nEOF\necho done");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].heredocs, ["rm -rf .claude\n"]);
        assert_eq!(s[0].redirects[1].target, "notes.txt");
        assert_eq!(s[1].words, ["echo", "done"]);
    }

    #[test]
    fn ranges_cover_the_segment() {
        let src = "FOO=1 pnpm -w run x && ls";
        let s = split_chain(src);
        assert_eq!(&src[s[0].start..s[0].end], "FOO=1 pnpm -w run x");
        assert_eq!(&src[s[1].start..s[1].end], "ls");
    }

    #[test]
    fn multibyte_text_after_escapes_and_open_quotes() {
        // Byte offsets must always land on character boundaries.
        for src in ["\\日本", "`\\é", "echo `é", "\"$(`é", "x\\é y", "'é", "$(é"] {
            let _ = split_chain(src);
        }
        assert_eq!(split_chain("echo \\é")[0].words, ["echo", "é"]);
    }

    #[test]
    fn hostile_nesting_stays_bounded() {
        // Runs on a test thread's small stack: nesting must not recurse per level.
        let deep = format!("echo {}", "\"$(".repeat(100_000));
        assert_eq!(split_chain(&deep).len(), 1);
        let parens = format!("rm {}x{}", "$(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(split_chain(&parens)[0].substitutions.len(), 1);
    }

    #[test]
    fn ansi_c_quoting() {
        assert_eq!(unquote("$'.claude/x'"), ".claude/x");
        assert_eq!(unquote("$'ralph\\x2dloop'"), "ralph-loop");
        assert_eq!(unquote("$'a\\nb'"), "a\nb");
        assert_eq!(unquote("$'\\056claude'"), ".claude");
        assert_eq!(unquote("$'it\\'s'"), "it's");
        assert_eq!(
            unquote("\"$'x'\""),
            "$'x'",
            "inside double quotes it is literal"
        );
        assert_eq!(unquote("'$'x"), "$x");
    }

    #[test]
    fn substitution_spans_of_a_word() {
        let w = "a$(echo x)b`pwd`c$((1+2))";
        let spans = substitution_spans(w);
        assert_eq!(spans.len(), 2);
        assert_eq!(&w[spans[0].0..spans[0].1], "$(echo x)");
        assert_eq!(spans[0].2, "echo x");
        assert_eq!(spans[1].2, "pwd");
    }

    #[test]
    fn assignments() {
        assert!(is_assignment("FOO=1"));
        assert!(is_assignment("A_B+=x"));
        assert!(!is_assignment("1x=y"));
        assert!(!is_assignment("--x=1"));
    }
}
