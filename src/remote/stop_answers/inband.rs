//! A stop's answers inside a VM connection's byte stream: how the far side puts them in the
//! bytes it relays from the VM, just before the stop's event, so they keep their place among
//! the VM's replies and events through the link, its replay after a cut, and the local socket
//! a session reads. They travel as a JDWP command packet of a command set no VM uses
//! ([`SET`], in the vendor range, beside DDM's 0xC7) under an id of the far side's
//! ([`super::FAR_IDS`]); the far side sends them only to a near side that asked for them,
//! and a session that reads one takes it out of the stream: no debugger ever sees it.

use super::relay::Answers;
use super::wire::{self, WireError};
use crate::jdwp::packet::{Header, Packet};

/// The command set of the packet that carries a stop's answers.
pub const SET: u8 = 0xF0;
/// Its command.
pub const CMD: u8 = 1;

/// Whether a packet from a VM connection carries gathered answers (only ever on a
/// connection whose far side was asked for them).
pub fn is_answers(h: &Header) -> bool {
    !h.is_reply() && h.cmd_set() == SET && h.cmd() == CMD && super::FAR_IDS.contains(&h.id)
}

/// The packet for `a`, under the far side's id `id`.
pub fn packet(id: u32, a: &Answers) -> Result<Packet, WireError> {
    Ok(Packet::command(id, SET, CMD, &wire::encode(a)?))
}

/// The answers a packet carries (its data, after [`is_answers`] said yes).
pub fn answers(data: &[u8]) -> Result<Answers, WireError> {
    wire::decode(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::stop_answers::plan::Gathered;
    use crate::remote::stop_answers::Key;

    #[test]
    fn answers_go_in_a_packet_and_come_out_the_same() {
        let a = Answers {
            event_id: 7,
            suspend_policy: 2,
            thread: 0x55,
            answers: vec![Gathered { key: Key::new(11, 1, vec![0; 8]), reply: b"\0\0\0\x04main".to_vec() }],
            absent: vec![Key::new(2, 12, vec![0, 0, 0, 0, 0, 0, 0, 9])],
        };
        let p = packet(0xF000_0003, &a).unwrap();
        let h = p.header();
        assert!(is_answers(&h));
        assert_eq!(answers(p.data()).unwrap(), a);
    }

    #[test]
    fn a_vm_command_of_that_set_under_a_low_id_is_not_taken() {
        let p = Packet::command(12, SET, CMD, &[]);
        assert!(!is_answers(&p.header()));
        let r = Packet::reply(0xF000_0001, 0, &[]);
        assert!(!is_answers(&r.header()));
    }
}
