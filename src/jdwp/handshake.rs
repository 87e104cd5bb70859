//! The JDWP handshake: 14 ASCII bytes sent by the debugger and echoed by the VM.
//!
//! Pure functions over a buffer so that the callers can read under their own timeouts and
//! keep whatever bytes follow the handshake (ART may even send a packet before its echo).

use super::packet::{Header, HEADER_LEN};

pub const HANDSHAKE: &[u8; 14] = b"JDWP-Handshake";

/// What the bytes at the front of a buffer are, while waiting for a handshake.
#[derive(Debug, PartialEq, Eq)]
pub enum Scan {
    /// Not enough bytes to tell yet.
    Incomplete,
    /// The handshake is complete; consume this many bytes.
    Handshake,
    /// A whole JDWP packet of this length arrived before the handshake (ART's early APNM).
    EarlyPacket(usize),
    /// Something else: the peer is not speaking JDWP.
    Garbage,
}

/// Checks the front of `buf` for a handshake sent by a debugger: nothing else is allowed first.
pub fn scan_debugger(buf: &[u8]) -> Scan {
    let n = buf.len().min(HANDSHAKE.len());
    if buf[..n] != HANDSHAKE[..n] {
        Scan::Garbage
    } else if n < HANDSHAKE.len() {
        Scan::Incomplete
    } else {
        Scan::Handshake
    }
}

/// Checks the front of `buf` for the VM's echo, tolerating whole packets that come first.
/// `max_early` caps the length of such a packet.
pub fn scan_vm(buf: &[u8], max_early: usize) -> Scan {
    match scan_debugger(buf) {
        Scan::Garbage => {}
        other => return other,
    }
    // Not a handshake prefix: the only other thing we accept is a complete, sane packet.
    // "JDWP" read as a length is ~1.2 GB, so the two cannot be confused below `max_early`.
    let Some(h) = Header::parse(buf) else {
        return if buf.len() < HEADER_LEN { Scan::Incomplete } else { Scan::Garbage };
    };
    let len = h.length as usize;
    if len < HEADER_LEN || len > max_early {
        Scan::Garbage
    } else if buf.len() < len {
        Scan::Incomplete
    } else {
        Scan::EarlyPacket(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugger_handshake_in_fragments() {
        for cut in 0..HANDSHAKE.len() {
            assert_eq!(scan_debugger(&HANDSHAKE[..cut]), Scan::Incomplete, "cut {cut}");
        }
        assert_eq!(scan_debugger(HANDSHAKE), Scan::Handshake);
        let mut more = HANDSHAKE.to_vec();
        more.extend_from_slice(&[0, 0, 0, 11]);
        assert_eq!(scan_debugger(&more), Scan::Handshake);
    }

    #[test]
    fn debugger_garbage() {
        assert_eq!(scan_debugger(b"GET / HTTP/1.1"), Scan::Garbage);
        assert_eq!(scan_debugger(b"JDWX"), Scan::Garbage);
        assert_eq!(scan_debugger(&[0, 0, 0, 11]), Scan::Garbage);
    }

    #[test]
    fn vm_early_packet_then_echo() {
        let pkt = [0u8, 0, 0, 12, 0x80, 0, 0, 1, 0, 0xC7, 1, 9];
        assert_eq!(scan_vm(&pkt[..5], 1024), Scan::Incomplete);
        assert_eq!(scan_vm(&pkt[..11], 1024), Scan::Incomplete);
        assert_eq!(scan_vm(&pkt, 1024), Scan::EarlyPacket(12));
        assert_eq!(scan_vm(&pkt, 11), Scan::Garbage);
        assert_eq!(scan_vm(&HANDSHAKE[..3], 1024), Scan::Incomplete);
        assert_eq!(scan_vm(HANDSHAKE, 1024), Scan::Handshake);
    }

    #[test]
    fn vm_garbage() {
        assert_eq!(scan_vm(&[0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7], 1024), Scan::Garbage);
        assert_eq!(scan_vm(b"SSH-2.0-OpenSSH", 1024), Scan::Garbage);
    }
}
