//! Archives and patches: `tar`, `unzip` and `patch`, which write into a
//! folder or onto the files they name. Pure.

use super::Effect;
use crate::protect::Kind;
use crate::protect::argv::{has_opt, operands, opt};

/// `tar -x` writes into its folder (`-C`, `--directory`); `tar -c` writes
/// its archive (`-f`).
pub(super) fn tar_effects(args: &[String]) -> Vec<Effect> {
    // An old-style first word without a dash (`tar xf a.tar`) is a cluster.
    let mut args = args.to_vec();
    if let Some(first) = args.first_mut()
        && !first.starts_with('-')
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        *first = format!("-{first}");
    }
    let (_, opts) = operands(
        &args,
        "fCbHKLNTVXg",
        &[
            "--file",
            "--directory",
            "--exclude",
            "--files-from",
            "--transform",
            "--strip-components",
        ],
    );
    let extract = has_opt(&opts, &["-x", "--extract", "--get"]);
    let create = has_opt(
        &opts,
        &["-c", "--create", "-r", "--append", "-u", "--update"],
    );
    let dir = opts
        .iter()
        .filter(|(k, _)| k == "-C" || k == "--directory")
        .map(|(_, v)| v.clone())
        .next_back();
    let mut out = Vec::new();
    if extract {
        out.push(Effect::On(
            Kind::WriteBelowRoot,
            dir.clone().unwrap_or_else(|| ".".into()),
        ));
    }
    if create && let Some(f) = opt(&opts, &["-f", "--file"]).filter(|f| *f != "-") {
        out.push(Effect::On(Kind::Onto, f.to_string()));
    }
    out
}

/// A path relative to `dir` (`patch -d DIR FILE`).
fn join_dir(dir: &str, p: &str) -> String {
    if dir == "." || p.starts_with('/') {
        p.to_string()
    } else {
        format!("{dir}/{p}")
    }
}

/// `unzip ARCHIVE [-d DIR]` writes into DIR (listing and testing do not).
pub(super) fn unzip_effects(args: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(args, "dxP", &[]);
    let dir = opt(&opts, &["-d"]).map_or_else(|| ".".to_string(), str::to_string);
    if has_opt(&opts, &["-l", "-t", "-v", "-Z"]) || ops.is_empty() {
        Vec::new()
    } else {
        vec![Effect::On(Kind::WriteBelowRoot, dir)]
    }
}

/// `patch [-d DIR] [FILE] [-o OUT]`: the file it patches (else whatever the
/// patch names, below its folder) and its output.
pub(super) fn patch_effects(args: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(
        args,
        "dipBoDrVYzFg",
        &["--directory", "--input", "--output", "--reject-file"],
    );
    if has_opt(&opts, &["--dry-run"]) {
        return Vec::new();
    }
    let dir = opt(&opts, &["-d", "--directory"]).unwrap_or(".");
    let mut out: Vec<Effect> = ops
        .into_iter()
        .take(1)
        .map(|f| Effect::On(Kind::Write, join_dir(dir, &f)))
        .collect();
    out.extend(opt(&opts, &["-o", "--output"]).map(|o| Effect::On(Kind::Write, o.to_string())));
    if out.is_empty() {
        out.push(Effect::On(Kind::WriteBelowRoot, dir.to_string()));
    }
    out
}
