//! The loop's state file (`state.md` in the loop's folder, sealed, `seal`)
//! and its copy in the project (`.claude/ralph-loop.local.md`, the mirror):
//! read (with the seal judged and the records beside it), written, accepted,
//! moved aside, removed. A state that fails its seal (changed outside ralph)
//! is not read as the loop's: no hook acts on it or writes the loop from it
//! (which would seal it again); the Stop tells the user what changed
//! (`tamper`). Does I/O.

use crate::paths::LoopPaths;
use crate::seal::Seal;
use crate::state::{LoopState, StateError};
use crate::store::{self, StoreError};
use crate::verify::VerifyLog;
use std::path::PathBuf;

/// How the project's mirror of the state compares with the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    Same,
    Missing,
    /// Edited: not the state's text.
    Differs,
    /// A link, a folder or another file ralph does not write through.
    Unsafe,
}

impl Mirror {
    /// Someone changed the mirror since ralph wrote it.
    pub(crate) fn tampered(self) -> bool {
        self != Mirror::Same
    }
}

/// The state file, as read.
// Held once per hook call and matched at once: boxing the loop would only
// add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum StateFile {
    /// No loop.
    Missing,
    /// There, but not readable as text (not UTF-8, not a regular file, an I/O error).
    Unreadable(StoreError),
    /// Text that is not a valid loop state.
    Corrupt { text: String, error: StateError },
    Loop {
        text: String,
        // Boxed: a state is much larger than the other variants.
        state: Box<LoopState>,
    },
}

/// One read of the state file itself and its seal ([`read_own`]).
#[derive(Debug)]
pub(crate) struct OwnState {
    /// `Ok(None)`: no state file (the project's file may be there to adopt).
    /// The text before its inline seal (see `seal`): what the state is.
    pub text: Result<Option<String>, StoreError>,
    /// Its seal against that text (`Unsealed` when there is no text).
    pub seal: Seal,
    /// How the seal was judged (`None` when there is no text).
    pub judged: Option<crate::seal::Judged>,
}

impl OwnState {
    /// Where its seal is: inside and intact, its next write is one rename
    /// (no marker beside it).
    pub(crate) fn form(&self) -> crate::seal::Form {
        self.judged
            .as_ref()
            .map(crate::seal::Judged::form)
            .unwrap_or_default()
    }
}

/// One read of the loop's sealed records beside the state: the checks'
/// results and the reviewers' verdicts ([`read_records`]).
#[derive(Debug, Clone)]
pub(crate) struct OwnRecords {
    pub verify: crate::seal::SealedText,
    pub review: crate::seal::SealedText,
    /// The loop's scores (`score::history`).
    pub scores: crate::seal::SealedText,
    /// `last-injected`, sealed inside (`seal::write_inline_hint`), and
    /// where its seal was.
    pub injected: crate::seal::SealedText,
}

impl OwnRecords {
    /// The checks' results as read (none: an empty log).
    pub(crate) fn verify_log(&self) -> VerifyLog {
        self.verify
            .text
            .as_deref()
            .map(VerifyLog::parse)
            .unwrap_or_default()
    }

    /// The loop's scores as read (a record ralph did not write stopped the
    /// Stop at the tamper check: none).
    pub(crate) fn scores(&self) -> crate::score::history::History {
        crate::score::history::of_sealed(&self.scores).unwrap_or_default()
    }

    /// The generation each record's seal names (`records`; 0: none).
    pub(crate) fn generations(&self) -> crate::records::RecordGens {
        use crate::records::{LoopRecord, RecordGens};
        let at = |read: &crate::seal::SealedText| read.generation.unwrap_or(0);
        RecordGens::default()
            .with(LoopRecord::Verify, at(&self.verify))
            .with(LoopRecord::Review, at(&self.review))
            .with(LoopRecord::Scores, at(&self.scores))
    }

