//! `ralph plan`: which stories of a PRD can run now, for an engine that
//! runs them on other machines (a GitHub Actions matrix). Thin: reads the
//! file, prints `ci::wave::Wave`, exits with its code.

use clap::Args;
use ralph_core::ci::wave::{EXIT_USAGE, Wave};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct PlanArgs {
    /// The PRD to plan (a prd.json)
    #[arg(long, value_name = "PATH", default_value = "prd.json")]
    prd_file: String,
    /// Print JSON: {"status","matrix":{"include":[{"story","title"}]},"done","blocked","remaining","total","deadlock","message"}
    #[arg(long)]
    json: bool,
}

pub(crate) const PLAN_HELP: &str = "\
Exit codes:
  0  stories can run now (the matrix lists them, in the order the loop would feed them)
  2  usage error: the PRD cannot be read or parsed
  3  every story passes: nothing to run
  4  blocked: stories are left but none can run (a dependency cycle, or one on no story)

Example (a GitHub Actions step):
  ralph plan --prd-file prd.json --json > plan.json || test $? -ne 2";

pub(crate) fn run(args: &PlanArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.prd_file) {
        Ok(t) => t,
        Err(e) => return usage(&format!("cannot read {}: {e}", args.prd_file)),
    };
    let plan = match Wave::of_text(&text) {
        Ok(p) => p,
        Err(e) => return usage(&format!("{}: {e}", args.prd_file)),
    };
    if args.json {
        println!("{}", serde_json::to_string(&plan).unwrap_or_default());
    } else {
        println!("{}", plan.message);
        for e in &plan.matrix.include {
            println!("  {}  {}", e.story, e.title);
        }
    }
    ExitCode::from(plan.exit_code())
}

fn usage(why: &str) -> ExitCode {
    eprintln!("ralph plan: {why}");
    ExitCode::from(EXIT_USAGE)
}
