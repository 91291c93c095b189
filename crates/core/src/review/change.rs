//! The change a reviewer sees, built from ralph's own index: a temporary
//! `GIT_INDEX_FILE` set to the base's tree, every file of the working tree
//! put in it (tracked or not; only the in-tree `.gitignore` files leave one
//! out, never `info/exclude` nor `core.excludesFile`), written as a tree and
//! diffed against the base with plumbing. The repository's index flags
//! (`assume-unchanged`, `skip-worktree`), its attributes (`binary`, diff
//! drivers), external diff, textconv and replace refs cannot hide a change
//! (`crate::git` turns them off). Does I/O (spawns git, reads files).

use super::Request;
use crate::git::{Git, GitError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most bytes of patches given to a reviewer; a file whose patch does not
/// fit is named with its size instead (`in_diff: false`).
pub const DIFF_LIMIT: usize = 120_000;
/// A file with a NUL byte in its first this many bytes is binary (git's own
/// rule, applied by ralph so that no attribute can change it).
const SNIFF_BYTES: usize = 8 * 1024;
/// An untracked file bigger than this is named, never hashed.
const HASH_LIMIT: u64 = 32 << 20;
/// Paths given to one `update-index` call.
const CHUNK: usize = 400;
/// Ignored paths that appeared during the loop, listed at most.
const MAX_IGNORED: usize = 200;

/// Every change since the base, as the request carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    pub commits: String,
    /// One line per changed file: `A path`, `M path`, `D path`, `R old -> new`.
    pub status: String,
    pub diff: String,
    pub files: Vec<ChangedFile>,
    pub ignored: Vec<IgnoredFile>,
}

/// One changed file of a review request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `modified`, `deleted`, `renamed`, `copied`, `type-changed`.
    pub status: String,
    /// A renamed or copied file's former path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Bytes in the working tree (none once deleted).
    #[serde(default)]
    pub size: Option<u64>,
    /// A NUL in its first 8 KB: named, not shown.
    #[serde(default)]
    pub binary: bool,
    /// Its patch is in `diff`.
    #[serde(default)]
    pub in_diff: bool,
}

/// An ignored path that appeared during the loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredFile {
    pub path: String,
    pub size: u64,
}

impl Request {
    /// The files not shown in the diff, and the ignored ones that appeared:
    /// lines for the prompt (empty when there are none).
    pub(crate) fn unshown_text(&self) -> String {
        let mut out = String::new();
        for f in self.files.iter().filter(|f| !f.in_diff) {
            let why = match (f.status.as_str(), f.binary) {
                ("deleted", _) => "deleted".to_string(),
                (_, true) => format!("binary, {} bytes", f.size.unwrap_or(0)),
                _ => format!(
                    "{}, {} bytes, past the diff's cap of {} bytes: read it",
                    f.status,
                    f.size.unwrap_or(0),
                    self.diff_limit
                ),
            };
            out.push_str(&format!(
                "- {} ({why})
",
                f.path
            ));
        }
        for f in &self.ignored_appeared {
            out.push_str(&format!(
                "- {} (ignored by the repository, appeared during the loop, {} bytes)\n",
                f.path, f.size
            ));
        }
        out
    }
}

/// The temporary index, removed with its lock whatever happens.
struct TempIndex(PathBuf);

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

/// The change in `root` since `base` (no base: the whole tree is new).
/// `ignored_at_start`: the ignored paths recorded at the loop's start, to
/// name the ones that appeared since. A failing git call is said in the
/// diff, never hidden.
pub fn read(root: &Path, base: Option<&str>, ignored_at_start: Option<&[String]>) -> Change {
    // Paths are the repository's: a project in a sub-folder of one is
    // reviewed with its whole repository, as `git diff` showed it.
    let root = &toplevel(root);
    let mut change = match tree_change(root, base) {
        Ok(c) => c,
        Err(e) => Change {
            diff: format!("[ralph could not read the change: {e}]"),
            ..Change::default()
        },
    };
    if let Some(base) = base {
        change.commits = Git::read(root)
            .text(&[
                "log",
                "--oneline",
                "--no-decorate",
                &format!("{base}..HEAD"),
            ])
            .unwrap_or_default();
    }
    if let Some(before) = ignored_at_start {
        change.ignored = ignored_since(root, before);
    }
    change
}

