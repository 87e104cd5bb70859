//! The near side's handling of what a far side sends: any bytes, cut into reads of any size,
//! decoded and taken as the near link takes them after it said Hello (with three channels
//! being opened and their Opens not yet acknowledged): the first frame judged as the far
//! side's answer, every later one through the resume state, the channel table, and, for VM
//! lists, into found JVMs, registry keys and local sockets as the host's report makes them.
//!
//! Input: one seed byte (how the stream is cut into reads), then the stream. What must hold
//! besides "no panic":
//! - a connection goes on only after a Hello fit for this near side, whose ack fits what was
//!   sent; anything else ends it with a reason;
//! - what ends a connection is a typed reason whose text stays short (it goes to the log);
//! - a far side cannot make the near side keep more: the channel table never grows past the
//!   opens the near side asked for, an open result opens only a channel being opened, data
//!   reaches only open channels and never more bytes than came in;
//! - in-order frames are delivered once each, acks never pass what was sent, and every frame
//!   the near side writes back (pongs, acks, replays) encodes;
//! - a VM list names at most `MAX_VMS` VMs, each with a key of this host and a socket in the
//!   daemon's folder named by number (never by anything the far side said), no two alike.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::pieces;
use crate::remote::protocol::codec::FarCodec;
use crate::remote::protocol::frame::{OpenStatus, VmInfo, MAX_VMS};
use crate::remote::protocol::resume::{Outbound, Resume};
use crate::remote::protocol::{Body, Frame};
use crate::remote::near::channels::{Channels, Opened, Route};
use crate::remote::near::found::found_jvm;
use crate::remote::near::inbound::{self, First, Inbound};
use crate::remote::naming::Names;

/// Opens the near side sent before the far side's first frame.
const OPENS: u32 = 3;
/// The longest reason a connection may end with: the frame's own texts are at most
/// `MAX_TEXT` and versions `MAX_VERSION`; the words around them are few.
const MAX_REASON: usize = 1200;
const DIR: &str = "/run/jdwpmux/ssh-1";

struct Near {
    resume: Resume,
    channels: Channels<u32, ()>,
    /// Bytes delivered to each open channel.
    delivered: HashMap<u32, usize>,
    names: Names,
    hello: bool,
    ack_at: Option<Duration>,
}

impl Near {
    fn new() -> Near {
        let mut near = Near { resume: Resume::new(Outbound::new(1 << 20)), channels: Channels::default(), delivered: HashMap::new(), names: Names::default(), hello: false, ack_at: None };
        for vm in 0..OPENS {
            let channel = near.channels.begin(vm);
            let sent = near.resume.send_beyond(channel, Body::Open { vm });
            assert!(sent.is_ok(), "an open is sent");
        }
        near
    }

    /// One frame from the far side; false when the connection ends with it.
    fn take(&mut self, frame: Frame) -> bool {
        if !self.hello {
            return self.first(frame);
        }
        let before = self.resume.inn.last();
        let what = inbound::judge(&mut self.resume, frame);
        assert_eq!(self.resume.inn.last(), before + u64::from(what.delivered()), "delivered once, in order: {what:?}");
        assert!(self.resume.out.acked() <= self.resume.out.sent());
        if what.delivered() {
            if let Some(ack) = self.resume.after_delivery(&mut self.ack_at, Duration::ZERO) {
                writes(&ack);
                self.ack_at = None;
            }
        }
        match what {
            Inbound::Pong(stamp) => writes(&self.resume.link(Body::Pong(stamp))),
            Inbound::Nothing => {}
            Inbound::Lose(why) => return reason(&why.to_string()),
            Inbound::TakenOver(text) => return reason(&text),
            Inbound::VmList(vms) => self.listed(&vms),
            Inbound::Opened { channel, status, .. } => match self.channels.opened(channel, status == OpenStatus::Ok) {
                Opened::Ok(_) => {
                    self.channels.set_open(channel, ());
                    self.delivered.insert(channel, 0);
                }
                Opened::Failed(_) | Opened::Stray => {}
            },
            Inbound::Closed { channel, .. } => {
                self.channels.close(channel);
                self.delivered.remove(&channel);
            }
            Inbound::Data { channel, bytes } => match self.channels.route(channel) {
                Route::Deliver(()) => *self.delivered.get_mut(&channel).expect("an open channel has a count") += bytes.len(),
                Route::Drop => {}
                Route::Protocol(what) => return reason(&crate::remote::near::inbound::Broken::Channel { what, channel }.to_string()),
            },
        }
        assert!(self.channels.len() <= OPENS as usize, "{} channels from {OPENS} opens", self.channels.len());
        assert!(self.delivered.keys().all(|c| *c >= 1 && *c <= OPENS), "data for a channel never opened");
        true
    }

