//! Seals: did ralph write this file of the loop's folder? I/O.
//!
//! The state (`state.md`) carries its seal inside, as its last line
//! (`<!-- ralph-seal DIGEST -->`, the digest of everything before it), so
//! the one rename that writes the state writes its seal: a Stop replaces one
//! file, not two, and a write cut short can no longer leave a file and a
//! seal from two different writes (the old and the new text each carry
//! their own). Beside it, `state.md.seal` then holds no digest of the new
//! text ([`INLINE_MARKER`], and the digest of the text it replaced while
//! that write is under way): a state that lost its last line (a program
//! rewrote the whole file) matches nothing there and is tampering, as it
//! was when the seal lived beside the file. A loop started before this
//! form has a `state.md.seal` of digests (below): it is judged by it, and
//! its next write is in the new form.
//!
//! Beside each other file it alone writes there (`verify.json`,
//! `review.json`, the pins' manifest, git's configuration cache), ralph
//! keeps `<file>.seal`: the digest of what it wrote (and of what was there
//! before, so that a write cut short between the seal and the file is not
//! taken for tampering); those are not written on a steady turn.
//!
//! The loop's records (`verify.json`, `review.json`, `scores.json`, the
//! suite's record) carry a generation in their seal (`g:N`), and the state
//! holds the generation of each one's last write (`state::RecordGens`): a
//! record deleted mid-loop, or an older copy put back with its older seal,
//! is told from ralph's last write (`tamper`).
//!
//! A Stop reads the file and its seal together; a file that matches neither
//! digest was written by someone else (an interpreter run by the agent: the
//! guard keeps the folder from its tools), and the loop pauses, naming the
//! file and what changed, instead of trusting it or rewriting the project's
//! copy from it.
//!
//! The limit: the digest is not keyed (a key would have to be kept where a
//! program with the user's rights could read it too), so a program that
//! knows this scheme can rewrite a file and its seal together.

use crate::store::{self, StoreError};
use std::path::{Path, PathBuf};

/// What a file's seal says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// ralph wrote it as it is.
    Intact,
    /// No seal: a loop started before seals, or a file ralph never wrote.
    Unsealed,
    /// Changed since ralph wrote it.
    Broken,
}

/// The seal's path: `<file>.seal`.
pub fn seal_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".seal");
    PathBuf::from(name)
}

/// FNV-1a 64 and the length: a change of any byte shows.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}:{}", bytes.len())
}

/// Write `contents` to `file` atomically, sealed: the seal first (naming
/// the new digest and the one before), then the file.
pub fn write(file: &Path, contents: &[u8]) -> Result<(), StoreError> {
    write_generation(file, contents, None)
}

/// [`write`] of one of the loop's records, at generation `generation` (the state
/// then holds it: see the module's top).
pub(crate) fn write_record(
    file: &Path,
    contents: &[u8],
    generation: u64,
) -> Result<(), StoreError> {
    write_generation(file, contents, Some(generation))
}

fn write_generation(
    file: &Path,
    contents: &[u8],
    generation: Option<u64>,
) -> Result<(), StoreError> {
    store::sweep_leftovers(file);
    store::sweep_leftovers(&seal_path(file));
    let before = store::read_optional(file).ok().flatten();
    write_over(file, contents, before.as_deref(), generation)
}

/// [`write`], when the caller read the file under the same lock: `before`
/// is its text then (`None`: there was none), so it is not read again. No
/// sweep of leftover temp files (see `store::atomic_replace`).
pub(crate) fn write_over(
    file: &Path,
    contents: &[u8],
    before: Option<&str>,
    generation: Option<u64>,
) -> Result<(), StoreError> {
    let before = before.map(|t| digest(t.as_bytes())).unwrap_or_default();
    let generation = generation
        .map(|g| format!(" {GEN_PREFIX}{g}"))
        .unwrap_or_default();
    let seal = format!("{} {before}{generation}\n", digest(contents));
    store::atomic_replace(&seal_path(file), seal.as_bytes())?;
    store::atomic_replace(file, contents)
}

/// Where a seal names its record's generation: `g:7`.
const GEN_PREFIX: &str = "g:";

