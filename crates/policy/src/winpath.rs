//! Windows paths in one spelling. On Windows the agent's Bash commands run
//! in Git Bash, which takes a path in many spellings: `C:\Users\me`,
//! `C:/Users/me`, `/c/Users/me`, `/C/USERS/ME` (NTFS ignores case),
//! `\\?\C:\Users\me`, `//?/C:/Users/me`, `\\localhost\C$\Users\me`,
//! `/cygdrive/c/Users/me`, a name with trailing dots or a stream
//! (`state.md.`, `state.md::$DATA`), and an 8.3 short name
//! (`C:\Users\RUNNER~1`). The guard maps each word that names a path, and
//! every path it gathered, to one form before its rules compare them:
//! [`canonical`], `/c/users/me/...`, lower case, `/` between components.
//! That form is a rooted path on Linux and on Windows alike, so the rules
//! (joins, prefixes, globs) work on it unchanged, and the mapping is tested
//! on Linux too.
//!
//! What it cannot know: which 8.3 name a file really has (`~1` or `~2`, or
//! one set by hand, or none where the volume makes none): a short name is
//! matched against the protected paths it could stand for
//! ([`short_name_of`]); case is folded with Unicode's lower case, not
//! NTFS's own table; a volume mounted in a folder, a junction, a
//! `subst` drive or a network share that leads back to the same disk is a
//! different path to it.
//! Pure.

/// Windows' names of the command's folder (cmd's, PowerShell's), in lower
/// case: the guard reads a Windows word in lower case.
pub(crate) const CWD_NAMES: &[&str] = &["%cd%", "$(get-location)", "(get-location)", "$pwd"];

/// Windows' names of the project (the variable in cmd's and PowerShell's
/// syntax).
pub(crate) const ROOT_NAMES: &[&str] = &[
    "%claude_project_dir%",
    "${env:claude_project_dir}",
    "$env:claude_project_dir",
];

/// Windows' names of the profile folder, which Git Bash makes the home
/// folder: Git Bash's, cmd's and PowerShell's spellings.
pub(crate) const HOME_NAMES: &[&str] = &[
    "${userprofile}",
    "$userprofile",
    "%userprofile%",
    "%home%",
    "${env:userprofile}",
    "$env:userprofile",
    "${env:home}",
    "$env:home",
    "%homedrive%%homepath%",
    "${homedrive}${homepath}",
    "$homedrive$homepath",
    "$env:homedrive$env:homepath",
];

/// Does `path` read as a Windows path: a drive (`C:\`, `C:/`), a verbatim
/// or device prefix (`\\?\`, `\\.\`, `//?/`, `\??\`) or a share
/// (`\\server\share`)?
pub(crate) fn is_windows(path: &str) -> bool {
    let b = path.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    drive || path.starts_with("\\\\") || path.starts_with("//?/") || path.starts_with("\\??\\")
}

/// `word` in the one spelling the guard compares on Windows: `/` between
/// components, a drive as `/c`, lower case, a verbatim (`\\?\`), device
/// (`\\.\`) or NT (`\??\`) prefix dropped, a share on this machine
/// (`\\localhost\c$`) as its drive, trailing dots and spaces and a stream
/// (`:name`, `::$DATA`) cut from each name as Windows cuts them. A drive
/// without a folder (`C:notes.md`, the current folder of drive C) is taken
/// as relative to the command's folder. A relative word stays relative.
/// Applying it twice changes nothing.
pub(crate) fn canonical(word: &str) -> String {
    let s = word.replace('\\', "/");
    let s = strip_prefix_ci(&s, &["//?/unc/", "//./unc/", "/??/unc/"])
        .map(|rest| format!("//{rest}"))
        .or_else(|| strip_prefix_ci(&s, &["//?/", "//./", "/??/"]).map(str::to_string))
        .unwrap_or(s);
    let s = strip_prefix_ci(&s, &["/cygdrive/"])
        .map(|rest| format!("/{rest}"))
        .unwrap_or(s);
    let s = local_share(&s).unwrap_or(s);
    let s = match drive_of(&s) {
        Some((letter, rest)) if rest.starts_with('/') => format!("/{letter}{rest}"),
        Some((letter, "")) => format!("/{letter}/"),
        Some((_, rest)) => rest.to_string(),
        None => s,
    };
    let lead = if s.starts_with("//") { "//" } else { "" };
    let mut out = String::with_capacity(s.len());
    out.push_str(lead);
    let body = &s[lead.len()..];
    let parts: Vec<String> = body.split('/').map(clean_name).collect();
    out.push_str(&parts.join("/"));
    out.to_lowercase()
}

