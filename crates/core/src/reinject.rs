//! `last-injected` in the loop's folder: `STORY_ID COUNT`, how many times in a
//! row the same story was fed. Feeding a story again and again without it
//! passing means the agent is stuck: the message escalates, then the loop stops.
//! Pure: the file is sealed inside (`seal::write_inline_hint`) and read
//! with its seal by `state_file` (a counter ralph did not write pauses the
//! loop, `tamper`).

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    pub story_id: String,
    pub count: u32,
}

impl Injected {
    /// Parse the sidecar; `None` for anything unreadable (it is only a hint).
    pub fn parse(text: &str) -> Option<Injected> {
        let line = text.lines().next()?.trim();
        let (id, count) = line.rsplit_once(char::is_whitespace)?;
        Some(Injected {
            story_id: id.trim().to_string(),
            count: count.parse().ok()?,
        })
    }

    pub fn render(&self) -> String {
        format!("{} {}\n", self.story_id, self.count)
    }

    /// The counter after feeding `story_id` once more.
    pub fn next(previous: Option<&Injected>, story_id: &str) -> Injected {
        let count = match previous {
            Some(p) if p.story_id == story_id => p.count.saturating_add(1),
            _ => 1,
        };
        Injected {
            story_id: story_id.to_string(),
            count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_repeats() {
        let a = Injected::next(None, "US-1");
        assert_eq!(a.count, 1);
        let b = Injected::next(Some(&a), "US-1");
        assert_eq!(b.count, 2);
        assert_eq!(Injected::next(Some(&b), "US-2").count, 1);
        assert_eq!(Injected::parse(&b.render()), Some(b));
        assert_eq!(Injected::parse("garbage"), None);
    }
}