    fn first(&mut self, frame: Frame) -> bool {
        let ack = frame.ack;
        match inbound::first(frame, true) {
            First::Hello(_) => match self.resume.reconnect(ack) {
                Ok(replay) => {
                    assert!(replay.len() <= OPENS as usize);
                    replay.iter().for_each(writes);
                    self.hello = true;
                    true
                }
                Err(e) => reason(&e.to_string()),
            },
            First::Refused(t) | First::SessionGone(t) | First::Retry(t) | First::Busy(t) | First::TakenOver(t) => reason(&t),
        }
    }

    /// A VM list through the host report's steps: found JVMs, keys and sockets.
    fn listed(&mut self, vms: &[VmInfo]) {
        assert!(vms.len() <= MAX_VMS, "{} VMs listed", vms.len());
        let login = Some(1000);
        let found: Vec<_> = vms.iter().map(|v| found_jvm(v, login)).collect();
        let named = self.names.name("box", Path::new(DIR), "h0", login, &found);
        assert_eq!(named.len(), found.len());
        let mut keys = HashSet::new();
        let mut sockets = HashSet::new();
        for n in named.into_iter().flatten() {
            assert!(n.key.starts_with("ssh:box/"), "{}", n.key);
            let file = n.socket.strip_prefix(DIR).ok().and_then(|f| f.to_str()).unwrap_or_default();
            let number = file.strip_prefix("h0.").and_then(|f| f.strip_suffix(".sock")).unwrap_or_default();
            assert!(!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()), "socket {}", n.socket.display());
            assert!(keys.insert(n.key.clone()), "two VMs of one list keyed {}", n.key);
            assert!(sockets.insert(n.socket.clone()), "two VMs of one list on {}", n.socket.display());
        }
    }
}

/// A frame the near side writes encodes.
fn writes(frame: &Frame) {
    let mut out = BytesMut::new();
    assert!(FarCodec.encode(frame, &mut out).is_ok(), "the near side cannot encode {frame:?}");
}

/// A connection ends with a short reason.
fn reason(text: &str) -> bool {
    assert!(!text.is_empty() && text.len() <= MAX_REASON, "reason of {} bytes: {text:.200}", text.len());
    false
}

pub fn check(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else { return };
    let mut near = Near::new();
    let mut buf = BytesMut::new();
    let mut fed = 0usize;
    for piece in pieces(seed, stream) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match FarCodec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    if !near.take(frame) {
                        return;
                    }
                }
                Ok(None) => break,
                // The link drops the connection with the codec's error.
                Err(e) => {
                    reason(&format!("bad stream: {e}"));
                    return;
                }
            }
        }
        let total: usize = near.delivered.values().sum();
        assert!(total <= fed, "{total} bytes delivered from {fed}");
    }
}

