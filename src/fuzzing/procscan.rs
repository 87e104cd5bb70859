//! The JVM scan's output, as a remote host prints it (`discovery::jvms`): records in a
//! stream cut into any reads, taken into a host view, which then says what to ask next and
//! which JVMs it found.
//!
//! Input: one byte that cuts the stream into reads, then the bytes the shell printed, with
//! the marker `fz` (`@TAG ARG\nBODY\n@@fz\n` records). What must hold:
//! - the view built from the stream in pieces equals the one built from it whole, and the
//!   same records come out either way (or the same error, at the same place);
//! - every bound holds: processes within `MAX_PROCS`, each one's sockets and environment
//!   within theirs;
//! - requests name only processes the view has, each in one request of each kind;
//! - a JVM reached at an address is reached on the port it reports, and every found JVM is a
//!   process of the view with a listening agent;
//! - a record written back reads back the same.

use super::pieces;
use crate::discovery::jvms::view::{HostView, MAX_ENV_VALUE, MAX_FD_SOCKETS, MAX_NET_SOCKETS, MAX_PROCS};
use crate::discovery::jvms::wire::{self, WireError};
use crate::discovery::jvms::{found, take_records, Reach};

const NONCE: &str = "fz";

pub fn check(data: &[u8]) {
    let Some((&seed, bytes)) = data.split_first() else { return };
    let whole = feed(std::iter::once(bytes));
    let cut = feed(pieces(seed, bytes));
    assert_eq!(whole.0, cut.0, "the same view whole and in pieces");
    assert_eq!(whole.1, cut.1, "the same outcome whole and in pieces");
    let view = whole.0;
    assert!(view.procs.len() <= MAX_PROCS);
    for p in view.procs.values() {
        assert!(p.fd_sockets.as_ref().is_none_or(|f| f.len() <= MAX_FD_SOCKETS));
        assert!(p.net_sockets.as_ref().is_none_or(|t| t.len() <= MAX_NET_SOCKETS));
        assert!(p.env.len() <= 2 && p.env.iter().all(|e| e.len() <= MAX_ENV_VALUE));
    }
    let requests = view.requests();
    for r in &requests {
        for pid in &r.pids {
            assert!(view.procs.contains_key(pid), "{} asks for {pid}, unknown", r.command);
        }
        let mut sorted = r.pids.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), r.pids.len(), "a pid twice in {}", r.command);
    }
    for f in found::found(&view) {
        let p = view.procs.get(&f.pid).expect("a found JVM is a process of the view");
        assert!(found::agent_of(p).is_some_and(|a| a.agent.listens()));
        if let Reach::At(addr) = f.reach {
            assert_eq!(Some(addr.port()), f.port);
        }
    }
    round_trip(bytes);
}

/// Takes the stream's records into a fresh view; the outcome is how many rounds ended
/// (`done` records), or the error that stopped it.
fn feed<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> (HostView, Result<usize, WireError>) {
    let mut view = HostView::default();
    let mut buf = Vec::new();
    let mut rounds = 0;
    let end = format!("\n@@{NONCE}\n");
    for piece in pieces {
        let from = buf.len().saturating_sub(end.len());
        buf.extend_from_slice(piece);
        // As the shell scan does: records are parsed when one may have ended, not per read.
        if wire::find(&buf[from..], end.as_bytes()).is_some() {
            if let Err(e) = take_all(&mut view, &mut buf, &mut rounds) {
                return (view, Err(e));
            }
        }
    }
    // And as it does when the output stops short of a round's end: what is left is taken
    // once more.
    let last = take_all(&mut view, &mut buf, &mut rounds);
    (view, last.map(|()| rounds))
}

fn take_all(view: &mut HostView, buf: &mut Vec<u8>, rounds: &mut usize) -> Result<(), WireError> {
    while take_records(view, buf, NONCE)? {
        *rounds += 1;
    }
    Ok(())
}

fn round_trip(bytes: &[u8]) {
    let mut rest = bytes;
    while let Ok(Some((r, n))) = wire::next_record(rest, NONCE) {
        let mut out = Vec::new();
        wire::write_record(&mut out, r.tag, r.arg, r.body, NONCE);
        let (again, used) = wire::next_record(&out, NONCE).expect("written records read").expect("whole");
        assert_eq!((again, used), (r, out.len()));
        rest = &rest[n..];
    }
}