fn tree_change(root: &Path, base: Option<&str>) -> Result<Change, GitError> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let index = TempIndex(
        std::env::temp_dir().join(format!("ralph-review-index-{}-{seq}", std::process::id())),
    );
    let git = Git::read(root).with_index(&index.0);
    let base_tree = match base {
        Some(b) => format!("{b}^{{tree}}"),
        None => git.text(&["hash-object", "-t", "tree", "/dev/null"])?,
    };
    git.run(&["read-tree", &base_tree])?;
    let tracked = nul_list(&git.run(&["ls-files", "-z"])?);
    let others = nul_list(&git.run(&[
        "ls-files",
        "-z",
        "--others",
        "--exclude-per-directory=.gitignore",
    ])?);
    let (others, too_big): (Vec<String>, Vec<String>) = others
        .into_iter()
        .map(|p| p.trim_end_matches('/').to_string())
        .partition(|p| size_of(root, p).is_none_or(|s| s <= HASH_LIMIT));
    let mut unreadable = Vec::new();
    for chunk in tracked
        .iter()
        .chain(&others)
        .collect::<Vec<_>>()
        .chunks(CHUNK)
    {
        add_paths(&git, root, chunk, &mut unreadable);
    }
    let tree = git.text(&["write-tree"])?;
    let mut files = name_status(&git.run(&[
        "diff-tree",
        "-z",
        "-r",
        "-M",
        "--name-status",
        &base_tree,
        &tree,
    ])?);
    for f in &mut files {
        f.size = (f.status != "deleted")
            .then(|| size_of(root, &f.path))
            .flatten();
        f.binary = f.status != "deleted" && is_binary(&root.join(&f.path));
    }
    for path in too_big.into_iter().chain(unreadable) {
        files.push(ChangedFile {
            size: size_of(root, &path),
            path,
            status: "added".into(),
            from: None,
            binary: false,
            in_diff: false,
        });
    }
    let diff = patches(&git, &base_tree, &tree, &mut files)?;
    Ok(Change {
        status: status_lines(&files),
        diff,
        files,
        ..Change::default()
    })
}

/// Put `paths` in the index as they are in the working tree (removed when
/// gone); a path git cannot add (unreadable) is left out and kept aside.
/// Regular files are hashed as they are on disk (`--no-filters`): no
/// attribute, not even `.git/info/attributes` (`ident`, `eol`, an encoding),
/// changes what the reviewer sees. Symlinks, folders (a nested repository)
/// and removals go through `update-index`, where no conversion applies.
fn add_paths(git: &Git, root: &Path, paths: &[&String], unreadable: &mut Vec<String>) {
    let (files, others): (Vec<&String>, Vec<&String>) = paths
        .iter()
        .partition(|p| std::fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.is_file()));
    if !files.is_empty() && add_files(git, root, &files).is_err() {
        for f in &files {
            if add_files(git, root, &[f]).is_err() {
                unreadable.push((*f).clone());
            }
        }
    }
    if others.is_empty() {
        return;
    }
    let mut args = vec!["update-index", "--add", "--remove", "--"];
    args.extend(others.iter().map(|p| p.as_str()));
    if git.run(&args).is_ok() {
        return;
    }
    for p in others {
        if git
            .run(&["update-index", "--add", "--remove", "--", p])
            .is_err()
        {
            unreadable.push(p.clone());
        }
    }
}

/// Regular files, hashed unconverted and put in the index with their mode.
fn add_files(git: &Git, root: &Path, files: &[&String]) -> Result<(), GitError> {
    let mut args = vec!["hash-object", "-w", "--no-filters", "--"];
    args.extend(files.iter().map(|p| p.as_str()));
    let out = git.text(&args)?;
    let oids: Vec<&str> = out.lines().collect();
    if oids.len() != files.len() {
        return Err(GitError::Start("hash-object gave a wrong count".into()));
    }
    let mut args = vec!["update-index", "--add"];
    for (path, oid) in files.iter().zip(&oids) {
        args.extend(["--cacheinfo", mode_of(&root.join(path)), oid, path.as_str()]);
    }
    git.run(&args).map(|_| ())
}

/// A regular file's git mode: executable or not.
fn mode_of(path: &Path) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0) {
            return "100755";
        }
    }
    let _ = path;
    "100644"
}

/// `diff-tree -z --name-status` records: `S\0path\0`, `R100\0old\0new\0`.
fn name_status(out: &[u8]) -> Vec<ChangedFile> {
    let items = nul_list(out);
    let mut it = items.into_iter();
    let mut files = Vec::new();
    while let Some(code) = it.next() {
        let (status, from) = match code.chars().next() {
            Some('A') => ("added", None),
            Some('D') => ("deleted", None),
            Some('T') => ("type-changed", None),
            Some('R') => ("renamed", it.next()),
            Some('C') => ("copied", it.next()),
            _ => ("modified", None),
        };
        let Some(path) = it.next() else { break };
        files.push(ChangedFile {
            path,
            status: status.into(),
            from,
            size: None,
            binary: false,
            in_diff: false,
        });
    }
    files
}

