//! `ralph merge`: story branches into the loop's branch checked out here,
//! one at a time, on the `--parallel` merge queue's rules
//! (`ci::merge_queue::Base::merge`): the check and the pinned files come from
//! the base, never from the branch; a conflict or a failing check sends the
//! story back; a change to the PRD, a pinned file, the workflows or ralph's
//! configuration is refused. Thin: finds the branches, prints the report.

use clap::Args;
use ralph_core::ci::merge::{
    EXIT_USAGE, Merge, MergeReport, MergeResult, SendBack, order, story_of_branch,
};
use ralph_core::ci::merge_queue::{Base, dirty};
use ralph_core::ci::story::{Ended, StoryResult};
use ralph_core::paths::project_root_from_env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub(crate) struct MergeArgs {
    /// The PRD, as committed on the branch checked out (the loop's)
    #[arg(long, value_name = "PATH", default_value = "prd.json")]
    prd_file: String,
    /// Merge the stories whose `ralph run --story --result` files (any *.json under DIR) say done
    #[arg(long, value_name = "DIR")]
    from_results: Option<PathBuf>,
    /// How long one story's check may run, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    check_timeout: u64,
    /// Print the report as JSON (else a table)
    #[arg(long)]
    json: bool,
    /// Also append the table to FILE (e.g. "$GITHUB_STEP_SUMMARY")
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Merge nothing: check that BASE..TIP (on the first-parent chain) is ralph's merges of
    /// story branches and its passes flips only, with BASE checked out here; with
    /// --from-results or BRANCH, each merge must merge the tip of its story's branch
    #[arg(long, requires_all = ["base", "tip"], conflicts_with_all = ["summary"])]
    audit: bool,
    /// With --audit: the loop branch as it was before the merges (checked out here)
    #[arg(long, value_name = "REV", requires = "audit")]
    base: Option<String>,
    /// With --audit: the loop branch after the merges
    #[arg(long, value_name = "REV", requires = "audit")]
    tip: Option<String>,
    /// Story branches (ralph/US-1, origin/ralph/US-1), each named after its story
    #[arg(value_name = "BRANCH")]
    branches: Vec<String>,
}

pub(crate) const MERGE_HELP: &str = "\
Exit codes: 0 every branch merged (or its story passes already; with --from-results, also when
no result says done), 1 a story was sent back
(conflict, failing check, refused, not runnable yet: see the report), 2 usage error.
With --audit: 0 the history is ralph's merges only, 1 a commit is not (named in the report),
2 usage error.";

pub(crate) fn run(args: &MergeArgs) -> ExitCode {
    let root = project_root_from_env(None);
    if let Err(e) = crate::named_from_the_root(&root, &[("--prd-file", Some(&args.prd_file))]) {
        return usage(&e);
    }
    if args.audit {
        return audit(args, &root);
    }
    let in_the_way = dirty(&root);
    if !in_the_way.is_empty() {
        return usage(&format!(
            "uncommitted changes here ({}): commit or remove them first",
            in_the_way.join(", ")
        ));
    }
    let timeout = Duration::from_secs(args.check_timeout.max(1));
    let mut base = match Base::read(&root, &args.prd_file, timeout) {
        Ok(b) => b,
        Err(e) => return usage(&e),
    };
    let mut wanted: Vec<(String, String)> = Vec::new();
    let mut results = Vec::new();
    let mut offered = args.branches.clone();
    if let Some(dir) = &args.from_results {
        offered.extend(done_branches(dir, &root));
    }
    if offered.is_empty() && args.from_results.is_none() {
        return usage("no branch to merge: name them, or give --from-results DIR");
    }
    for branch in offered {
        match story_of_branch(&base.prd, &branch) {
            Some(story) if !wanted.iter().any(|(s, _)| *s == story) => wanted.push((story, branch)),
            Some(_) => {}
            None => results.push(Merge {
                story: String::new(),
                verdict: MergeResult::SendBack {
                    reason: SendBack::Failed {
                        why: format!("{branch} is named after no story of {}", args.prd_file),
                    },
                },
                branch,
            }),
        }
    }
    order(&base.prd, &mut wanted);
    for (story, branch) in wanted {
        let verdict = base.merge(&story, &branch);
        results.push(Merge {
            story,
            branch,
            verdict,
        });
    }
    let head = ralph_core::worktree::head(&root).unwrap_or_default();
    let report = MergeReport::of(results, head);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", report.table());
    }
    if let Some(file) = &args.summary {
        use std::io::Write;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| {
                f.write_all(format!("### ralph merge\n\n{}\n", report.table()).as_bytes())
            });
        if let Err(e) = appended {
            eprintln!("ralph merge: cannot append to {}: {e}", file.display());
        }
    }
    ExitCode::from(report.exit_code())
}

/// `--audit`: BASE..TIP judged commit by commit (`ci::audit`).
fn audit(args: &MergeArgs, root: &Path) -> ExitCode {
    let (Some(base), Some(tip)) = (&args.base, &args.tip) else {
        return usage("--audit needs --base REV and --tip REV");
    };
    let mut offered = args.branches.clone();
    if let Some(dir) = &args.from_results {
        offered.extend(done_branches(dir, root));
    }
    let given = (args.from_results.is_some() || !offered.is_empty()).then_some(&offered[..]);
    match ralph_core::ci::audit::audit(root, &args.prd_file, base, tip, given) {
        Err(e) => usage(&e),
        Ok(report) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
            } else {
                print!("{}", report.text());
            }
            ExitCode::from(report.exit_code())
        }
    }
}

/// The branches of the stories `dir`'s result files say are done: the
/// remote's copy when fetched (`origin/ralph/<story>`), else the local one.
/// A record's `story` must be the one its branch is named after (checked
/// again by `story_of_branch`): nothing else of it is trusted.
fn done_branches(dir: &Path, root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    json_files(dir, &mut files, 0);
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|t| serde_json::from_str::<StoryResult>(&t).ok())
        .filter(|r| r.outcome == Ended::Done)
        .filter(|r| r.branch == ralph_core::parallel::story_branch(&r.story))
        .map(|r| {
            let remote = format!("origin/{}", r.branch);
            let known = ralph_core::git::Git::read(root).succeeds(&[
                "rev-parse",
                "-q",
                "--verify",
                &format!("refs/remotes/{remote}"),
            ]);
            if known { remote } else { r.branch }
        })
        .collect()
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() && depth < 3 {
            json_files(&p, out, depth + 1);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("ralph merge: {why}");
    ExitCode::from(EXIT_USAGE)
}
