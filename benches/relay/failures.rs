//! Functional failures of a run: what decides the benchmark's exit code.

/// Functional failures (wrong or missing replies, dead peers); they decide the exit code.
#[derive(Default)]
pub(crate) struct Failures(pub(crate) Vec<String>);

impl Failures {
    pub(crate) fn add(&mut self, what: &str, e: impl std::fmt::Display) {
        let mut msg = format!("{what}: {e}");
        if msg.len() > 4000 {
            let cut = (0..=4000).rev().find(|i| msg.is_char_boundary(*i)).unwrap_or(0);
            msg.truncate(cut);
            msg.push_str(" [...]");
        }
        eprintln!("FAILED {msg}");
        self.0.push(msg);
    }
}
