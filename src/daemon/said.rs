//! Lines said once: a host's JVM that cannot be reached (another user's container, say) is
//! news the first time its host lists it, not each time it is listed again (a far side's
//! list that drops it for a round and lists it again, a reconnect). Pure and bounded.

use std::collections::HashSet;

/// How many lines are remembered; past it the memory starts again (a line may then be said
/// a second time, never without end).
pub const MAX_REMEMBERED: usize = 4096;

/// The lines said already, by what tells them apart.
#[derive(Debug, Default)]
pub struct SaidOnce {
    said: HashSet<String>,
}

impl SaidOnce {
    /// Whether `what` is said now for the first time (and notes it).
    pub fn first(&mut self, what: String) -> bool {
        if self.said.contains(&what) {
            return false;
        }
        if self.said.len() >= MAX_REMEMBERED {
            self.said.clear();
        }
        self.said.insert(what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_once_and_the_memory_bounded() {
        let mut s = SaidOnce::default();
        assert!(s.first("41 root's container".into()));
        assert!(!s.first("41 root's container".into()), "listed again: not news");
        assert!(s.first("42 root's container".into()), "another JVM: news");
        for i in 0..MAX_REMEMBERED * 2 {
            s.first(i.to_string());
        }
        assert!(s.said.len() <= MAX_REMEMBERED);
    }
}
