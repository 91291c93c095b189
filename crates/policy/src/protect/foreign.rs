//! Scripts for Windows' own shells, run from Git Bash: `cmd /c "rd /s /q
//! %USERPROFILE%\.claude\ralph"`, `powershell -Command "Remove-Item …"`,
//! `pwsh -c …`. Their languages are not read here: a script that names a
//! protected path (in any spelling the guard reads, `%USERPROFILE%` and
//! `$env:USERPROFILE` among them) is taken to remove it, as a program known
//! only at run time is. Reading a loop file through them is refused too.
//! Pure.

use std::path::Path;

use super::matching::{Checker, classify};
use super::{Hit, Kind};

/// What a `cmd`, `powershell` or `pwsh` command reaches, if it names a
/// protected path.
pub(super) fn check(
    program: &str,
    args: &[String],
    cwd: Option<&Path>,
    ctx: &Checker,
) -> Option<Hit> {
    if !matches!(program, "cmd" | "powershell" | "pwsh") {
        return None;
    }
    args.iter()
        .flat_map(|a| a.split(|c: char| c.is_whitespace() || "&|;,()<>\"'".contains(c)))
        .filter(|w| !w.is_empty() && !is_switch(w))
        .find_map(|w| classify(w, Kind::Remove, cwd, ctx))
}

/// A switch of cmd's (`/c`, `//c` as Git Bash passes it, `/s`, `/q`) or
/// PowerShell's (`-Recurse`): not a path, though `/c` is drive C's in Git
/// Bash's spelling.
fn is_switch(word: &str) -> bool {
    let rest = word.trim_start_matches('/');
    word.starts_with('-')
        || (rest.len() < word.len() && rest.len() <= 3 && !rest.contains(['/', '\\']))
}
