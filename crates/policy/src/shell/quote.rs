//! Quoting: a word as the program receives it (shlex, after Bash's ANSI-C
//! `$'...'` is decoded), and words quoted back into one command line. Pure.

/// Unquote one word with shlex; a word shlex cannot read (an unbalanced quote,
/// which the shell would refuse too) is kept as written. Bash's ANSI-C quoting
/// (`$'...'`, with `\n`, `\xHH`, `\NNN`, ...) is decoded first.
pub fn unquote(raw: &str) -> String {
    let converted = raw.contains("$'").then(|| ansi_c_to_single(raw));
    let raw = converted.as_deref().unwrap_or(raw);
    match shlex::split(raw) {
        Some(mut w) if w.len() == 1 => w.pop().unwrap_or_default(),
        Some(w) if w.is_empty() => String::new(),
        _ => raw.to_string(),
    }
}

/// Rewrite each `$'...'` of a word (outside other quotes) as the plain
/// single-quoted string it stands for.
fn ansi_c_to_single(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    let mut double = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                out.extend(chars.next());
            }
            '"' => {
                double = !double;
                out.push(c);
            }
            '\'' if !double => {
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == '\'' {
                        break;
                    }
                }
            }
            '$' if !double && chars.peek() == Some(&'\'') => {
                chars.next();
                let decoded = ansi_c_body(&mut chars);
                out.push('\'');
                out.push_str(&decoded.replace('\'', "'\\''"));
                out.push('\'');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The text of a `$'...'` body up to its closing quote, escapes decoded.
fn ansi_c_body(chars: &mut std::iter::Peekable<std::str::Chars>) -> String {
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\'' => break,
            '\\' => {
                let Some(e) = chars.next() else { break };
                let simple = match e {
                    'n' => Some('\n'),
                    't' => Some('\t'),
                    'r' => Some('\r'),
                    'a' => Some('\u{7}'),
                    'b' => Some('\u{8}'),
                    'e' | 'E' => Some('\u{1b}'),
                    'f' => Some('\u{c}'),
                    'v' => Some('\u{b}'),
                    '\\' | '\'' | '"' | '?' => Some(e),
                    _ => None,
                };
                if let Some(s) = simple {
                    out.push(s);
                    continue;
                }
                let (radix, max) = match e {
                    'x' => (16, 2),
                    'u' => (16, 4),
                    'U' => (16, 8),
                    '0'..='7' => (8, 2),
                    _ => {
                        out.push('\\');
                        out.push(e);
                        continue;
                    }
                };
                let mut digits = String::new();
                if radix == 8 {
                    digits.push(e);
                }
                while digits.len() < max + usize::from(radix == 8)
                    && chars.peek().is_some_and(|d| d.is_digit(radix))
                {
                    digits.extend(chars.next());
                }
                match u32::from_str_radix(&digits, radix)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push('\\');
                        out.push(e);
                        out.push_str(&digits);
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Quote words back into one shell-safe string.
pub fn join(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}
