//! The parser's cases. Pure.
use super::*;

#[test]
fn budgets() {
    let a = parse_command_line("go --max-tokens 2M --max-runtime=1h30m --max-cost $2.50").unwrap();
    assert_eq!(a.prompt, "go");
    assert_eq!(a.max_tokens, Some(2_000_000));
    assert_eq!(a.max_runtime_secs, Some(5_400));
    assert_eq!(a.max_cost, Some(Usd(2_500_000)));
    for bad in ["--max-tokens many", "--max-runtime soon", "--max-cost -1"] {
        let e = parse_command_line(&format!("go {bad}")).unwrap_err();
        assert!(matches!(e, ArgsError::BadValue { .. }), "{bad}: {e}");
    }
    let e = parse_command_line("go --max-cost 1 --max-cost 2").unwrap_err();
    assert_eq!(e, ArgsError::Repeated("--max-cost"));
}

#[test]
fn prompt_is_kept_byte_for_byte() {
    let raw = " Build \"x\" with `id` and $(touch pwned) $HOME\n---\niteration: 3\n  indented --max-iterations 5 --completion-promise \"ALL DONE\"";
    let a = parse_command_line(raw).unwrap();
    assert_eq!(
        a.prompt,
        "Build \"x\" with `id` and $(touch pwned) $HOME\n---\niteration: 3\n  indented"
    );
    assert_eq!(a.max_iterations, Some(5));
    assert_eq!(a.completion_promise.as_deref(), Some("ALL DONE"));
}

#[test]
fn flags_anywhere_and_equals_form() {
    let a = parse_command_line("--max-iterations=0 fix it --prd-file=plan/prd.json now").unwrap();
    assert_eq!(a.prompt, "fix it now");
    assert_eq!(a.max_iterations, Some(0));
    assert_eq!(a.prd_file.as_deref(), Some("plan/prd.json"));
    let a = parse_command_line("x --completion-promise='it is done'").unwrap();
    assert_eq!(a.completion_promise.as_deref(), Some("it is done"));
}

#[test]
fn errors_are_specific() {
    assert_eq!(
        parse_command_line("fix --verbose flag"),
        Err(ArgsError::UnknownFlag {
            name: "--verbose".into(),
            suggestion: None
        })
    );
    assert!(matches!(
        parse_command_line("x --max-iterations 1e3"),
        Err(ArgsError::BadValue { .. })
    ));
    assert!(matches!(
        parse_command_line("x --max-iterations -1"),
        Err(ArgsError::BadValue { .. })
    ));
    assert!(matches!(
        parse_command_line("x --max-iterations"),
        Err(ArgsError::MissingValue(..))
    ));
    assert!(matches!(
        parse_command_line("x --max-iterations 0x10"),
        Err(ArgsError::BadValue { .. })
    ));
    assert_eq!(
        parse_command_line("x --prd-file a --prd-file b"),
        Err(ArgsError::Repeated("--prd-file"))
    );
}

#[test]
fn double_dash_ends_options_and_apostrophes_do_not_group() {
    let a = parse_command_line("don't stop --max-iterations 4 -- then --verbose stays").unwrap();
    assert_eq!(a.prompt, "don't stop then --verbose stays");
    assert_eq!(a.max_iterations, Some(4));
    let a = parse_command_line("\"quoted --max-iterations 9\" and").unwrap();
    assert_eq!(a.prompt, "\"quoted --max-iterations 9\" and");
    assert_eq!(a.max_iterations, None);
}

#[test]
fn command_detection() {
    assert_eq!(loop_command_args("/ralph:ralph-loop do it"), Some(" do it"));
    assert_eq!(loop_command_args("  /ralph-loop"), Some(""));
    assert_eq!(loop_command_args("/ralph-loops x"), None);
    assert_eq!(loop_command_args("please /ralph-loop"), None);
}

#[test]
fn verify_flags() {
    let a =
        parse_command_line("x --verify \"cargo test --quiet\" --verify-timeout 60 --max-stalls 0")
            .unwrap();
    assert_eq!(a.verify.as_deref(), Some("cargo test --quiet"));
    assert_eq!(a.verify_timeout, Some(60));
    assert_eq!(a.max_stalls, Some(0));
    assert!(parse_command_line("x --verify-timeout 0").is_err());
}

