//! The handshake scanners on any bytes, read one byte at a time, and the VM side's loop
//! that takes early packets (ART's APNM before its echo) and then the echo.
//!
//! Input: one seed byte (bits 0-1 pick the early-packet limit, the rest how the VM side's
//! bytes are cut into reads), then the bytes. What must hold:
//! - a verdict only ever moves from "incomplete" to a final one, and stays there as bytes
//!   arrive (a scanner never changes its mind, so no read size changes the outcome);
//! - "handshake" means the 14 bytes are there; an early packet is a whole packet of a sane
//!   length within the limit;
//! - the VM side's loop ends: each early packet the scanner announces is one the decoder
//!   hands over whole, and no more than `MAX_EARLY_PACKETS` are taken.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use super::pieces;
use crate::jdwp::codec::{Frame, JdwpCodec};
use crate::jdwp::handshake::{scan_debugger, scan_vm, Scan, HANDSHAKE};
use crate::jdwp::packet::{Header, HEADER_LEN};
use crate::transport::open::{MAX_EARLY_PACKET, MAX_EARLY_PACKETS};

pub fn check(data: &[u8]) {
    let Some((&seed, bytes)) = data.split_first() else { return };
    let max_early = [HEADER_LEN, 64, 4096, MAX_EARLY_PACKET][usize::from(seed & 3)];
    verdicts_settle(bytes, scan_debugger, HANDSHAKE.len());
    verdicts_settle(bytes, |b| scan_vm(b, max_early), max_early);
    vm_side_loop(seed >> 2, bytes, max_early);
}

/// Scans every prefix of `bytes` and checks each verdict against the one before.
fn verdicts_settle(bytes: &[u8], scan: impl Fn(&[u8]) -> Scan, max_early: usize) {
    let mut settled: Option<Scan> = None;
    // Past the longest thing a scanner waits for, verdicts cannot change any more.
    let end = bytes.len().min(max_early.max(HANDSHAKE.len()) + 1);
    for n in 0..=end {
        let prefix = &bytes[..n];
        let verdict = scan(prefix);
        match &verdict {
            Scan::Handshake => assert_eq!(&prefix[..HANDSHAKE.len()], HANDSHAKE),
            Scan::EarlyPacket(len) => {
                let h = Header::parse(prefix).map(|h| h.length as usize);
                assert!(h == Some(*len) && *len >= HEADER_LEN && *len <= max_early && *len <= n, "early packet {len} in {n}");
            }
            Scan::Incomplete | Scan::Garbage => {}
        }
        if let Some(before) = &settled {
            assert_eq!(before, &verdict, "verdict changed at {n} bytes");
        } else if verdict != Scan::Incomplete {
            settled = Some(verdict);
        }
    }
}

/// The loop of `transport::open::handshake` over the VM's bytes, read in pieces.
fn vm_side_loop(seed: u8, bytes: &[u8], max_early: usize) {
    let mut buf = BytesMut::new();
    let mut early = 0usize;
    let mut consumed = 0usize;
    for piece in pieces(seed, bytes) {
        buf.extend_from_slice(piece);
        loop {
            match scan_vm(&buf, max_early) {
                Scan::Handshake => {
                    assert_eq!(&bytes[consumed..consumed + HANDSHAKE.len()], HANDSHAKE);
                    return;
                }
                Scan::EarlyPacket(len) => {
                    let mut codec = JdwpCodec::new(max_early as u32, max_early);
                    match codec.decode(&mut buf) {
                        Ok(Some(Frame::Packet(p))) => {
                            assert_eq!(p.len(), len);
                            assert_eq!(p.as_bytes(), &bytes[consumed..consumed + len]);
                            consumed += len;
                        }
                        other => panic!("the scanner saw a {len}-byte packet, the decoder gave {other:?}"),
                    }
                    early += 1;
                    if early > MAX_EARLY_PACKETS {
                        return;
                    }
                }
                Scan::Garbage => return,
                Scan::Incomplete => break,
            }
        }
    }
}