/// The patch of every text file still there, each whole or not at all,
/// up to [`DIFF_LIMIT`]; the files left out are marked so, and named at
/// the end of the diff.
fn patches(
    git: &Git,
    base: &str,
    tree: &str,
    files: &mut [ChangedFile],
) -> Result<String, GitError> {
    let shown: Vec<usize> = (0..files.len())
        .filter(|i| !files[*i].binary && files[*i].status != "deleted")
        .collect();
    if shown.is_empty() {
        return Ok(String::new());
    }
    let mut args: Vec<String> = [
        "diff-tree",
        "-p",
        "-M",
        "--text",
        "--full-index",
        base,
        tree,
    ]
    .map(String::from)
    .to_vec();
    args.push("--".into());
    for f in shown.iter().map(|i| &files[*i]) {
        args.push(format!(":(literal){}", f.path));
        if let Some(from) = &f.from {
            args.push(format!(":(literal){from}"));
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = String::from_utf8_lossy(&git.run(&args)?).into_owned();
    let chunks = split_patches(&text);
    let mut diff = String::new();
    let mut left_out = Vec::new();
    let whole = chunks.len() == shown.len();
    for (n, i) in shown.iter().enumerate() {
        let chunk = if whole { chunks[n] } else { "" };
        if whole && diff.len() + chunk.len() <= DIFF_LIMIT {
            diff.push_str(chunk);
            files[*i].in_diff = true;
        } else {
            left_out.push(*i);
        }
    }
    if !whole {
        // Patches that cannot be told apart: as much as fits, cut.
        diff = text[..floor_char(&text, DIFF_LIMIT)].to_string();
    }
    if !left_out.is_empty() {
        diff.push_str(&format!(
            "\n[ralph: {} file(s) past the diff's cap of {DIFF_LIMIT} bytes, not shown (read them): {}]\n",
            left_out.len(),
            left_out
                .iter()
                .map(|i| &files[*i])
                .map(|f| format!("{} ({} bytes)", f.path, f.size.unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(diff)
}

/// A patch split at each `diff --git` header.
fn split_patches(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text
        .match_indices("\ndiff --git ")
        .map(|(i, _)| i + 1)
        .collect();
    if text.starts_with("diff --git ") {
        starts.insert(0, 0);
    }
    let mut out = Vec::new();
    for (n, s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(text.len());
        out.push(&text[*s..end]);
    }
    out
}

fn floor_char(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn status_lines(files: &[ChangedFile]) -> String {
    files
        .iter()
        .map(|f| {
            let code = match f.status.as_str() {
                "added" => "A",
                "deleted" => "D",
                "renamed" => "R",
                "copied" => "C",
                "type-changed" => "T",
                _ => "M",
            };
            match &f.from {
                Some(from) => format!("{code} {from} -> {}\n", f.path),
                None => format!("{code} {}\n", f.path),
            }
        })
        .collect()
}

/// The ignored paths of `root` now (directories collapsed), as recorded at
/// a loop's start: the repository's own ignore rules (every kind: these are
/// only named, never reviewed).
pub fn ignored_paths(root: &Path) -> Vec<String> {
    Git::read(&toplevel(root))
        .run(&[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ])
        .map(|o| nul_list(&o))
        .unwrap_or_default()
}

/// The top folder of the repository `root` is in (`root` itself when git
/// cannot say).
fn toplevel(root: &Path) -> PathBuf {
    Git::read(root)
        .text(&["rev-parse", "--show-toplevel"])
        .ok()
        .filter(|t| !t.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root.to_path_buf())
}

/// The ignored paths that were not there at the start, with their sizes.
fn ignored_since(root: &Path, before: &[String]) -> Vec<IgnoredFile> {
    let before: BTreeSet<&str> = before.iter().map(String::as_str).collect();
    ignored_paths(root)
        .into_iter()
        .filter(|p| !before.contains(p.as_str()) && !crate::worktree::is_ralph_file(p))
        .take(MAX_IGNORED)
        .map(|path| IgnoredFile {
            size: tree_size(&root.join(&path), 10_000),
            path,
        })
        .collect()
}

/// The bytes under `path` (a file, or a folder walked up to `budget` entries).
fn tree_size(path: &Path, budget: usize) -> u64 {
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        if seen > budget {
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                stack.extend(entries.filter_map(Result::ok).map(|e| e.path()));
            }
        } else {
            total += meta.len();
        }
    }
    total
}

fn size_of(root: &Path, path: &str) -> Option<u64> {
    std::fs::symlink_metadata(root.join(path))
        .ok()
        .map(|m| m.len())
}

/// A NUL byte in the first [`SNIFF_BYTES`] bytes (a symlink is text: its target).
fn is_binary(path: &Path) -> bool {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    std::fs::File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES as u64).read_to_end(&mut head))
        .is_ok_and(|_| head.contains(&0))
}

fn nul_list(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_reads_renames() {
        let out = b"M\0a.rs\0R087\0old.rs\0new.rs\0A\0n.txt\0D\0gone\0";
        let f = name_status(out);
        let got: Vec<(&str, &str, Option<&str>)> = f
            .iter()
            .map(|f| (f.status.as_str(), f.path.as_str(), f.from.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("modified", "a.rs", None),
                ("renamed", "new.rs", Some("old.rs")),
                ("added", "n.txt", None),
                ("deleted", "gone", None)
            ]
        );
        assert_eq!(
            status_lines(&f),
            "M a.rs\nR old.rs -> new.rs\nA n.txt\nD gone\n"
        );
    }

    #[test]
    fn patches_split_at_each_header() {
        let text = "diff --git a/x b/x\n+1\ndiff --git a/y b/y\n+2\n";
        assert_eq!(
            split_patches(text),
            ["diff --git a/x b/x\n+1\n", "diff --git a/y b/y\n+2\n"]
        );
        assert!(split_patches("").is_empty());
    }
}