/// The seeds of `fuzz/corpus/nearlink`: what a far side sends after a near side's Hello
/// with three opens, from a well-behaved session to the hostile, each named `NAME-XX` after
/// its first (mode) byte. Written by `cargo run --features fuzzing --example fuzz_seeds -- --nearlink DIR`.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    use crate::remote::protocol::frame::{ByeReason, CloseReason, Hello, MainKind, Role, SessionKey};
    // A far side of protocol 2, as most of the committed corpus holds: a near side of 3
    // still takes it. `protocol-3` answers with 3.
    let hello_of = |proto, role, ack, resumed| Frame {
        channel: 0,
        seq: 0,
        ack,
        body: Body::Hello(Hello {
            role,
            proto_min: proto,
            proto_max: proto,
            binary: "0.1.0".into(),
            session: SessionKey { id: [1; 16], token: [2; 16] },
            hold_secs: 300,
            resumed,
            gather: false,
        }),
    };
    let hello = |role, ack, resumed| hello_of(2, role, ack, resumed);
    let vm = |key, pid, main: &str| VmInfo {
        key,
        pid,
        port: 8000,
        listening: true,
        attached: false,
        waiting: Some(false),
        other_net: false,
        bind: Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
        user: "app".into(),
        main: Some((MainKind::Class, main.into())),
        unreachable: String::new(),
        command: format!("java -agentlib:jdwp=transport=dt_socket,server=y,address=8000 {main}"),
        place: String::new(),
    };
    let n = |seq, channel, body| Frame { channel, seq, ack: 3, body };
    let link = |body| Frame { channel: 0, seq: 0, ack: 3, body };
    let session = vec![
        hello(Role::Far, 3, false),
        n(1, 0, Body::VmList(vec![vm(1, 100, "Billing"), vm(2, 100, "../../etc/passwd\n\u{1b}[31m"), vm(3, 101, "Billing")])),
        n(2, 1, Body::Opened { status: OpenStatus::Ok, text: String::new() }),
        n(3, 2, Body::Opened { status: OpenStatus::ConnectFailed, text: "connection refused".into() }),
        n(4, 1, Body::Data(bytes::Bytes::from_static(b"JDWP-Handshake"))),
        link(Body::Ping(7)),
        link(Body::Ack),
        n(5, 1, Body::Data(bytes::Bytes::from_static(&[0, 0, 0, 11, 0, 0, 0, 1, 0x80, 0, 0]))),
        n(6, 1, Body::Close { reason: CloseReason::VmClosed, text: "the VM exited".into() }),
        n(7, 1, Body::Data(bytes::Bytes::from_static(b"late"))),
        n(8, 3, Body::Opened { status: OpenStatus::Other(9), text: "later".into() }),
        link(Body::Bye { reason: ByeReason::ShuttingDown, text: "hold ran out".into() }),
    ];
    let hostile = vec![hello(Role::Far, 3, true), n(1, 3, Body::Opened { status: OpenStatus::Ok, text: String::new() }), n(2, 9, Body::Data(bytes::Bytes::from_static(b"never opened")))];
    let refusal = vec![Frame { channel: 0, seq: 0, ack: 0, body: Body::Bye { reason: ByeReason::Version, text: "jdwpmux 9.0.0 speaks protocol 7".into() } }];
    let odd_hello = vec![hello(Role::Near, 0, false)];
    let ack_ahead = vec![hello(Role::Far, 3, false), Frame { channel: 0, seq: 0, ack: 4, body: Body::Ack }];
    // Once gave two VMs one key and one socket (see `jvms::keys`).
    let one_pid = vec![hello(Role::Far, 3, false), n(1, 0, Body::VmList((1..=5).map(|k| vm(k, 100, "Billing")).collect()))];
    // A far side of protocol 3: a stop's answers come inside the channel's Data, as a JDWP
    // command of set 0xF0 under a far-side id (the near link passes them on unread).
    let answers = [&[0u8, 0, 0, 0x1A, 0xF0, 0, 0, 1, 0, 0xF0, 1][..], &[0, 0, 0, 9, 2], &[0; 8], &[0, 0]].concat();
    let protocol_3 = vec![
        hello_of(3, Role::Far, 3, false),
        n(1, 0, Body::VmList(vec![vm(1, 100, "Billing")])),
        n(2, 1, Body::Opened { status: OpenStatus::Ok, text: String::new() }),
        n(3, 1, Body::Data(bytes::Bytes::from_static(b"JDWP-Handshake"))),
        n(4, 1, Body::Data(bytes::Bytes::from(answers))),
    ];
    let mut out = Vec::new();
    for (name, frames) in [("session", session), ("protocol-3", protocol_3), ("hostile", hostile), ("refusal", refusal), ("odd-hello", odd_hello), ("ack-ahead", ack_ahead), ("one-pid-listed-five-times", one_pid)] {
        let mut bytes = BytesMut::new();
        for f in &frames {
            assert!(FarCodec.encode(f, &mut bytes).is_ok(), "a seed frame encodes: {f:?}");
        }
        for seed in [0u8, 3, 0x11] {
            let mut data = vec![seed];
            data.extend_from_slice(&bytes);
            out.push((name, data));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed passes its check and is committed as it is made now (a change to the
    /// seeds is written out with `fuzz_seeds --nearlink`).
    #[test]
    fn every_seed_passes_and_is_in_the_corpus() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/nearlink");
        for (name, data) in seeds() {
            check(&data);
            let file = dir.join(format!("{name}-{:02x}", data[0]));
            let committed = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(committed == data, "{} differs from seeds()", file.display());
        }
    }
}

