//! `mv`, `cp`, `install`, `ln`, `link` and `rsync`: what they copy, move or
//! link onto (or into) their destination, and what they take away. Pure.

use super::{Effect, on};
use crate::protect::Kind;
use crate::protect::argv::{has_opt, operands, opt};

/// The options of `mv`, `cp`, `ln`, `install` and `rsync` that take a value.
/// `-b` / `--backup[=CONTROL]` takes none (its value only ever comes after `=`).
fn copy_spec(name: &str) -> (&'static str, &'static [&'static str]) {
    match name {
        "install" => (
            "Stmog",
            &[
                "--suffix",
                "--target-directory",
                "--mode",
                "--owner",
                "--group",
                "--strip-program",
            ],
        ),
        "cp" => (
            "St",
            &[
                "--suffix",
                "--target-directory",
                "--no-preserve",
                "--sparse",
            ],
        ),
        "rsync" => ("efBMT@", RSYNC_LONG),
        _ => ("St", &["--suffix", "--target-directory"]),
    }
}

const RSYNC_LONG: &[&str] = &[
    "--exclude",
    "--include",
    "--filter",
    "--rsh",
    "--temp-dir",
    "--compare-dest",
    "--copy-dest",
    "--link-dest",
    "--partial-dir",
    "--backup-dir",
    "--suffix",
    "--exclude-from",
    "--include-from",
    "--files-from",
    "--chmod",
    "--chown",
    "--usermap",
    "--groupmap",
    "--log-file",
    "--log-file-format",
    "--out-format",
    "--password-file",
    "--max-size",
    "--min-size",
    "--max-delete",
    "--timeout",
    "--contimeout",
    "--port",
    "--bwlimit",
    "--block-size",
    "--modify-window",
    "--rsync-path",
    "--remote-option",
    "--sockopts",
    "--iconv",
    "--checksum-choice",
    "--compress-choice",
    "--compress-level",
    "--skip-compress",
    "--write-batch",
    "--only-write-batch",
    "--read-batch",
    "--info",
    "--debug",
];

/// `mv`/`cp`/`ln`/`install`/`rsync`: destination, sources, and the options.
fn copy_like(name: &str, args: &[String]) -> CopyArgs {
    let (short, long) = copy_spec(name);
    let (ops, opts) = operands(args, short, long);
    let (dest, sources) = if let Some(t) = opt(&opts, &["-t", "--target-directory"]) {
        (Some(t.to_string()), ops)
    } else {
        match ops.split_last() {
            Some((only, [])) if name == "ln" => (Some(".".to_string()), vec![only.clone()]),
            Some((_, [])) | None => (None, Vec::new()),
            Some((dest, sources)) => (Some(dest.clone()), sources.to_vec()),
        }
    };
    CopyArgs {
        dest,
        sources,
        opts,
    }
}

struct CopyArgs {
    dest: Option<String>,
    sources: Vec<String>,
    opts: Vec<(String, String)>,
}

/// `cp`, `install`, `ln` and `rsync`: onto (or into) their destination; a
/// hard link (`ln` without `-s`, `cp -l`) gives its sources a second name.
pub(super) fn copy_effects(name: &str, args: &[String]) -> Vec<Effect> {
    if name == "install" && args.iter().any(|a| a == "-d" || a == "--directory") {
        return Vec::new();
    }
    let c = copy_like(name, args);
    let hard = match name {
        "ln" => !has_opt(&c.opts, &["-s", "--symbolic"]),
        "cp" => has_opt(&c.opts, &["-l", "--link"]),
        _ => false,
    };
    let mut out = if hard {
        on(Kind::HardLink, c.sources.clone())
    } else {
        symlinks(name, &c)
    };
    match c.dest {
        // `rsync --delete src/ dest/` empties dest of what src lacks.
        Some(dest) if name == "rsync" && c.opts.iter().any(|(k, _)| k.starts_with("--del")) => {
            out.push(Effect::On(Kind::Remove, dest));
        }
        Some(dest) => out.push(Effect::Into {
            dest,
            sources: c.sources,
        }),
        None => {}
    }
    out
}

/// The symbolic links `ln -s` and `cp -s` make: where each lands (the
/// destination itself, or the source's name inside a `-t` folder or when
/// several sources are given) and what it points to, as written. A link
/// made earlier in the same command is followed by the writes after it
/// (`ln -s ../../.. up && echo x >> up/src/lib.rs`). A single destination is
/// taken as the link's own name (`ln -s A B`): whether B is an existing
/// folder is known only on disk, and taking it as the link errs towards
/// judging the write as going where the link points.
fn symlinks(name: &str, c: &CopyArgs) -> Vec<Effect> {
    let symbolic = match name {
        "ln" => has_opt(&c.opts, &["-s", "--symbolic"]),
        "cp" => has_opt(&c.opts, &["-s", "--symbolic-link"]),
        _ => false,
    };
    let Some(dest) = c.dest.as_deref().filter(|_| symbolic) else {
        return Vec::new();
    };
    let into_folder = opt(&c.opts, &["-t", "--target-directory"]).is_some()
        || c.sources.len() > 1
        || dest.ends_with('/');
    // `ln -r`: the target is read from the command's folder, not the link's.
    let from_cwd = name == "ln" && has_opt(&c.opts, &["-r", "--relative"]);
    c.sources
        .iter()
        .map(|source| {
            let link = if into_folder {
                let base = source
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or(source);
                format!("{}/{base}", dest.trim_end_matches('/'))
            } else {
                dest.to_string()
            };
            Effect::Symlink {
                link,
                target: source.clone(),
                from_cwd,
            }
        })
        .collect()
}

/// `mv SOURCE... DEST`: the sources go away, and land on (or in) DEST.
pub(super) fn mv_effects(args: &[String]) -> Vec<Effect> {
    let c = copy_like("mv", args);
    let mut out = on(Kind::Remove, c.sources.clone());
    if let Some(dest) = c.dest {
        out.push(Effect::Into {
            dest,
            sources: c.sources,
        });
    }
    out
}

/// `link FILE1 FILE2`: a hard link, like `ln` without options.
pub(super) fn link_effects(args: &[String]) -> Vec<Effect> {
    let ops = operands(args, "", &[]).0;
    let mut out = on(Kind::HardLink, ops.iter().take(1).cloned().collect());
    out.extend(ops.get(1).map(|d| Effect::On(Kind::Onto, d.clone())));
    out
}
