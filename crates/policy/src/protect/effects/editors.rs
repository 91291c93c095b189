//! In-place editors: `sed -i`, `gawk -i inplace`, `perl -i`, and the
//! script-driven editors (`ed`, `ex`, `vi`): the files they change. Pure.

use crate::protect::argv::{has_opt, operands};

/// The files an in-place editor changes: none without in-place editing, and
/// without a script given by option (`-e`, `-f`) the first operand is the
/// script itself.
fn in_place_files(in_place: bool, script_given: bool, ops: Vec<String>) -> Vec<String> {
    if !in_place {
        return Vec::new();
    }
    ops.into_iter().skip(usize::from(!script_given)).collect()
}

/// What one cluster of short options of an in-place editor says (`-ni`,
/// `-pe`; given without its dash).
struct Cluster {
    /// `-i`; whatever follows it in the cluster is the backup suffix.
    in_place: bool,
    /// A script is given by option (one of the `script` letters).
    script: bool,
    /// The next word is the value of the cluster's last option.
    value_next: bool,
}

/// Read a cluster up to its first `-i` or option taking a value (one of
/// `valued`; the rest of the cluster, if any, is that value).
fn editor_cluster(cluster: &str, script: &str, valued: &str) -> Cluster {
    for (k, ch) in cluster.char_indices() {
        if ch == 'i' {
            return Cluster {
                in_place: true,
                script: false,
                value_next: false,
            };
        }
        if valued.contains(ch) {
            return Cluster {
                in_place: false,
                script: script.contains(ch),
                value_next: k + 1 == cluster.len(),
            };
        }
    }
    Cluster {
        in_place: false,
        script: false,
        value_next: false,
    }
}

/// Files `sed` edits in place (none without `-i`).
pub(super) fn sed_files(args: &[String]) -> Vec<String> {
    let mut in_place = false;
    let mut script_given = false;
    let mut ops = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = args[i].as_str();
        if only_operands || !a.starts_with('-') || a == "-" {
            ops.push(args[i].clone());
        } else if a == "--" {
            only_operands = true;
        } else if let Some(l) = a.strip_prefix("--") {
            if l == "in-place" || l.starts_with("in-place=") {
                in_place = true;
            } else if l == "expression" || l == "file" {
                script_given = true;
                i += 1;
            } else if l.starts_with("expression=") || l.starts_with("file=") {
                script_given = true;
            }
        } else {
            let c = editor_cluster(&a[1..], "ef", "efl");
            in_place |= c.in_place;
            script_given |= c.script;
            i += usize::from(c.value_next);
        }
        i += 1;
    }
    in_place_files(in_place, script_given, ops)
}

/// Files `gawk -i inplace` edits in place (none without it).
pub(super) fn awk_inplace_files(args: &[String]) -> Vec<String> {
    let (ops, opts) = operands(
        args,
        "fvFilEe",
        &[
            "--file",
            "--assign",
            "--field-separator",
            "--include",
            "--load",
            "--exec",
            "--source",
        ],
    );
    let in_place = opts.iter().any(|(k, v)| {
        matches!(k.as_str(), "-i" | "--include") && v.trim_end_matches(".awk") == "inplace"
    });
    // Without -f/-e/--source the first operand is the program text.
    let program_given = has_opt(&opts, &["-f", "--file", "-e", "--source", "-E", "--exec"]);
    in_place_files(in_place, program_given, ops)
}

/// Files `perl -i` edits in place.
pub(super) fn perl_files(args: &[String]) -> Vec<String> {
    let mut in_place = false;
    let mut script_given = false;
    let mut ops = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a.starts_with('-') && a.len() > 1 && ops.is_empty() {
            let c = editor_cluster(&a[1..], "eE", "eE");
            in_place |= c.in_place;
            script_given |= c.script;
            i += usize::from(c.value_next);
        } else {
            ops.push(args[i].clone());
        }
        i += 1;
    }
    in_place_files(in_place, script_given, ops)
}

/// Script-driven editors (there is no terminal for an interactive one):
/// any file they are given may be written.
pub(super) fn script_editor_files(args: &[String]) -> Vec<String> {
    let (ops, _) = operands(args, "cSuUiTwW", &["--cmd"]);
    ops.into_iter().filter(|o| !o.starts_with('+')).collect()
}
