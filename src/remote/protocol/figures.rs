//! What a near link reports of itself for `jdwpmux stats` (`NearLink::figures`): the Data
//! frames it carried each way ([`LinkSqueeze`]) and its replay buffer ([`ReplayHeld`]): the
//! frames sent to the far side and not yet acknowledged (`resume::Outbound`), kept for a
//! replay after a cut. A user on a bad link, and the far-side soak, see that buffer stay
//! bounded (the resume limit) and empty again once the far side has caught up. Pure.

use super::squeeze::LinkSqueeze;

/// The replay buffer now and the most it has held since the link started (over every
/// connection and session of the link), with the limit it is kept under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayHeld {
    /// Bytes (on the wire) of the frames held unacknowledged now.
    pub bytes: u64,
    /// Those frames.
    pub frames: u64,
    /// The most bytes held at once since the link started (a high-water mark).
    pub most_bytes: u64,
    /// The most frames held at once since the link started (not necessarily at the same
    /// moment as `most_bytes`).
    pub most_frames: u64,
    /// The limit past which the VM sessions' writes wait (`near::Config::limit`); Open and
    /// Close frames, a few bytes each, may go past it (`Outbound::push_beyond`).
    pub limit: u64,
}

impl ReplayHeld {
    pub fn new(limit: usize) -> ReplayHeld {
        ReplayHeld { limit: limit as u64, ..ReplayHeld::default() }
    }

    /// The buffer holds `bytes` in `frames` now: the marks follow. Whether anything changed.
    pub fn note(&mut self, bytes: usize, frames: usize) -> bool {
        let before = *self;
        self.bytes = bytes as u64;
        self.frames = frames as u64;
        self.most_bytes = self.most_bytes.max(self.bytes);
        self.most_frames = self.most_frames.max(self.frames);
        *self != before
    }
}

/// Everything `stats` shows of one far link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkFigures {
    /// Data frames each way, and of them those compressed.
    pub squeezed: LinkSqueeze,
    /// The near side's replay buffer.
    pub replay: ReplayHeld,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_keeps_the_most_and_the_level_follows() {
        let mut r = ReplayHeld::new(8 << 20);
        assert_eq!(r, ReplayHeld { limit: 8 << 20, ..ReplayHeld::default() });
        assert!(!r.note(0, 0), "nothing held, nothing new");
        // (bytes, frames) held, then (bytes, frames, most bytes, most frames) shown.
        type Shown = (u64, u64, u64, u64);
        let rows: [((usize, usize), Shown); 6] = [
            ((4_096, 1), (4_096, 1, 4_096, 1)),
            ((70_000, 3), (70_000, 3, 70_000, 3)),
            ((0, 0), (0, 0, 70_000, 3)),       // acknowledged: the mark stays
            ((9_000, 5), (9_000, 5, 70_000, 5)), // more frames, fewer bytes: each mark its own
            ((120_000, 2), (120_000, 2, 120_000, 5)),
            ((0, 0), (0, 0, 120_000, 5)),
        ];
        for ((bytes, frames), want) in rows {
            assert!(r.note(bytes, frames), "{bytes} {frames}");
            assert_eq!((r.bytes, r.frames, r.most_bytes, r.most_frames), want, "after {bytes} bytes in {frames}");
        }
        assert!(!r.note(0, 0), "the same again changes nothing (nothing to publish)");
        assert_eq!(r.limit, 8 << 20);
    }

    #[test]
    fn the_level_changing_under_the_mark_is_a_change() {
        let mut r = ReplayHeld::new(1 << 20);
        assert!(r.note(500, 2));
        assert!(r.note(400, 2), "the level moved, the mark did not");
        assert_eq!((r.bytes, r.most_bytes), (400, 500));
    }
}