/// The generation a seal's text names (`None`: none, a file from before).
fn generation_in(seal: &str) -> Option<u64> {
    seal.split_whitespace()
        .find_map(|w| w.strip_prefix(GEN_PREFIX))
        .and_then(|g| g.parse().ok())
}

/// Seal `file` as it is now (the user accepted it: `/ralph-resume`).
pub(crate) fn accept(file: &Path) -> Result<(), StoreError> {
    match store::read_optional(file)? {
        Some(text) => {
            let seal = format!("{} \n", digest(text.as_bytes()));
            store::atomic_write(&seal_path(file), seal.as_bytes())
        }
        None => remove(file),
    }
}

/// The file is gone: its seal goes too.
pub(crate) fn remove(file: &Path) -> Result<(), StoreError> {
    store::remove_if_present(&seal_path(file)).map(|_| ())
}

/// `text`, as read from `file`, against its seal.
pub(crate) fn check(file: &Path, text: &str) -> Seal {
    check_with_generation(file, text).0
}

/// [`check`], with the generation the seal names.
fn check_with_generation(file: &Path, text: &str) -> (Seal, Option<u64>) {
    match store::read_optional(&seal_path(file)) {
        Ok(Some(seal)) => (judge(&seal, text), generation_in(&seal)),
        Ok(None) => (Seal::Unsealed, None),
        Err(_) => (Seal::Broken, None),
    }
}

/// A sealed record read once: its text and its seal's verdict on that very
/// text. What is judged is what is used: a second read could see a file
/// swapped in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SealedText {
    /// `None`: not there, or unreadable (then `seal` is `Broken`).
    pub text: Option<String>,
    /// `Intact` when there is nothing to check.
    pub seal: Seal,
    /// The generation its seal names (a record's: [`write_record`]).
    pub generation: Option<u64>,
}

/// Read `file` and judge it by its seal ([`check_file`], keeping the text).
pub(crate) fn read_sealed(file: &Path) -> SealedText {
    match store::read_optional(file) {
        Ok(Some(text)) => {
            let (seal, generation) = check_with_generation(file, &text);
            SealedText {
                seal,
                generation,
                text: Some(text),
            }
        }
        Ok(None) => SealedText {
            text: None,
            seal: Seal::Intact,
            generation: None,
        },
        Err(_) => SealedText {
            text: None,
            seal: Seal::Broken,
            generation: None,
        },
    }
}

/// The rule: the text is one of the digests the seal names.
fn judge(seal: &str, text: &str) -> Seal {
    let d = digest(text.as_bytes());
    if seal.split_whitespace().any(|s| s == d) {
        Seal::Intact
    } else {
        Seal::Broken
    }
}

/// The last line of a state sealed inside: this, the digest, [`INLINE_END`].
const INLINE_START: &str = "\n<!-- ralph-seal ";
const INLINE_END: &str = " -->\n";

/// What `<file>.seal` holds beside a file sealed inside: no digest, so a
/// text that lost its inline seal matches nothing.
pub(crate) const INLINE_MARKER: &str = "inline";

/// `body` with its seal as the last line: what ralph writes as the state.
pub(crate) fn sealed(body: &str) -> String {
    let d = digest(body.as_bytes());
    let mut out = String::with_capacity(body.len() + INLINE_START.len() + d.len() + 5);
    out.push_str(body);
    out.push_str(INLINE_START);
    out.push_str(&d);
    out.push_str(INLINE_END);
    out
}

/// A state file's text split at its inline seal: the text before it and
/// the digest it names (`None`: no seal line, a file of the older form).
pub fn split_inline(text: &str) -> (&str, Option<&str>) {
    let Some(head) = text.strip_suffix(INLINE_END) else {
        return (text, None);
    };
    match head.rfind(INLINE_START) {
        Some(at) if !head[at + INLINE_START.len()..].contains('\n') => {
            (&text[..at], Some(&head[at + INLINE_START.len()..]))
        }
        _ => (text, None),
    }
}

