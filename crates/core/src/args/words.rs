//! The words of a typed command line: whitespace-separated, a quoted string
//! one word (the quotes removed), the pieces of a prompt joined back with
//! their own spacing. Pure.

pub(super) struct Word {
    pub(super) end: usize,
    pub(super) value: String,
}

pub(super) fn next_token(text: &str, from: usize) -> Option<usize> {
    text[from..]
        .find(|c: char| !c.is_whitespace())
        .map(|i| from + i)
}

/// A word from `start`: up to whitespace, or a quoted string when it opens
/// with `"` or `'` and the quote closes before whitespace or the end (quotes
/// elsewhere, like the apostrophe in "don't", are plain characters).
pub(super) fn read_word(text: &str, start: usize) -> Word {
    let rest = &text[start..];
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'')
        && let Some(word) = quoted(rest, q)
    {
        return Word {
            end: start + word.0,
            value: word.1,
        };
    }
    let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
    Word {
        end: start + len,
        value: rest[..len].to_string(),
    }
}

/// `(bytes consumed, unquoted value)` for a quoted word, when it closes.
fn quoted(rest: &str, q: char) -> Option<(usize, String)> {
    let mut value = String::new();
    let mut chars = rest.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == q {
            let end = i + 1;
            let after = rest[end..].chars().next();
            return after
                .is_none_or(char::is_whitespace)
                .then_some((end, value));
        }
        if c == '\\' && q == '"' {
            match chars.next() {
                Some((_, n)) if n == '"' || n == '\\' => value.push(n),
                Some((_, n)) => {
                    value.push('\\');
                    value.push(n);
                }
                None => value.push('\\'),
            }
            continue;
        }
        value.push(c);
    }
    None
}

/// Join what is left of the text once options are cut out: each piece keeps
/// its inside byte for byte; the joints become one space.
pub(super) fn join_pieces(pieces: &[&str]) -> String {
    pieces
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
