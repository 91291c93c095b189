//! Reading a command's arguments the way its getopt does: which options
//! take a value (short letters, long names and their unique abbreviations),
//! clusters of short options, `--` and `-`. Shared by the wrapper table
//! ([`super::wrappers`]), the per-program table ([`super::effects`]) and the
//! loop-control commands ([`super::control`]). Pure.

/// Which options of a wrapper take a value: short letters, long names
/// (given as `--name`; a unique abbreviation counts, as getopt_long allows).
pub(super) struct Spec {
    pub(super) short: &'static str,
    pub(super) long: &'static [&'static str],
}

pub(super) const NO_OPTS: Spec = Spec {
    short: "",
    long: &[],
};

/// A wrapper's options, read up to the first operand: (index of that operand, options as
/// (name, value)). `--` ends the options; `-` alone is an operand.
pub(super) fn leading_opts(
    words: &[String],
    mut i: usize,
    spec: &Spec,
) -> (usize, Vec<(String, String)>) {
    let mut opts = Vec::new();
    while i < words.len() {
        let a = words[i].as_str();
        if a == "--" {
            return (i + 1, opts);
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if let Some(l) = a.strip_prefix("--") {
            if let Some((k, v)) = l.split_once('=') {
                opts.push((long_name(&format!("--{k}"), spec.long), v.to_string()));
            } else if let Some(name) = long_with_value(a, spec.long) {
                opts.push((
                    name.to_string(),
                    words.get(i + 1).cloned().unwrap_or_default(),
                ));
                i += 1;
            } else {
                opts.push((a.to_string(), String::new()));
            }
        } else {
            i += short_cluster(&a[1..], words.get(i + 1), spec.short, &mut opts);
        }
        i += 1;
    }
    (i, opts)
}

/// Read one cluster of short options (`-vk5`, `-sfb`): each letter is an
/// option; the first one taking a value takes the rest of the cluster, or the
/// next word. Returns how many extra words were used (0 or 1).
pub(super) fn short_cluster(
    cluster: &str,
    next: Option<&String>,
    with_value: &str,
    opts: &mut Vec<(String, String)>,
) -> usize {
    for (k, ch) in cluster.char_indices() {
        if with_value.contains(ch) {
            let rest = &cluster[k + ch.len_utf8()..];
            if rest.is_empty() {
                opts.push((format!("-{ch}"), next.cloned().unwrap_or_default()));
                return 1;
            }
            opts.push((format!("-{ch}"), rest.to_string()));
            return 0;
        }
        opts.push((format!("-{ch}"), String::new()));
    }
    0
}

/// The long option `a` (`--name`, no `=`) when it takes a value: exactly one
/// of `long`, or a unique abbreviation of one (`--target` for
/// `--target-directory`).
pub(super) fn long_with_value<'a>(a: &str, long: &[&'a str]) -> Option<&'a str> {
    if let Some(exact) = long.iter().find(|l| **l == a) {
        return Some(exact);
    }
    if a.len() < 4 {
        return None;
    }
    let mut found = long.iter().filter(|l| l.starts_with(a));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// The full name of a long option given with `=` (abbreviations expanded).
pub(super) fn long_name(a: &str, long: &[&str]) -> String {
    long_with_value(a, long).unwrap_or(a).to_string()
}

/// Split arguments into operands and option values, GNU style (options may
/// follow operands; `--` ends them). `short` lists the short options taking a
/// value, `long` the long ones (given as `--name`; a unique abbreviation
/// counts). A cluster of short options (`-sfb`) is read letter by letter.
pub(super) fn operands(
    args: &[String],
    short: &str,
    long: &[&str],
) -> (Vec<String>, Vec<(String, String)>) {
    let mut ops = Vec::new();
    let mut opts = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = &args[i];
        if only_operands || !a.starts_with('-') || a == "-" {
            ops.push(a.clone());
        } else if a == "--" {
            only_operands = true;
        } else if let Some(l) = a.strip_prefix("--") {
            if let Some((k, v)) = l.split_once('=') {
                opts.push((long_name(&format!("--{k}"), long), v.to_string()));
            } else if let Some(name) = long_with_value(a, long) {
                opts.push((
                    name.to_string(),
                    args.get(i + 1).cloned().unwrap_or_default(),
                ));
                i += 1;
            } else {
                opts.push((a.clone(), String::new()));
            }
        } else {
            i += short_cluster(&a[1..], args.get(i + 1), short, &mut opts);
        }
        i += 1;
    }
    (ops, opts)
}

/// The value of the first of `names` given.
pub(super) fn opt<'a>(opts: &'a [(String, String)], names: &[&str]) -> Option<&'a str> {
    opts.iter()
        .find(|(k, _)| names.contains(&k.as_str()))
        .map(|(_, v)| v.as_str())
}

/// One of `names` is given.
pub(super) fn has_opt(opts: &[(String, String)], names: &[&str]) -> bool {
    opts.iter().any(|(k, _)| names.contains(&k.as_str()))
}