/// Where a state file's seal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// Its last line, intact: the next write is one rename.
    Inside,
    /// Beside it (`<file>.seal`, a loop from before), or none, or broken:
    /// the next write puts the marker beside it first.
    #[default]
    Beside,
}

/// A state file as read, judged: what counts is `body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub seal: Seal,
    /// Where the text before the inline seal ends (the whole text when
    /// there is none).
    pub body_len: usize,
    /// The digest its inline seal names, whether or not the text matches.
    pub inline: Option<String>,
}

impl Judged {
    /// The text is in the inline form and intact: the next write needs no
    /// marker beside it.
    pub(crate) fn inline_intact(&self) -> bool {
        self.inline.is_some() && self.seal == Seal::Intact
    }

    /// [`Judged::inline_intact`] as the [`Form`] the next write starts from.
    pub fn form(&self) -> Form {
        if self.inline_intact() {
            Form::Inside
        } else {
            Form::Beside
        }
    }

    /// Was `text` the body ralph sealed last (the project's copy, say)?
    pub(crate) fn sealed_as(&self, file: &Path, text: &str) -> bool {
        match &self.inline {
            Some(d) => *d == digest(text.as_bytes()),
            None => check(file, text) == Seal::Intact,
        }
    }
}

/// The state `text` read from `file`, against its inline seal, else (the
/// older form, or a seal line that does not match) `<file>.seal`. The
/// steady case (an intact inline seal) reads nothing more.
pub(crate) fn judge_inline(file: &Path, text: &str) -> Judged {
    let (body, inline) = split_inline(text);
    let body_len = body.len();
    let inline = inline.map(str::to_string);
    if inline.as_deref() == Some(digest(body.as_bytes()).as_str()) {
        return Judged {
            seal: Seal::Intact,
            body_len,
            inline,
        };
    }
    let seal = match (check(file, text), &inline) {
        // An older loop's text whose prompt happens to end in such a line.
        (Seal::Intact, Some(_)) => {
            return Judged {
                seal: Seal::Intact,
                body_len: text.len(),
                inline: None,
            };
        }
        (Seal::Unsealed, Some(_)) => Seal::Broken,
        (seal, _) => seal,
    };
    Judged {
        seal,
        body_len,
        inline,
    }
}

/// Write the state `body` to `file`, sealed inside, with one rename.
/// `before`: the body there now as read under the same lock (`None`: no
/// state file), and whether it was already in the inline form; when it was
/// not, the marker beside it is written first, naming the text it replaces,
/// so a write cut short between the two leaves an intact older text.
pub(crate) fn write_inline_over(
    file: &Path,
    body: &str,
    before: Option<&str>,
    form: Form,
) -> Result<(), StoreError> {
    if form == Form::Beside {
        let before = before.map(|t| digest(t.as_bytes())).unwrap_or_default();
        let marker = format!("{INLINE_MARKER} {before}\n");
        store::atomic_replace(&seal_path(file), marker.as_bytes())?;
    }
    // Every Stop writes this: an exchange with a spare, not a rename over
    // the old file (ext4 flushes on that: see `store::exchange_replace`).
    store::exchange_replace(file, sealed(body).as_bytes())
}

/// Write a small record (`last-injected`) sealed inside, in place (no
/// rename: `store::overwrite_hint`, what it cost before it was sealed).
/// `form`: where its seal was as read under the same lock; when it was not
/// inside and intact (a new loop, a loop from before, an accepted file), the
/// marker beside it is written first, so a text without its seal line
/// matches nothing from then on.
#[cfg(test)]
pub(crate) fn write_inline_hint(file: &Path, body: &str, form: Form) -> Result<(), StoreError> {
    if form == Form::Beside {
        let marker = format!("{INLINE_MARKER} \n");
        store::atomic_replace(&seal_path(file), marker.as_bytes())?;
    }
    store::overwrite_hint(file, sealed(body).as_bytes())
}

