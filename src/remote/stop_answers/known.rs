//! What the far side already read from a VM that cannot change while its connection lives,
//! so a later stop answers it without asking the VM again: a class's fields and its
//! superclass (the JVM refuses a redefinition that changes either), an object's type, an
//! array's length. A stop's plan takes these replies from here, each as the VM's own bytes,
//! and so reads a stop in fewer dependent waves (a `this`'s fields no longer wait for its
//! type and its class chain; an array's head no longer waits for its length). Pure.
//!
//! Forgotten: everything on a RedefineClasses passing to the VM (nothing the JVM allows it to
//! change is kept, but a VM that allowed more would be believed otherwise); objects' entries
//! on a DisposeObjects (libjdwp never gives a freed id to another object, but another agent
//! might). Bounded: past [`MAX_ENTRIES`] or [`MAX_BYTES`] all is forgotten and read again.

use std::collections::HashMap;

use super::Key;

/// The most replies kept.
pub const MAX_ENTRIES: usize = 8192;
/// The most reply bytes kept.
pub const MAX_BYTES: usize = 4 * 1024 * 1024;

/// VirtualMachine.RedefineClasses and DisposeObjects, by (command set, command).
const REDEFINE: (u8, u8) = (1, 18);
const DISPOSE: (u8, u8) = (1, 14);

/// Whether a command's reply is kept: ReferenceType.FieldsWithGeneric, ClassType.Superclass
/// (of a class), ObjectReference.ReferenceType, ArrayReference.Length.
pub fn kept(set: u8, cmd: u8) -> bool {
    matches!((set, cmd), (2, 14) | (3, 1) | (9, 1) | (13, 1))
}

/// Whether a kept command is about an object (not a class).
fn of_object(key: &Key) -> bool {
    matches!((key.set, key.cmd), (9, 1) | (13, 1))
}

#[derive(Debug, Default)]
pub struct Known {
    replies: HashMap<Key, Vec<u8>>,
    bytes: usize,
}

impl Known {
    /// The VM's reply to `key`, when kept.
    pub fn get(&self, key: &Key) -> Option<&[u8]> {
        self.replies.get(key).map(Vec::as_slice)
    }

    /// The VM answered `key` with `reply` (error code 0).
    pub fn learn(&mut self, key: &Key, reply: &[u8]) {
        if !kept(key.set, key.cmd) || self.replies.contains_key(key) {
            return;
        }
        if self.replies.len() >= MAX_ENTRIES || self.bytes + reply.len() > MAX_BYTES {
            self.replies.clear();
            self.bytes = 0;
        }
        self.bytes += reply.len();
        self.replies.insert(key.clone(), reply.to_vec());
    }

    /// A command written to the VM by the near side, by its head.
    pub fn command(&mut self, set: u8, cmd: u8) {
        match (set, cmd) {
            REDEFINE => {
                self.replies.clear();
                self.bytes = 0;
            }
            DISPOSE => {
                self.replies.retain(|k, _| !of_object(k));
                self.bytes = self.replies.values().map(Vec::len).sum();
            }
            _ => {}
        }
    }

    pub fn len(&self) -> usize {
        self.replies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(set: u8, cmd: u8, id: u8) -> Key {
        Key::new(set, cmd, vec![0, 0, 0, 0, 0, 0, 0, id])
    }

    #[test]
    fn only_what_cannot_change_is_kept() {
        let mut k = Known::default();
        for (set, cmd) in [(2, 14), (3, 1), (9, 1), (13, 1), (11, 6), (16, 1), (9, 2), (2, 6), (6, 5)] {
            k.learn(&key(set, cmd, 1), b"r");
        }
        assert_eq!(k.len(), 4);
        assert_eq!(k.get(&key(9, 1, 1)), Some(&b"r"[..]));
        assert_eq!(k.get(&key(11, 6, 1)), None);
        assert_eq!(k.get(&key(9, 1, 2)), None);
    }

    #[test]
    fn a_redefinition_forgets_all_and_a_dispose_the_objects() {
        let mut k = Known::default();
        for (set, cmd) in [(2, 14), (3, 1), (9, 1), (13, 1)] {
            k.learn(&key(set, cmd, 1), b"r");
        }
        k.command(1, 14);
        assert_eq!(k.len(), 2);
        assert!(k.get(&key(2, 14, 1)).is_some() && k.get(&key(3, 1, 1)).is_some());
        k.command(1, 18);
        assert!(k.is_empty());
    }

    #[test]
    fn the_first_reply_stays() {
        let mut k = Known::default();
        k.learn(&key(13, 1, 1), b"\0\0\0\x05");
        k.learn(&key(13, 1, 1), b"\0\0\0\x06");
        assert_eq!(k.get(&key(13, 1, 1)), Some(&b"\0\0\0\x05"[..]));
    }

    proptest! {
        #[test]
        fn it_stays_within_its_bounds(sizes in proptest::collection::vec(0usize..300_000, 1..200)) {
            let mut k = Known::default();
            for (i, n) in sizes.iter().enumerate() {
                let mut d = (i as u64).to_be_bytes().to_vec();
                d.push(1);
                k.learn(&Key::new(2, 14, d), &vec![0; *n]);
                prop_assert!(k.bytes <= MAX_BYTES && k.len() <= MAX_ENTRIES);
                prop_assert_eq!(k.bytes, k.replies.values().map(Vec::len).sum::<usize>());
            }
        }
    }
}
