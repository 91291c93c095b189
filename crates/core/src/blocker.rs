//! `.ralph-blocker.md`: the agent's way to say "I cannot go on". Frontmatter
//! `story_id:` names the story; the body explains. It halts the loop, and is
//! removed automatically once that story passes.
//! Pure, but for [`read`] (the file, when the agent wrote one).

use crate::frontmatter;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// Empty when the file names no story.
    pub story_id: String,
    /// The first lines of the explanation, bounded for a one-screen message.
    pub summary: String,
}

const SUMMARY_CHARS: usize = 400;

impl Blocker {
    pub fn parse(text: &str) -> Blocker {
        let (story_id, body) = match frontmatter::split(text) {
            Some(split) => {
                let id = frontmatter::scan(text, "story_id").unwrap_or_default();
                (id.to_string(), split.body)
            }
            None => (String::new(), text),
        };
        let joined = body
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let mut summary: String = joined.chars().take(SUMMARY_CHARS).collect();
        if joined.chars().count() > SUMMARY_CHARS {
            summary.push('…');
        }
        if summary.is_empty() {
            summary = "(no explanation given)".into();
        }
        Blocker { story_id, summary }
    }
}

/// The agent's blocker at `path`, if it wrote one.
pub(crate) fn read(path: &std::path::Path) -> Option<Blocker> {
    crate::store::read_hint(path).map(|t| Blocker::parse(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_story_and_summary() {
        let b = Blocker::parse("---\nstory_id: \"US-2\"\n---\n\n# Blocked\n\nNeed an API key.\n");
        assert_eq!(b.story_id, "US-2");
        assert_eq!(b.summary, "# Blocked Need an API key.");
        let plain = Blocker::parse("");
        assert_eq!(plain.story_id, "");
        assert_eq!(plain.summary, "(no explanation given)");
    }
}
