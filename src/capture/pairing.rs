//! Remembers which command each outstanding packet id was, per connection and direction,
//! so a reply can be named ("reply to DDM.Chunk") and DDM replies recognised; or anything
//! else about the command a reply needs (when it was sent, for latencies).
//!
//! Bounded: events and unsolicited DDM chunks from the VM are commands that are never
//! answered, so entries are evicted oldest-first beyond [`MAX_OUTSTANDING`] per connection.

use std::collections::{HashMap, VecDeque};

use super::record::Direction;
use crate::jdwp::names::EVENT_COMMAND_SET;

/// Most remembered unanswered commands per connection.
pub const MAX_OUTSTANDING: usize = 4096;

#[derive(Debug)]
struct ConnPending<T> {
    /// (direction the command travelled, id) -> (what was noted, insertion serial)
    map: HashMap<(Direction, u32), (T, u64)>,
    /// Insertion order; entries whose serial no longer matches were answered or replaced.
    order: VecDeque<((Direction, u32), u64)>,
    serial: u64,
}

impl<T> Default for ConnPending<T> {
    fn default() -> Self {
        ConnPending { map: HashMap::new(), order: VecDeque::new(), serial: 0 }
    }
}

/// Command/reply pairing for many connections; `T` is what a reply gets back of its
/// command, by default its (command set, command).
#[derive(Debug)]
pub struct Pairing<T = (u8, u8)> {
    conns: HashMap<u64, ConnPending<T>>,
}

impl<T> Default for Pairing<T> {
    fn default() -> Self {
        Pairing { conns: HashMap::new() }
    }
}

impl Pairing {
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes a command sent in `dir` on connection `conn`. Events are skipped: never answered.
    pub fn command(&mut self, conn: u64, dir: Direction, id: u32, set: u8, cmd: u8) {
        self.remember(conn, dir, id, set, (set, cmd));
    }

    /// A reply travelling in `dir` answers a command that travelled the other way; returns
    /// that command's (set, cmd) and forgets it.
    pub fn reply(&mut self, conn: u64, dir: Direction, id: u32) -> Option<(u8, u8)> {
        self.answer(conn, dir, id)
    }
}

impl<T> Pairing<T> {
    /// Notes `value` for a command of set `set` sent in `dir` on connection `conn`. Events
    /// are skipped: never answered.
    pub fn remember(&mut self, conn: u64, dir: Direction, id: u32, set: u8, value: T) {
        if set == EVENT_COMMAND_SET {
            return;
        }
        let c = self.conns.entry(conn).or_default();
        c.serial += 1;
        let key = (dir, id);
        c.map.insert(key, (value, c.serial));
        c.order.push_back((key, c.serial));
        while c.order.len() > MAX_OUTSTANDING {
            if let Some((old, serial)) = c.order.pop_front() {
                if c.map.get(&old).map(|e| e.1) == Some(serial) {
                    c.map.remove(&old);
                }
            }
        }
    }

    /// What was noted for the command a reply travelling in `dir` answers (it travelled
    /// the other way), forgotten now.
    pub fn answer(&mut self, conn: u64, dir: Direction, id: u32) -> Option<T> {
        let c = self.conns.get_mut(&conn)?;
        c.map.remove(&(dir.reverse(), id)).map(|(v, _)| v)
    }

    /// Drops everything known about a closed connection.
    pub fn close(&mut self, conn: u64) {
        self.conns.remove(&conn);
    }

    #[cfg(test)]
    fn pending(&self, conn: u64) -> usize {
        self.conns.get(&conn).map_or(0, |c| c.map.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    #[test]
    fn pairs_by_connection_and_direction() {
        let mut p = Pairing::new();
        p.command(1, ToServer, 5, 1, 1);
        p.command(1, ToClient, 5, 0xC7, 1);
        p.command(2, ToServer, 5, 11, 15);
        assert_eq!(p.reply(1, ToServer, 5), Some((0xC7, 1)));
        assert_eq!(p.reply(1, ToClient, 5), Some((1, 1)));
        assert_eq!(p.reply(1, ToClient, 5), None, "answered once");
        assert_eq!(p.reply(2, ToClient, 5), Some((11, 15)));
        assert_eq!(p.reply(3, ToClient, 5), None);
    }

    #[test]
    fn events_are_not_remembered_and_memory_is_bounded() {
        let mut p = Pairing::new();
        p.command(1, ToClient, 1, EVENT_COMMAND_SET, 100);
        assert_eq!(p.pending(1), 0);
        for id in 0..(MAX_OUTSTANDING as u32 + 100) {
            p.command(1, ToClient, id, 0xC7, 1);
        }
        assert_eq!(p.pending(1), MAX_OUTSTANDING);
        assert_eq!(p.reply(1, ToServer, 0), None, "oldest evicted");
        assert_eq!(
            p.reply(1, ToServer, MAX_OUTSTANDING as u32 + 99),
            Some((0xC7, 1))
        );
        p.close(1);
        assert_eq!(p.pending(1), 0);
    }

    #[test]
    fn reused_id_is_not_evicted_by_its_stale_order_entry() {
        let mut p = Pairing::new();
        p.command(1, ToServer, 7, 1, 1);
        p.command(1, ToServer, 7, 1, 2); // same id reused before the reply
        for id in 100..(100 + MAX_OUTSTANDING as u32 - 1) {
            p.command(1, ToServer, id, 1, 3);
        }
        assert_eq!(p.reply(1, ToClient, 7), Some((1, 2)));
    }
}
