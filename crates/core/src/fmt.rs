//! Small pieces of wording shared by every message: counts, durations,
//! session ids, paths, one-line previews. Pure.

use std::path::Path;

/// "1 iteration", "3 iterations", "1 story", "2 stories", "2 days".
pub fn plural(n: u64, word: &str) -> String {
    // A `y` after a consonant becomes `ies` (story); after a vowel it keeps (day).
    let consonant_y = word
        .strip_suffix('y')
        .filter(|stem| !stem.ends_with(['a', 'e', 'i', 'o', 'u']));
    match (n, consonant_y) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}

/// "42 s", "3 min", "5 h", "2 days".
pub(crate) fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => format!("{} h", secs / 3600),
        _ => plural(secs / 86_400, "day"),
    }
}

/// "850", "310k", "1.2M": a token count at a glance.
pub(crate) fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{}k", n / 1_000),
        _ => {
            let tenths = n / 100_000;
            format!("{}.{}M", tenths / 10, tenths % 10)
        }
    }
}

/// The first 8 characters of a session id, for messages; "(unclaimed)" when empty.
pub(crate) fn short_session(session: &str) -> String {
    if session.is_empty() {
        "(unclaimed)".into()
    } else {
        session.chars().take(8).collect()
    }
}

/// `path` relative to `root` when it lies below it, else as it is.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Text on one line of at most `max` characters (whitespace runs become one
/// space; a longer text is cut and ends with `…`).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!(
            "{}…",
            flat.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_words() {
        assert_eq!(plural(1, "iteration"), "1 iteration");
        assert_eq!(plural(2, "story"), "2 stories");
        assert_eq!(plural(0, "day"), "0 days");
    }

    #[test]
    fn durations_and_sessions() {
        assert_eq!(duration(59), "59 s");
        assert_eq!(duration(3 * 60), "3 min");
        assert_eq!(duration(2 * 86_400), "2 days");
        assert_eq!(short_session("0123456789"), "01234567");
        assert_eq!(short_session(""), "(unclaimed)");
    }

    #[test]
    fn one_bounded_line() {
        assert_eq!(one_line("a\n  b\tc", 160), "a b c");
        let long = "x".repeat(500);
        assert_eq!(one_line(&long, 160).chars().count(), 160);
    }

    #[test]
    fn relative_paths() {
        let root = Path::new("/p");
        assert_eq!(relative(root, Path::new("/p/.claude/x")), ".claude/x");
        assert_eq!(relative(root, Path::new("/q/x")), "/q/x");
    }
}