    /// The re-injection counter of a loop from before it moved into the
    /// state, as read, when ralph wrote it (one that failed its seal is the
    /// tamper check's, never counted).
    pub(crate) fn counter(&self) -> Option<crate::reinject::Injected> {
        (self.injected.seal != Seal::Broken)
            .then_some(self.injected.text.as_deref())
            .flatten()
            .and_then(crate::reinject::Injected::parse)
    }
}

/// The state file a save replaces, as read under the same lock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Saved<'a> {
    /// Its text (`None`: there was no state file, the loop is adopted).
    pub text: Option<&'a str>,
    /// Where its seal was ([`OwnState::form`]).
    pub form: crate::seal::Form,
}

/// The state, read and parsed: the authoritative copy, or (when there is
/// none) the project's file, to be adopted.
///
/// A state that fails its seal (changed outside ralph: `seal`) is not
/// read as the loop's: no hook acts on it or writes the loop from it
/// (which would seal it again); the Stop tells the user what changed
/// (`tamper`), and only the user resumes or cancels it.
pub fn read(paths: &LoopPaths) -> StateFile {
    state_of(paths, read_own(paths))
}
/// The state file itself (not the project's copy) and its seal, read
/// once: a Stop checks the seal, reads the state and later seals the
/// next one from this one read.
pub(crate) fn read_own(paths: &LoopPaths) -> OwnState {
    let mut text = store::read_optional(&paths.state);
    let judged = match &text {
        Ok(Some(t)) => Some(crate::seal::judge_inline(&paths.state, t)),
        _ => None,
    };
    if let (Ok(Some(t)), Some(j)) = (&mut text, &judged) {
        t.truncate(j.body_len);
    }
    let seal = judged.as_ref().map_or(Seal::Unsealed, |j| j.seal);
    OwnState { text, seal, judged }
}
/// `verify.json`, `review.json` and `last-injected`, each read once with
/// its seal: the tamper check judges the texts a Stop then uses. The
/// counter's seal is inside it: no more reads than before it was sealed.
pub(crate) fn read_records(paths: &LoopPaths) -> OwnRecords {
    let (injected, _) = crate::seal::read_inline(&paths.last_injected);
    OwnRecords {
        verify: crate::seal::read_sealed(&paths.verify),
        review: crate::seal::read_sealed(&paths.review),
        scores: crate::seal::read_sealed(&paths.scores),
        injected,
    }
}

/// The re-injection counter alone, when ralph wrote it.
pub(crate) fn read_injected(paths: &LoopPaths) -> Option<crate::reinject::Injected> {
    let (injected, _) = crate::seal::read_inline(&paths.last_injected);
    (injected.seal != Seal::Broken)
        .then_some(injected.text)
        .flatten()
        .and_then(|t| crate::reinject::Injected::parse(&t))
}

