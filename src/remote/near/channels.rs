//! The near side's table of channels: which are being opened (and who waits for the result),
//! which are open (and where their bytes go), and what each frame from the far side or each
//! end of a debugger-side stream means for them. Pure: the link's task keeps one and does
//! what its answers say.
//!
//! Channel numbers are never reused within a session (a late frame of a closed channel must
//! not reach a new one); a new session starts the numbers again, its channels being new.

use std::collections::HashMap;

/// One channel's state; `W` is who waits for an open, `S` where an open channel's bytes go.
#[derive(Debug)]
enum Chan<W, S> {
    Opening(W),
    Open(S),
}

/// What to do with a frame of a channel.
#[derive(Debug, PartialEq, Eq)]
pub enum Route<'a, S> {
    /// Hand the bytes to this open channel.
    Deliver(&'a S),
    /// The channel was closed on this side meanwhile (its Close is on the way): drop them.
    Drop,
    /// The far side broke the protocol (data before the open's result, or on a channel never
    /// opened).
    Protocol(&'static str),
}

/// An open's result for the one waiting for it.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened<W> {
    /// The channel is open: give the waiter its stream, and keep the sink with `set_open`.
    Ok(W),
    /// It failed: tell the waiter; the channel is gone.
    Failed(W),
    /// A result for a channel this side closed meanwhile, or never opened.
    Stray,
}

#[derive(Debug)]
pub struct Channels<W, S> {
    next: u32,
    map: HashMap<u32, Chan<W, S>>,
}

impl<W, S> Default for Channels<W, S> {
    fn default() -> Self {
        Channels { next: 1, map: HashMap::new() }
    }
}

impl<W, S> Channels<W, S> {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// A new channel for `waiter`: its number (never 0, which is the link's).
    pub fn begin(&mut self, waiter: W) -> u32 {
        let id = self.next;
        self.next = self.next.checked_add(1).unwrap_or(1);
        self.map.insert(id, Chan::Opening(waiter));
        id
    }

    /// The far side's Opened for `id`.
    pub fn opened(&mut self, id: u32, ok: bool) -> Opened<W> {
        match self.map.remove(&id) {
            Some(Chan::Opening(w)) if ok => Opened::Ok(w),
            Some(Chan::Opening(w)) => Opened::Failed(w),
            Some(open @ Chan::Open(_)) => {
                // A second result for an open channel: keep it as it is, the caller refuses.
                self.map.insert(id, open);
                Opened::Stray
            }
            None => Opened::Stray,
        }
    }

    /// The channel `id`, whose open succeeded, now sends its bytes to `sink`.
    pub fn set_open(&mut self, id: u32, sink: S) {
        self.map.insert(id, Chan::Open(sink));
    }

    /// Where the far side's Data for `id` goes.
    pub fn route(&self, id: u32) -> Route<'_, S> {
        match self.map.get(&id) {
            Some(Chan::Open(s)) => Route::Deliver(s),
            Some(Chan::Opening(_)) => Route::Protocol("data on a channel before its open result"),
            None if id < self.next => Route::Drop,
            None => Route::Protocol("data on a channel never opened"),
        }
    }

    /// The channel ends (the far side closed it, or its debugger-side stream ended): true
    /// when it was there, so a Close must go to the far side when this side ended it.
    pub fn close(&mut self, id: u32) -> bool {
        self.map.remove(&id).is_some()
    }

    /// A new session: every channel is gone. Returns the waiters of opens not yet answered
    /// (to be told) and drops the sinks (their streams end).
    pub fn reset(&mut self) -> Vec<W> {
        self.next = 1;
        self.map
            .drain()
            .filter_map(|(_, c)| match c {
                Chan::Opening(w) => Some(w),
                Chan::Open(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_lives_opening_open_closed() {
        let mut t: Channels<&str, &str> = Channels::default();
        let a = t.begin("a waits");
        let b = t.begin("b waits");
        assert_eq!((a, b), (1, 2));
        assert_eq!(t.route(a), Route::Protocol("data on a channel before its open result"));
        assert_eq!(t.opened(a, true), Opened::Ok("a waits"));
        t.set_open(a, "a's sink");
        assert_eq!(t.route(a), Route::Deliver(&"a's sink"));
        assert_eq!(t.opened(a, true), Opened::Stray, "a second result");
        assert_eq!(t.route(a), Route::Deliver(&"a's sink"), "and the channel stays");
        assert_eq!(t.opened(b, false), Opened::Failed("b waits"));
        assert_eq!(t.route(b), Route::Drop, "a failed channel's late data is dropped");
        assert!(t.close(a));
        assert!(!t.close(a), "closed once");
        assert_eq!(t.route(a), Route::Drop);
        assert_eq!(t.route(9), Route::Protocol("data on a channel never opened"));
        assert_eq!(t.opened(9, true), Opened::Stray);
        assert!(t.is_empty());
    }

    #[test]
    fn numbers_are_not_reused_in_a_session_and_restart_in_a_new_one() {
        let mut t: Channels<u8, u8> = Channels::default();
        let a = t.begin(1);
        assert!(t.close(a));
        let b = t.begin(2);
        assert_ne!(a, b);
        let c = t.begin(3);
        assert_eq!(t.opened(c, true), Opened::Ok(3));
        t.set_open(c, 30);
        let mut waiting = t.reset();
        waiting.sort();
        assert_eq!(waiting, vec![2], "the unanswered open is told; the open one's sink is dropped");
        assert!(t.is_empty());
        assert_eq!(t.begin(4), 1);
    }

    #[test]
    fn numbers_wrap_past_zero() {
        let mut t: Channels<(), ()> = Channels { next: u32::MAX, map: HashMap::new() };
        assert_eq!(t.begin(()), u32::MAX);
        assert_eq!(t.begin(()), 1);
    }
}