/// A small record sealed inside ([`write_inline_hint`]), read and judged:
/// its body (the text before the seal line), the verdict, and where the
/// seal was. One read when the seal inside is intact.
pub(crate) fn read_inline(file: &Path) -> (SealedText, Form) {
    match store::read_optional(file) {
        Ok(Some(text)) => {
            let judged = judge_inline(file, &text);
            let body = text[..judged.body_len].to_string();
            let read = SealedText {
                text: Some(body),
                seal: judged.seal,
                generation: None,
            };
            (read, judged.form())
        }
        Ok(None) => (
            SealedText {
                text: None,
                seal: Seal::Intact,
                generation: None,
            },
            Form::Beside,
        ),
        Err(_) => (
            SealedText {
                text: None,
                seal: Seal::Broken,
                generation: None,
            },
            Form::Beside,
        ),
    }
}

/// [`write_inline_over`] when nothing was read under the lock: the file is
/// read for its form, and leftover temp files are swept.
pub(crate) fn write_inline(file: &Path, body: &str) -> Result<(), StoreError> {
    store::sweep_leftovers(file);
    store::sweep_leftovers(&seal_path(file));
    let text = store::read_optional(file).ok().flatten();
    let judged = text.as_deref().map(|t| judge_inline(file, t));
    let before = text
        .as_deref()
        .zip(judged.as_ref())
        .map(|(t, j)| &t[..j.body_len]);
    let form = judged.as_ref().map(Judged::form).unwrap_or_default();
    write_inline_over(file, body, before, form)
}