/// `name` as Windows opens it: what follows a stream's `:` cut, then the
/// trailing dots and spaces (not from `.` and `..`).
fn clean_name(name: &str) -> String {
    if name == "." || name == ".." {
        return name.to_string();
    }
    // `NAME:stream` and `NAME::$DATA` open NAME; a name that starts with
    // `:` (git's `:/`) is no stream.
    let name = match name.split_once(':') {
        Some((head, _)) if !head.is_empty() => head,
        _ => name,
    };
    let cut = name.trim_end_matches(['.', ' ']);
    if cut.is_empty() { name } else { cut }.to_string()
}

/// The drive letter (lower case) and what follows `X:`, when `s` starts
/// with one.
fn drive_of(s: &str) -> Option<(char, &str)> {
    let mut chars = s.chars();
    let letter = chars.next().filter(char::is_ascii_alphabetic)?;
    (chars.next() == Some(':')).then(|| (letter.to_ascii_lowercase(), &s[2..]))
}

/// `//localhost/c$/rest` (or `127.0.0.1`, `::1`, `.`): the drive's
/// administrative share on this machine, as `c:/rest`.
fn local_share(s: &str) -> Option<String> {
    let rest = s.strip_prefix("//")?;
    let (host, rest) = rest.split_once('/')?;
    let host = host.to_ascii_lowercase();
    if !matches!(
        host.as_str(),
        "localhost" | "127.0.0.1" | "::1" | "[::1]" | "."
    ) {
        return None;
    }
    let (share, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let b = share.as_bytes();
    (b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b'$')
        .then(|| format!("{}:/{rest}", b[0] as char))
}

fn strip_prefix_ci<'a>(s: &'a str, prefixes: &[&str]) -> Option<&'a str> {
    prefixes.iter().find_map(|p| {
        let head = s.get(..p.len())?;
        head.eq_ignore_ascii_case(p).then(|| &s[p.len()..])
    })
}

/// Does `name` look like an 8.3 short name (`RUNNER~1`, `RALPH-~1.MD`,
/// `CLAUDE~1`): at most 8 characters, a `~` and digits, an extension of
/// at most 3?
pub(crate) fn is_short_name(name: &str) -> bool {
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, Some(e)),
        _ => (name, None),
    };
    let Some((basis, digits)) = stem.rsplit_once('~') else {
        return false;
    };
    !basis.is_empty()
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && stem.len() <= 8
        && ext.is_none_or(|e| !e.is_empty() && e.len() <= 3)
}

