//! The adb server protocol: length-prefixed messages in a stream cut into any reads, device
//! lists and `track-jdwp` pid lists.
//!
//! Input: one byte choosing the parser (bits 0-1: 0 the message stream, 1 devices, 2 pids;
//! the rest cut the stream into reads), then the bytes. What must hold:
//! - the messages taken off a stream are exactly its bytes after their 4-digit lengths, each
//!   within `MAX_MESSAGE_LEN`, and encoding their lengths again gives the same stream;
//! - a device or pid list that parses writes back to a list that parses the same;
//! - the pid diff of two lists adds exactly the new pids and removes exactly the gone ones.

use bytes::BytesMut;

use super::pieces;
use crate::discovery::adb::{decode_message, diff_pids, parse_devices, parse_hex4, parse_pids, AdbError, MAX_MESSAGE_LEN};

pub fn check(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else { return };
    match mode & 3 {
        0 => stream(mode >> 2, bytes),
        1 => devices(bytes),
        _ => pids(bytes),
    }
}

fn stream(seed: u8, bytes: &[u8]) {
    let mut buf = BytesMut::new();
    let (mut taken, mut fed) = (0usize, 0usize);
    for piece in pieces(seed, bytes) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match decode_message(&mut buf, MAX_MESSAGE_LEN) {
                Ok(Some(msg)) => {
                    assert!(msg.len() <= MAX_MESSAGE_LEN);
                    let head = &bytes[taken..taken + 4];
                    let digits = [head[0], head[1], head[2], head[3]];
                    assert_eq!(parse_hex4(digits).ok(), Some(msg.len()));
                    assert_eq!(format!("{:04x}", msg.len()), String::from_utf8_lossy(head).to_ascii_lowercase());
                    assert_eq!(&msg[..], &bytes[taken + 4..taken + 4 + msg.len()]);
                    taken += 4 + msg.len();
                }
                Ok(None) => {
                    // Waiting: either fewer than 4 digits, or a message within the cap.
                    assert!(buf.len() < 4 + MAX_MESSAGE_LEN);
                    break;
                }
                Err(AdbError::TooLarge { len, max }) => return assert!(len > max && max == MAX_MESSAGE_LEN),
                Err(AdbError::BadLength(d)) => return assert_eq!(&d[..], &bytes[taken..taken + 4]),
                Err(e) => panic!("decode_message gave {e}"),
            }
        }
        assert_eq!(taken + buf.len(), fed, "bytes lost or invented");
    }
}

fn devices(bytes: &[u8]) {
    let Ok(list) = parse_devices(bytes) else { return };
    let mut again = String::new();
    for d in &list {
        assert!(!d.serial.is_empty() && !d.state.is_empty());
        assert!(!d.serial.contains('\n') && !d.state.contains('\n'));
        again.push_str(&format!("{}\t{}\n", d.serial, d.state));
    }
    assert_eq!(parse_devices(again.as_bytes()).ok(), Some(list), "device list changed in a round trip: {again:?}");
}

fn pids(bytes: &[u8]) {
    let half = bytes.len() / 2;
    let (Ok(old), Ok(new)) = (parse_pids(&bytes[..half]), parse_pids(bytes)) else { return };
    assert!(!new.contains(&0));
    let written: String = new.iter().map(|p| format!("{p}\n")).collect();
    assert_eq!(parse_pids(written.as_bytes()).ok().as_ref(), Some(&new));
    let d = diff_pids(&old, &new);
    assert!(d.added.iter().all(|p| new.contains(p) && !old.contains(p)));
    assert!(d.removed.iter().all(|p| old.contains(p) && !new.contains(p)));
    assert_eq!(old.len() + d.added.len() - d.removed.len(), new.len());
    assert!(d.added.windows(2).all(|w| w[0] < w[1]) && d.removed.windows(2).all(|w| w[0] < w[1]));
}
