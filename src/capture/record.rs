//! The records the proxy hands to the capture writer, and the small JDWP header parser the
//! capture code needs to describe them (kept here so capture does not depend on the relay).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Which TCP connection of a proxied session a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Leg {
    /// debugger <-> proxy
    Debugger,
    /// proxy <-> VM
    Vm,
}

impl Leg {
    pub fn as_str(self) -> &'static str {
        match self {
            Leg::Debugger => "debugger",
            Leg::Vm => "vm",
        }
    }
}

/// One TCP connection. `client` is the side that connected (the debugger, or the proxy on
/// the VM leg) and `server` the listener (the proxy, or the VM), so on both legs
/// `Direction::ToClient` travels away from the VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// Unique per connection for the life of the process.
    pub id: u64,
    /// The VM this connection belongs to (process name, pid or device:port: the proxy decides).
    pub vm: String,
    pub leg: Leg,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    ToServer,
    ToClient,
}

impl Direction {
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ToServer => Direction::ToClient,
            Direction::ToClient => Direction::ToServer,
        }
    }

    /// True when the bytes come from the VM side of the session (see [`ConnInfo`]).
    pub fn from_vm(self) -> bool {
        self == Direction::ToClient
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ToServer => "to_server",
            Direction::ToClient => "to_client",
        }
    }
}

/// What the bytes of a [`Record::Data`] are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// The 14-byte "JDWP-Handshake".
    Handshake,
    /// A JDWP packet, starting with its 11-byte header (possibly only its head when the
    /// rest follows as `Body` records).
    Packet {
        /// The id before the proxy rewrote it, when it did.
        orig_id: Option<u32>,
        /// For a reply: time since the command it answers was seen.
        latency: Option<Duration>,
    },
    /// A further piece of a large packet, streamed after its head.
    Body,
    /// A whole reply packet the proxy made itself from the VM's earlier answer to the same
    /// command (the near cache): on the debugger leg, with no VM packet behind it.
    NearReply,
}

/// One event of proxied traffic.
#[derive(Debug, Clone)]
pub enum Record {
    Open {
        time: SystemTime,
        conn: Arc<ConnInfo>,
    },
    Data {
        time: SystemTime,
        conn: Arc<ConnInfo>,
        dir: Direction,
        kind: DataKind,
        /// The bytes as relayed, possibly cut to the capture's snaplen.
        bytes: Bytes,
        /// Length on the wire of this piece (>= bytes.len()).
        orig_len: usize,
    },
    Close {
        time: SystemTime,
        conn: Arc<ConnInfo>,
    },
}

impl Record {
    pub fn time(&self) -> SystemTime {
        match self {
            Record::Open { time, .. } | Record::Data { time, .. } | Record::Close { time, .. } => {
                *time
            }
        }
    }

    pub fn conn(&self) -> &Arc<ConnInfo> {
        match self {
            Record::Open { conn, .. } | Record::Data { conn, .. } | Record::Close { conn, .. } => {
                conn
            }
        }
    }
}

/// Length of a JDWP packet header.
pub const JDWP_HEADER_LEN: usize = 11;
/// The flag bit marking a reply.
pub const REPLY_FLAG: u8 = 0x80;
/// The handshake both sides send before any packet.
pub const HANDSHAKE: &[u8; 14] = b"JDWP-Handshake";

/// Command or reply part of a JDWP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadKind {
    Command { set: u8, cmd: u8 },
    Reply { error: u16 },
}

/// A parsed 11-byte JDWP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHead {
    /// Total packet length, header included.
    pub length: u32,
    pub id: u32,
    pub flags: u8,
    pub kind: HeadKind,
}

impl PacketHead {
    /// Parses the header at the start of `b`; `None` when fewer than 11 bytes are present.
    pub fn parse(b: &[u8]) -> Option<PacketHead> {
        let h: &[u8; JDWP_HEADER_LEN] = b.get(..JDWP_HEADER_LEN)?.try_into().ok()?;
        let length = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let id = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        let flags = h[8];
        let kind = if flags & REPLY_FLAG != 0 {
            HeadKind::Reply {
                error: u16::from_be_bytes([h[9], h[10]]),
            }
        } else {
            HeadKind::Command {
                set: h[9],
                cmd: h[10],
            }
        };
        Some(PacketHead {
            length,
            id,
            flags,
            kind,
        })
    }

    pub fn is_reply(&self) -> bool {
        matches!(self.kind, HeadKind::Reply { .. })
    }

    /// Serializes the header (used by tests and by callers building packets).
    pub fn to_bytes(&self) -> [u8; JDWP_HEADER_LEN] {
        let mut out = [0u8; JDWP_HEADER_LEN];
        out[..4].copy_from_slice(&self.length.to_be_bytes());
        out[4..8].copy_from_slice(&self.id.to_be_bytes());
        out[8] = self.flags;
        match self.kind {
            HeadKind::Command { set, cmd } => {
                out[9] = set;
                out[10] = cmd;
            }
            HeadKind::Reply { error } => out[9..].copy_from_slice(&error.to_be_bytes()),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_command_and_reply_heads() {
        let cmd = [0, 0, 0, 11, 0, 0, 0, 5, 0, 1, 1];
        assert_eq!(
            PacketHead::parse(&cmd),
            Some(PacketHead {
                length: 11,
                id: 5,
                flags: 0,
                kind: HeadKind::Command { set: 1, cmd: 1 }
            })
        );
        let reply = [0, 0, 1, 0, 0x12, 0x34, 0x56, 0x78, 0x80, 0, 112, 9, 9];
        let h = PacketHead::parse(&reply);
        assert_eq!(
            h,
            Some(PacketHead {
                length: 256,
                id: 0x1234_5678,
                flags: 0x80,
                kind: HeadKind::Reply { error: 112 }
            })
        );
        assert_eq!(h.map(|h| h.to_bytes().to_vec()), Some(reply[..11].to_vec()));
        assert_eq!(PacketHead::parse(&reply[..10]), None);
        assert_eq!(PacketHead::parse(&[]), None);
    }

    #[test]
    fn direction_helpers() {
        assert_eq!(Direction::ToServer.reverse(), Direction::ToClient);
        assert!(Direction::ToClient.from_vm());
        assert!(!Direction::ToServer.from_vm());
        assert_eq!(Leg::Vm.as_str(), "vm");
    }
}