/// Could `short` (lower case, [`is_short_name`]) be the 8.3 name Windows
/// gave `long` (lower case)? Its basis is the start of the long name's
/// stem with spaces and dots dropped and the characters an 8.3 name cannot
/// hold as `_` (or two of them and four hex digits, Windows' own when many
/// names share a start), and its extension the start of the long one's.
/// Which number (`~1`, `~2`) is not known, so any is taken.
pub(crate) fn short_name_of(short: &str, long: &str) -> bool {
    if !is_short_name(short) || short == long {
        return false;
    }
    let (s_stem, s_ext) = match short.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, e),
        _ => (short, ""),
    };
    let basis = s_stem.rsplit_once('~').map_or(s_stem, |(b, _)| b);
    let trimmed = long.trim_start_matches('.');
    let (l_stem, l_ext) = match trimmed.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, e),
        _ => (trimmed, ""),
    };
    let squeeze = |t: &str| -> String {
        t.chars()
            .filter(|c| *c != ' ' && *c != '.')
            .map(|c| {
                if c.is_ascii() && !"\"*+,/:;<=>?[\\]|".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let stem = squeeze(l_stem);
    let ext: String = squeeze(l_ext).chars().take(3).collect();
    let hashed = basis.len() == 6
        && basis[2..].bytes().all(|b| b.is_ascii_hexdigit())
        && stem.starts_with(&basis[..2]);
    (stem.starts_with(basis) || hashed) && ext == s_ext
}

/// `path` (canonical) with each 8.3 short name among its components put
/// back to the long name it may stand for, read from `known` (canonical
/// paths the guard protects, or leads to: the project, the home folder,
/// the data folder): a component is replaced when the components before
/// it are those of a known path, whose next one it could be the short name
/// of.
pub(crate) fn expand_short_names(path: &str, known: &[String]) -> String {
    if !path.contains('~') {
        return path.to_string();
    }
    let mut parts: Vec<String> = path.split('/').map(str::to_string).collect();
    for i in 0..parts.len() {
        if !is_short_name(&parts[i]) {
            continue;
        }
        let long = known.iter().find_map(|k| {
            let kp: Vec<&str> = k.split('/').collect();
            let same_start = kp.len() > i && kp[..i].iter().zip(&parts[..i]).all(|(a, b)| a == b);
            (same_start && short_name_of(&parts[i], kp[i])).then(|| kp[i].to_string())
        });
        if let Some(long) = long {
            parts[i] = long;
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_one_folder_is_one() {
        let want = "/c/users/me/.claude/ralph";
        for w in [
            r"C:\Users\me\.claude\ralph",
            "C:/Users/me/.claude/ralph",
            "c:/users/me/.claude/ralph",
            "/c/Users/me/.claude/ralph",
            "/C/USERS/ME/.CLAUDE/RALPH",
            r"\\?\C:\Users\me\.claude\ralph",
            "//?/C:/Users/me/.claude/ralph",
            r"\\.\C:\Users\me\.claude\ralph",
            r"\??\C:\Users\me\.claude\ralph",
            r"\\localhost\C$\Users\me\.claude\ralph",
            "//127.0.0.1/c$/Users/me/.claude/ralph",
            r"\\?\UNC\localhost\c$\Users\me\.claude\ralph",
            "/cygdrive/c/Users/me/.claude/ralph",
            r"C:\Users\me\.claude\ralph.",
            r"C:\Users\me\.claude\ralph. . ",
            r"C:\Users\me\.claude\ralph::$DATA",
            want,
        ] {
            assert_eq!(canonical(w), want, "{w}");
            assert_eq!(canonical(&canonical(w)), want, "twice: {w}");
        }
    }

    #[test]
    fn relative_words_and_other_places_keep_their_meaning() {
        assert_eq!(
            canonical(r".claude\ralph-loop.local.md"),
            ".claude/ralph-loop.local.md"
        );
        assert_eq!(canonical("./A/../b"), "./a/../b");
        assert_eq!(canonical("C:notes.md"), "notes.md");
        assert_eq!(canonical("C:"), "/c/");
        assert_eq!(canonical(r"D:\work"), "/d/work");
        assert_eq!(canonical(r"\\server\share\x"), "//server/share/x");
        assert_eq!(canonical(r"\\?\UNC\server\share\x"), "//server/share/x");
        assert_eq!(canonical(r"\\localhost\share\x"), "//localhost/share/x");
        assert_eq!(canonical("."), ".");
        assert_eq!(canonical(".."), "..");
        assert_eq!(canonical("~/.cache"), "~/.cache");
        assert_eq!(canonical(":/"), ":/", "git's pathspec of the whole tree");
    }

    #[test]
    fn windows_paths_are_told_from_others() {
        for w in [
            r"C:\x",
            "c:/x",
            "C:",
            r"\\?\C:\x",
            "//?/C:/x",
            r"\\srv\s",
            r"\??\C:\x",
        ] {
            assert!(is_windows(w), "{w}");
        }
        for w in ["/c/x", "/home/me", "x", "~/x", "", "1:/x", "//x"] {
            assert!(!is_windows(w), "{w}");
        }
    }

    #[test]
    fn short_names_stand_for_the_long_names_they_could_be() {
        assert!(short_name_of("runner~1", "runneradmin"));
        assert!(short_name_of("claude~1", ".claude"));
        assert!(short_name_of("ralph-~1.md", "ralph-loop.local.md"));
        assert!(short_name_of("ralph-~2.md", "ralph-loop.local.md"));
        assert!(short_name_of("ralph~12.md", "ralph-loop.local.md"));
        assert!(short_name_of("myproj~1.fol", "my proj.folder"));
        assert!(!short_name_of("myproj~1", "my proj.folder"), "no extension");
        assert!(
            short_name_of("ra1b2c~1.md", "ralph-loop.local.md"),
            "Windows' hashed form"
        );
        assert!(
            !short_name_of("ralph-~1.js", "ralph-loop.local.md"),
            "another extension"
        );
        assert!(!short_name_of("notes~1", "ralph"));
        assert!(!short_name_of("ralph", "ralph"), "not a short name");
        assert!(!is_short_name("~"));
        assert!(!is_short_name("file~"));
        assert!(!is_short_name("toolongname~1"));
        assert!(!is_short_name("a~1.text"));
    }

    #[test]
    fn short_names_are_expanded_against_the_known_paths_only() {
        let known = vec![
            "/c/users/runneradmin/.claude/ralph".to_string(),
            "/c/users/runneradmin/proj/.claude/ralph-loop.local.md".to_string(),
        ];
        assert_eq!(
            expand_short_names("/c/users/runner~1/claude~1/ralph", &known),
            "/c/users/runneradmin/.claude/ralph"
        );
        assert_eq!(
            expand_short_names("/c/users/runner~1/proj/claude~1/ralph-~1.md", &known),
            "/c/users/runneradmin/proj/.claude/ralph-loop.local.md"
        );
        assert_eq!(
            expand_short_names("/c/users/other~1/x", &known),
            "/c/users/other~1/x",
            "a short name of nothing known stays"
        );
        assert_eq!(expand_short_names("/c/x~1/y", &known), "/c/x~1/y");
    }
}
