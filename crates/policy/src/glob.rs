//! Just enough of the shell's pathname expansion to tell whether `rm .claude/*`
//! or `rm .claude/ralph-loop.{lock,log.jsonl}` reaches a loop file: brace
//! expansion, then `*`, `?` and `[...]` per path component, with the shell's
//! rule that a leading dot is only matched by a literal dot.
//! Pure.

/// Does the word contain anything the shell would expand as a pattern?
pub(crate) fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expand `{a,b}` groups (bash does this before globbing). Bounded, since the
/// guard must stay fast on hostile input.
pub(crate) fn expand_braces(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(s, &mut out, 0);
    out
}

fn expand_into(s: &str, out: &mut Vec<String>, depth: usize) {
    if out.len() >= 64 || depth > 8 {
        out.push(s.to_string());
        return;
    }
    let Some((open, close, parts)) = first_group(s) else {
        out.push(s.to_string());
        return;
    };
    for p in parts {
        let next = format!("{}{}{}", &s[..open], p, &s[close + 1..]);
        expand_into(&next, out, depth + 1);
    }
}

/// The first `{...}` holding a top-level comma: (open, close, alternatives).
fn first_group(s: &str) -> Option<(usize, usize, Vec<&str>)> {
    let b = s.as_bytes();
    let mut search = 0;
    while let Some(rel) = s[search..].find('{') {
        let open = search + rel;
        let mut depth = 0;
        let mut commas = Vec::new();
        for (j, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if commas.is_empty() {
                            break;
                        }
                        let mut parts = Vec::new();
                        let mut from = open + 1;
                        for &c in &commas {
                            parts.push(&s[from..c]);
                            from = c + 1;
                        }
                        parts.push(&s[from..j]);
                        return Some((open, j, parts));
                    }
                }
                b',' if depth == 1 => commas.push(j),
                _ => {}
            }
        }
        search = open + 1;
    }
    None
}

/// Match one path component against one pattern component, as the shell
/// expands it: a leading dot must be matched explicitly (bash without dotglob).
pub(crate) fn match_component(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    fnmatch(pattern, name)
}

/// Plain fnmatch, as `find -name` uses it: `*` also matches a leading dot.
pub(crate) fn fnmatch(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    // Iterative matcher with single-star backtracking: linear-ish, no recursion blowup.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class(p, pi, n[ni]) {
                        if matched {
                            pi = next;
                            ni += 1;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                '\\' if pi + 1 < p.len() && p[pi + 1] == n[ni] => {
                    pi += 2;
                    ni += 1;
                    continue;
                }
                c if c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A `[...]` class at `p[start]`: (does `c` match, index after `]`), or None
/// when the bracket is not closed (then it is a literal `[`).
fn class(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_dots() {
        assert!(match_component("*", "prd.json"));
        assert!(!match_component("*", ".claude"));
        assert!(match_component(".*", ".claude"));
        assert!(match_component("ralph-loop.*", "ralph-loop.lock"));
        assert!(match_component("*.md", "ralph-loop.local.md"));
        assert!(!match_component("*.md", "ralph-loop.lock"));
        assert!(match_component("ralph-loop.l[o]ck", "ralph-loop.lock"));
        assert!(match_component("ralph-lo?p.lock", "ralph-loop.lock"));
        assert!(match_component(".c*e", ".claude"));
        assert!(!match_component("[!r]*", "ralph"));
    }

    #[test]
    fn braces() {
        assert_eq!(expand_braces("a.{x,y}"), ["a.x", "a.y"]);
        assert_eq!(expand_braces("{a,b}{1,2}").len(), 4);
        assert_eq!(expand_braces("${HOME}"), ["${HOME}"]);
    }
}
