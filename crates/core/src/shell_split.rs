//! A check command split into words the way `sh` would, or not at all: the
//! small subset ralph needs to know *with certainty* which program a check
//! runs (`score::launch`). Plain words, single quotes, double quotes holding
//! no expansion, and `&&`; anything the shell would expand, redirect, pipe,
//! glob or run in the background (`$`, backticks, `\`, `|`, `;`, `&`, `<`,
//! `>`, parentheses, braces, `*`, `?`, `[`, `~`, `#`, `!`, a newline) makes
//! the command one this reading does not claim to know: `None`. The guard's
//! full reader (ralph-policy's `shell`) sits above ralph-core and cannot be
//! used here; this one refuses rather than guesses.
//! Pure.

/// A word of the command, unquoted, with the byte offset just past it in
/// the text (where words can be inserted after it), or `&&`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Word { text: String, end: usize },
    And,
}

/// The command's tokens, or `None` when it holds anything this reading does
/// not follow.
pub(crate) fn tokens(command: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = command.char_indices().peekable();
    let mut word: Option<String> = None;
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '\t' => push_word(&mut out, &mut word, at),
            '&' if chars.peek().map(|(_, n)| *n) == Some('&') => {
                chars.next();
                push_word(&mut out, &mut word, at);
                out.push(Token::And);
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        (_, '\'') => break,
                        (_, ch) => w.push(ch),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        (_, '"') => break,
                        (_, '$' | '`' | '\\' | '!') => return None,
                        (_, ch) => w.push(ch),
                    }
                }
            }
            c if is_special(c) => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    push_word(&mut out, &mut word, command.len());
    Some(out)
}

/// A character the shell gives a meaning to, outside quotes.
fn is_special(c: char) -> bool {
    matches!(
        c,
        '$' | '`'
            | '\\'
            | '|'
            | ';'
            | '&'
            | '<'
            | '>'
            | '('
            | ')'
            | '{'
            | '}'
            | '*'
            | '?'
            | '['
            | ']'
            | '~'
            | '#'
            | '!'
            | '\n'
            | '\r'
    )
}

fn push_word(out: &mut Vec<Token>, word: &mut Option<String>, end: usize) {
    if let Some(text) = word.take() {
        out.push(Token::Word { text, end });
    }
}

/// `word` quoted for `sh` (single quotes where it needs any).
pub(crate) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Option<Vec<String>> {
        tokens(command).map(|t| {
            t.into_iter()
                .map(|t| match t {
                    Token::Word { text, .. } => text,
                    Token::And => "&&".into(),
                })
                .collect()
        })
    }

    #[test]
    fn plain_and_quoted_words_are_read_as_sh_reads_them() {
        assert_eq!(
            words("cd 'my app' && npx  jest \"a b\" x=1").unwrap(),
            ["cd", "my app", "&&", "npx", "jest", "a b", "x=1"]
        );
        assert_eq!(
            words("pytest -k 'a or b'").unwrap(),
            ["pytest", "-k", "a or b"]
        );
        assert_eq!(words("a''b").unwrap(), ["ab"]);
        let t = tokens("go test ./...").unwrap();
        assert_eq!(
            t[1],
            Token::Word {
                text: "test".into(),
                end: 7
            }
        );
    }

    #[test]
    fn anything_the_shell_would_expand_or_connect_is_not_claimed() {
        for command in [
            "pytest | tee out",
            "pytest; echo",
            "pytest &",
            "pytest > out",
            "pytest $ARGS",
            "pytest \"$ARGS\"",
            "pytest `x`",
            "pytest tests/*.py",
            "pytest ~/t",
            "pytest 'unclosed",
            "pytest \"unclosed",
            "pytest \\\n -q",
            "(pytest)",
            "pytest || true",
            "pytest # note",
            "pytest\nls",
        ] {
            assert_eq!(tokens(command), None, "{command}");
        }
    }

    #[test]
    fn a_quoted_word_reads_back_as_itself() {
        assert_eq!(quote("/tmp/a b/r.xml"), "'/tmp/a b/r.xml'");
        assert_eq!(quote("--junitxml=/x/r.xml"), "--junitxml=/x/r.xml");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(words(&quote("/tmp/a b")).unwrap(), ["/tmp/a b"]);
    }
}