#[test]
fn argv_form() {
    let argv: Vec<String> = ["Fix", "the bug", "--max-iterations", "3", "--", "--x"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let a = parse_argv(&argv).unwrap();
    assert_eq!(a.prompt, "Fix the bug --x");
    assert_eq!(a.max_iterations, Some(3));
    assert!(parse_argv(&["--nope".to_string()]).is_err());
}

#[test]
fn zero_turns_a_cap_off_or_is_refused_with_why() {
    let a = parse_command_line("go --max-tokens 0 --max-runtime 0 --max-cost 0 --max-iterations 0")
        .unwrap();
    assert_eq!(
        (a.max_tokens, a.max_runtime_secs, a.max_cost),
        (None, None, None)
    );
    assert_eq!(a.max_iterations, Some(0));
    for flag in [
        "--verify-timeout",
        "--review-timeout",
        "--parallel",
        "--max-reviews",
        "--max-story-attempts",
    ] {
        let e = parse_command_line(&format!("go {flag} 0")).unwrap_err();
        assert!(matches!(e, ArgsError::ZeroRefused { .. }), "{flag}: {e}");
        assert!(
            e.to_string()
                .starts_with(&format!("`{flag} 0` is refused: ")),
            "{e}"
        );
    }
}

#[test]
fn every_time_option_takes_a_duration() {
    let a = parse_command_line("go --verify-timeout 90s --review-timeout 10m --max-runtime 2h")
        .unwrap();
    assert_eq!(a.verify_timeout, Some(90));
    assert_eq!(a.review_timeout, Some(600));
    assert_eq!(a.max_runtime_secs, Some(7200));
    let a = parse_command_line("go --verify-timeout 45").unwrap();
    assert_eq!(a.verify_timeout, Some(45), "bare seconds");
}

#[test]
fn a_misspelt_option_says_did_you_mean_in_one_short_line() {
    let e = parse_command_line("fix it --max-iteration 3").unwrap_err();
    let text = e.to_string();
    assert!(text.contains("did you mean `--max-iterations`?"), "{text}");
    assert!(!text.contains('\n') && text.len() < 200, "{text}");
    let e = parse_argv(&["x".to_string(), "--prd".to_string(), "p.json".to_string()]).unwrap_err();
    assert!(e.to_string().contains("`--prd-file`"), "{e}");
}

#[test]
fn an_optional_value_never_swallows_a_prompt_word() {
    let e = parse_command_line("--review all tests pass").unwrap_err();
    assert!(matches!(e, ArgsError::Ambiguous { .. }), "{e}");
    assert!(e.to_string().contains("--review=all"), "{e}");
    let a = parse_command_line("--review=all make all tests pass").unwrap();
    assert_eq!(a.prompt, "make all tests pass");
    assert_eq!(a.review.map(|r| r.len()), Some(3));
    let a = parse_command_line("--review fix the bug").unwrap();
    assert_eq!(a.prompt, "fix the bug");
    assert_eq!(a.review, Some(vec!["acceptance".to_string()]));
    let a = parse_command_line("Do it --review story").unwrap();
    assert_eq!(a.review, Some(vec!["story".to_string()]));
    let a = parse_command_line("Do it --review all --max-iterations 3").unwrap();
    assert_eq!(a.review.map(|r| r.len()), Some(3));
    let argv: Vec<String> = ["--review", "all", "tests", "pass"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(matches!(
        parse_argv(&argv),
        Err(ArgsError::Ambiguous { .. })
    ));
}

#[test]
fn dash_h_is_help_only_alone() {
    assert!(parse_command_line(" -h ").unwrap().help);
    assert!(parse_command_line("fix it --help").unwrap().help);
    let a = parse_command_line("fix the -h flag of ls").unwrap();
    assert!(!a.help);
    assert_eq!(a.prompt, "fix the -h flag of ls");
    assert!(
        !parse_command_line("\"explain -h\" --max-iterations 2")
            .unwrap()
            .help
    );
    let argv: Vec<String> = ["fix", "-h", "handling"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(!parse_argv(&argv).unwrap().help);
    assert!(parse_argv(&["-h".to_string()]).unwrap().help);
}

#[test]
fn every_loop_option_parses() {
    for o in options::of(false) {
        let line = match o.kind {
            options::ValueKind::Switch | options::ValueKind::Optional => format!("go {}", o.name),
            _ => format!("go {} {}", o.name, o.example),
        };
        let a = parse_command_line(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_ne!(
            a,
            StartArgs {
                prompt: "go".into(),
                ..StartArgs::default()
            },
            "{line} set nothing"
        );
    }
}

#[test]
fn sandbox_require_is_the_only_value() {
    assert_eq!(
        parse_command_line("go").unwrap().sandbox,
        SandboxAsk::WhereAble
    );
    for given in [
        "go --sandbox=require",
        "go --sandbox require",
        "go --sandbox",
    ] {
        assert_eq!(
            parse_command_line(given).unwrap().sandbox,
            SandboxAsk::Required,
            "{given}"
        );
    }
    // A word after a bare --sandbox is the prompt's.
    let a = parse_command_line("--sandbox fix it").unwrap();
    assert_eq!(
        (a.sandbox, a.prompt.as_str()),
        (SandboxAsk::Required, "fix it")
    );
    let e = parse_command_line("go --sandbox=maybe").unwrap_err();
    assert!(
        matches!(
            e,
            ArgsError::BadValue {
                flag: "--sandbox",
                ..
            }
        ),
        "{e}"
    );
}
