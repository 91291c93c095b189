//! The loop's review settings (`--review`, `--review-cmd`, `--max-reviews`,
//! `--review-timeout`) as the state keeps them, and the reviewer names the
//! options take. Below the state and the argument reader, which both hold
//! them; the review itself (`review`) is above. Pure.

/// The built-in reviewers, in the order they are reported.
pub(crate) const REVIEWERS: &[&str] = &["acceptance", "security", "quality"];
/// The reviewer name given to `--review-cmd`.
pub(crate) const CUSTOM: &str = "custom";
/// Review rounds before a loop that is still rejected stops.
pub(crate) const DEFAULT_MAX_REVIEWS: u32 = 3;
/// Seconds a reviewer may take.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// The reviewer of each story as it is marked passing (PRD mode).
pub const STORY: &str = "story";

/// The loop's review settings (`--review`, `--review-cmd`, `--max-reviews`,
/// `--review-timeout`), kept in the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewConfig {
    /// Who reviews; empty: no review.
    pub reviewers: Vec<String>,
    /// `--review-cmd`: the program that reviews instead of `claude -p`.
    pub command: Option<String>,
    /// Rounds of review before a loop still rejected stops.
    pub max_rounds: u32,
    pub timeout_secs: u64,
    /// The commit the loop started from (`git rev-parse HEAD`), the base of
    /// the diff the reviewers see.
    pub base: Option<String>,
}

impl Default for ReviewConfig {
    fn default() -> ReviewConfig {
        ReviewConfig {
            reviewers: Vec::new(),
            command: None,
            max_rounds: DEFAULT_MAX_REVIEWS,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            base: None,
        }
    }
}

impl ReviewConfig {
    pub(crate) fn is_on(&self) -> bool {
        !self.reviewers.is_empty()
    }

    /// Each story is reviewed as it is marked passing (`--review story`).
    pub(crate) fn reviews_stories(&self) -> bool {
        self.reviewers.iter().any(|r| r == STORY)
    }

    /// The reviewers of the whole work, before the loop completes.
    pub(crate) fn final_reviewers(&self) -> Vec<String> {
        self.reviewers
            .iter()
            .filter(|r| *r != STORY)
            .cloned()
            .collect()
    }
}

/// `--review LIST`: reviewer names separated by commas (`all` is every
/// built-in one). `None` when a name is unknown (the word is then prompt
/// text, or an error, as the caller decides).
pub(crate) fn parse_list(text: &str) -> Option<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let add: Vec<&str> = match part {
            "all" => REVIEWERS.to_vec(),
            p if REVIEWERS.contains(&p) || p == STORY => vec![p],
            _ => return None,
        };
        for name in add {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(parse_list("acceptance").unwrap(), ["acceptance"]);
        assert_eq!(
            parse_list("all").unwrap(),
            ["acceptance", "security", "quality"]
        );
        assert_eq!(
            parse_list("security, acceptance,security").unwrap(),
            ["security", "acceptance"]
        );
        assert!(parse_list("Fix").is_none());
        assert!(parse_list("acceptance,bogus").is_none());
    }
}