/// [`read`] from a read of the state file already made
/// (the project's file is read when there is no state file).
pub(crate) fn state_of(paths: &LoopPaths, own: OwnState) -> StateFile {
    let (found, own, seal) = match own.text {
        Ok(None) => (store::read_optional(&paths.mirror), false, Seal::Unsealed),
        other => (other, true, own.seal),
    };
    match found {
        Ok(None) => StateFile::Missing,
        Err(e) => StateFile::Unreadable(e),
        Ok(Some(text)) => match LoopState::parse(&text) {
            // One that no longer parses is corrupt, whoever wrote it.
            Ok(_) if own && seal == Seal::Broken => StateFile::Unreadable(StoreError::io(
                &paths.state,
                std::io::Error::other(
                    "changed outside ralph (its seal does not match): the loop is paused until you resume or cancel it",
                ),
            )),
            Ok(state) => StateFile::Loop {
                text,
                state: Box::new(state),
            },
            Err(error) => StateFile::Corrupt { text, error },
        },
    }
}
/// The project's mirror against the state's text `state_text` (one
/// open, not following a link, and one `fstat`).
pub(crate) fn mirror_check(paths: &LoopPaths, state_text: &str) -> Mirror {
    match store::read_plain(&paths.mirror) {
        Ok(None) => Mirror::Missing,
        Ok(Some(text)) if text == state_text => Mirror::Same,
        Err(StoreError::Unsafe { .. }) => Mirror::Unsafe,
        _ => Mirror::Differs,
    }
}
/// Write the state (sealed inside, see `seal`), then its mirror in the
/// project. The state is what counts: a mirror that cannot be written
/// (a link ralph will not write through) is returned as a note, not an
/// error.
pub(crate) fn write(paths: &LoopPaths, text: &str) -> Result<Option<StoreError>, StoreError> {
    crate::seal::write_inline(&paths.state, text)?;
    Ok(store::atomic_write(&paths.mirror, text.as_bytes()).err())
}
/// [`write`] over the state as read under the same
/// lock (`before`: what [`read_own`] found), the
/// mirror compared then (`mirror`). A steady turn renames one file: the
/// state with its seal inside; a mirror found as ralph wrote it is
/// overwritten in place (`store::overwrite_plain`: no rename), any other
/// (missing, edited, a link) is replaced by rename as before. So the
/// mirror still holds exactly the state's text after every save.
pub(crate) fn write_over(
    paths: &LoopPaths,
    text: &str,
    before: Saved<'_>,
    mirror: Mirror,
) -> Result<Option<StoreError>, StoreError> {
    crate::seal::write_inline_over(&paths.state, text, before.text, before.form)?;
    if mirror == Mirror::Same && store::overwrite_plain(&paths.mirror, text.as_bytes()).is_ok() {
        return Ok(None);
    }
    Ok(store::atomic_replace(&paths.mirror, text.as_bytes()).err())
}
/// The user accepted the state as it is (`/ralph-resume` after a
/// change outside ralph): sealed again, the mirror written from it.
pub(crate) fn accept(paths: &LoopPaths) -> Result<(), StoreError> {
    if let Some(body) = crate::seal::accept_inline(&paths.state)? {
        let _ = store::atomic_write(&paths.mirror, body.as_bytes());
    }
    Ok(())
}
/// Remove the temp files that killed writes of the state, its seal or
/// its mirror left behind (a listing of two folders: the turn's own
/// writes skip it, and a Stop runs it every [`SWEEP_EVERY`] iterations).
pub(crate) fn sweep_leftovers(paths: &LoopPaths) {
    for file in [
        &paths.state,
        &crate::seal::seal_path(&paths.state),
        &paths.mirror,
    ] {
        store::sweep_leftovers(file);
    }
}
/// The loop is over: its state and mirror go.
pub fn remove(paths: &LoopPaths) -> Result<(), StoreError> {
    // What a killed write of the last turns may have left.
    sweep_leftovers(paths);
    store::remove_if_present(&paths.state)?;
    // The text before the last, kept only to be written over next turn.
    store::remove_if_present(&store::spare_path(&paths.state))?;
    crate::seal::remove(&paths.state)?;
    // Removing a link removes the link, never its target.
    store::remove_if_present(&paths.mirror)?;
    Ok(())
}
/// A state that does not parse: kept in the project, beside the mirror,
/// as `.claude/ralph-loop.local.md.corrupt-<time>` for the user to read;
/// the mirror goes. Returns where it was kept.
pub(crate) fn move_aside(paths: &LoopPaths, unix_secs: u64) -> Result<PathBuf, StoreError> {
    if !paths.state.exists() {
        return store::move_aside(&paths.mirror, unix_secs);
    }
    let _ = store::remove_if_present(&paths.mirror);
    let _ = crate::seal::remove(&paths.state);
    let keep = store::aside_name(&paths.mirror, unix_secs);
    if let Some(dir) = keep.parent() {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    }
    // A rename across file systems fails: copy, then remove.
    if std::fs::rename(&paths.state, &keep).is_err() {
        std::fs::copy(&paths.state, &keep).map_err(|e| StoreError::io(&keep, e))?;
        store::remove_if_present(&paths.state)?;
    }
    Ok(keep)
}
/// Seconds since the state file was last written (0 when unknown).
pub(crate) fn age_secs(paths: &LoopPaths) -> u64 {
    std::fs::metadata(&paths.state)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map_or(0, |d| d.as_secs())
}