/// The user accepted the state as it is now (`/ralph-resume`): sealed
/// again, in the inline form; its body returned (`None`: no state).
pub(crate) fn accept_inline(file: &Path) -> Result<Option<String>, StoreError> {
    let Some(text) = store::read_optional(file)? else {
        remove(file)?;
        return Ok(None);
    };
    let body = split_inline(&text).0.to_string();
    store::atomic_write(
        &seal_path(file),
        format!("{INLINE_MARKER} {}\n", digest(text.as_bytes())).as_bytes(),
    )?;
    store::atomic_write(file, sealed(&body).as_bytes())?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ralphs_writes_are_intact_anyone_elses_are_broken() {
        let d = std::env::temp_dir().join(format!("ralph-seal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("state.md");
        assert_eq!(read_sealed(&f).seal, Seal::Intact, "nothing there");
        std::fs::write(&f, "old").unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Unsealed);
        write(&f, b"iteration: 2").unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Intact);
        std::fs::write(&f, "iteration: 1").unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Broken);
        // A write cut short after the seal: the file before still counts.
        write(&f, b"iteration: 3").unwrap();
        std::fs::write(&f, "iteration: 3").unwrap();
        let seal = std::fs::read_to_string(seal_path(&f)).unwrap();
        let prev = format!("{} {}\n", digest(b"iteration: 4"), digest(b"iteration: 3"));
        std::fs::write(seal_path(&f), &prev).unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Intact, "{seal}");
        accept(&f).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&f, "x").unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Broken);
        accept(&f).unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Intact);
        remove(&f).unwrap();
        assert_eq!(read_sealed(&f).seal, Seal::Unsealed);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_counter_sealed_inside_is_written_in_place_and_a_forged_one_is_broken() {
        let d = folder("hint");
        let f = d.join("last-injected");
        // From before seals: no marker, no seal line: read as it is.
        std::fs::write(&f, "US-1 2\n").unwrap();
        let (read, form) = read_inline(&f);
        assert_eq!((read.seal, form), (Seal::Unsealed, Form::Beside));
        write_inline_hint(&f, "US-1 3\n", form).unwrap();
        let (read, form) = read_inline(&f);
        assert_eq!((read.seal, form), (Seal::Intact, Form::Inside));
        assert_eq!(read.text.as_deref(), Some("US-1 3\n"));
        write_inline_hint(&f, "US-10 1\n", form).unwrap();
        assert_eq!(read_inline(&f).0.text.as_deref(), Some("US-10 1\n"));
        // An interpreter writes the counter: with or without a seal line of
        // its own, it matches nothing.
        std::fs::write(&f, "US-10 5\n").unwrap();
        assert_eq!(read_inline(&f).0.seal, Seal::Broken);
        std::fs::write(&f, sealed("US-10 5\n").replace("US-10 5", "US-10 4")).unwrap();
        assert_eq!(read_inline(&f).0.seal, Seal::Broken);
        // Accepted by the user: intact again.
        accept_inline(&f).unwrap();
        assert_eq!(read_inline(&f).0.seal, Seal::Intact);
        let _ = std::fs::remove_dir_all(&d);
    }

    fn folder(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ralph-seal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const BODY: &str = "---\niteration: 2\n---\n\nBuild it.\n";

    #[test]
    fn a_state_sealed_inside_is_intact_and_one_changed_is_broken() {
        let d = folder("inline");
        let f = d.join("state.md");
        write_inline(&f, BODY).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with(BODY) && text.ends_with(" -->\n"), "{text}");
        let j = judge_inline(&f, &text);
        assert_eq!((j.seal, &text[..j.body_len]), (Seal::Intact, BODY));
        assert!(j.inline_intact() && j.sealed_as(&f, BODY));
        // The body edited, the seal line kept.
        let edited = text.replace("iteration: 2", "iteration: 1");
        assert_eq!(judge_inline(&f, &edited).seal, Seal::Broken);
        // The whole file rewritten without its seal line: the marker beside
        // it names no digest of it.
        assert_eq!(judge_inline(&f, BODY).seal, Seal::Broken);
        // A seal line of someone else's making, with no marker: broken too.
        remove(&f).unwrap();
        assert_eq!(judge_inline(&f, &edited).seal, Seal::Broken);
        // Nothing at all beside a file without a seal line: a loop from
        // before seals.
        assert_eq!(judge_inline(&f, BODY).seal, Seal::Unsealed);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_write_cut_short_leaves_an_intact_state() {
        let d = folder("cut");
        let f = d.join("state.md");
        // An older loop: the text and a separate seal of digests.
        write(&f, BODY.as_bytes()).unwrap();
        assert_eq!(
            judge_inline(&f, BODY).seal,
            Seal::Intact,
            "the old seal is read"
        );
        // Its first write in the new form, cut short after the marker: the
        // text before is still intact by the marker's second digest.
        let marker = format!("{INLINE_MARKER} {}\n", digest(BODY.as_bytes()));
        std::fs::write(seal_path(&f), marker).unwrap();
        let j = judge_inline(&f, BODY);
        assert_eq!(j.seal, Seal::Intact);
        assert!(!j.inline_intact(), "the next write writes the marker again");
        // The write done: the new form, one file.
        let next = BODY.replace("iteration: 2", "iteration: 3");
        write_inline_over(&f, &next, Some(BODY), Form::Beside).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        let j = judge_inline(&f, &text);
        assert_eq!((j.seal, &text[..j.body_len]), (Seal::Intact, next.as_str()));
        // From now on one rename a write; the old text no longer counts.
        write_inline_over(&f, BODY, Some(&next), Form::Inside).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(judge_inline(&f, &text).inline_intact());
        assert_eq!(judge_inline(&f, &next).seal, Seal::Broken);
        // A file cut anywhere (a torn copy, not ralph's rename) is broken.
        for cut in [text.len() - 3, BODY.len() + 4, 10] {
            assert_eq!(judge_inline(&f, &text[..cut]).seal, Seal::Broken, "{cut}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_older_loop_whose_prompt_ends_like_a_seal_line_keeps_its_seal() {
        let d = folder("lookalike");
        let f = d.join("state.md");
        let text = format!("{BODY}\n<!-- ralph-seal 0:1 -->\n");
        write(&f, text.as_bytes()).unwrap();
        let j = judge_inline(&f, &text);
        assert_eq!((j.seal, j.body_len), (Seal::Intact, text.len()));
        // Accepted by the user: sealed inside, the body kept whole.
        std::fs::write(&f, "---\niteration: 9\n---\n\nx\n").unwrap();
        let body = accept_inline(&f).unwrap().unwrap();
        let now = std::fs::read_to_string(&f).unwrap();
        assert_eq!(&now[..judge_inline(&f, &now).body_len], body);
        assert!(judge_inline(&f, &now).inline_intact());
        let _ = std::fs::remove_dir_all(&d);
    }
}
