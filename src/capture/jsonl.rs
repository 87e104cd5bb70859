//! JSON-lines capture format: one object per record, written by [`JsonlEncoder`] and read
//! back by the reader through the same [`JsonLine`] type so the two cannot drift apart.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ddm::{chunk_summaries, is_ddm};
use super::pairing::Pairing;
use super::record::{
    ConnInfo, DataKind, Direction, HeadKind, Leg, PacketHead, Record, JDWP_HEADER_LEN,
};
use super::time::format_rfc3339_micros;
use crate::jdwp::names::{display_command, error_name};

/// Hook for a full DDM decoder: gets the DDM payload (the chunk stream after the JDWP
/// header, possibly cut short by the snaplen), whether it comes from the VM, and whether
/// the packet is a reply; returns the `chunks` array of the line.
pub type ChunkDecoder = fn(payload: &[u8], from_vm: bool, is_reply: bool) -> Vec<Value>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonConn {
    pub id: u64,
    pub vm: String,
    pub leg: Leg,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

impl From<&ConnInfo> for JsonConn {
    fn from(c: &ConnInfo) -> Self {
        JsonConn {
            id: c.id,
            vm: c.vm.clone(),
            leg: c.leg,
            client: c.client,
            server: c.server,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Open,
    Close,
    Handshake,
    Packet,
    Body,
}

/// One line of a JSON-lines capture. Optional fields are omitted when absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLine {
    pub time: String,
    pub conn: JsonConn,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<Direction>,
    pub kind: LineKind,
    /// Packet id as seen on this leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// Id before the proxy rewrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orig_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<bool>,
    /// For commands; for replies too when the command they answer was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd_set: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_name: Option<String>,
    /// JDWP length field for packets; bytes on the wire for handshakes and bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    /// A reply the proxy made from the near cache (the VM's earlier answer), not the VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near: Option<bool>,
    /// Present on every data line: the record's bytes were cut to the snaplen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// A packet record shorter than the 11-byte header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<Value>>,
}

impl JsonLine {
    fn new(time: String, conn: &ConnInfo, kind: LineKind) -> Self {
        JsonLine {
            time,
            conn: conn.into(),
            dir: None,
            kind,
            id: None,
            orig_id: None,
            flags: None,
            reply: None,
            cmd_set: None,
            cmd: None,
            command: None,
            error: None,
            error_name: None,
            length: None,
            latency_us: None,
            near: None,
            truncated: None,
            malformed: None,
            chunks: None,
        }
    }
}

/// Turns records into JSON lines, keeping per-connection command/reply pairing.
#[derive(Debug, Default)]
pub struct JsonlEncoder {
    pairing: Pairing,
    chunk_decoder: Option<ChunkDecoder>,
    /// Bytes kept of each packet in all (head and body records together).
    snaplen: usize,
}

impl JsonlEncoder {
    pub fn new(chunk_decoder: Option<ChunkDecoder>) -> Self {
        Self::with_snaplen(chunk_decoder, usize::MAX)
    }

    /// A streamed packet's head record holds only its header, so whether the packet as a
    /// whole was cut is known from its length and the snaplen, not from that record.
    pub fn with_snaplen(chunk_decoder: Option<ChunkDecoder>, snaplen: usize) -> Self {
        JsonlEncoder { pairing: Pairing::new(), chunk_decoder, snaplen }
    }

    /// The line for one record (no trailing newline).
    pub fn line(&mut self, r: &Record) -> JsonLine {
        let time = format_rfc3339_micros(r.time());
        match r {
            Record::Open { conn, .. } => JsonLine::new(time, conn, LineKind::Open),
            Record::Close { conn, .. } => {
                self.pairing.close(conn.id);
                JsonLine::new(time, conn, LineKind::Close)
            }
            Record::Data {
                conn,
                dir,
                kind,
                bytes,
                orig_len,
                ..
            } => {
                let line_kind = match kind {
                    DataKind::Handshake => LineKind::Handshake,
                    DataKind::Packet { .. } | DataKind::NearReply => LineKind::Packet,
                    DataKind::Body => LineKind::Body,
                };
                let mut l = JsonLine::new(time, conn, line_kind);
                l.dir = Some(*dir);
                l.truncated = Some(*orig_len > bytes.len());
                l.length = Some(*orig_len as u64);
                if let DataKind::Packet { .. } | DataKind::NearReply = kind {
                    self.fill_packet(&mut l, conn.id, *dir, bytes);
                    if l.length.is_some_and(|len| len as usize > self.snaplen) {
                        l.truncated = Some(true);
                    }
                }
                if let DataKind::Packet { orig_id, latency } = kind {
                    l.orig_id = *orig_id;
                    l.latency_us = latency.map(|d| d.as_micros().min(u128::from(u64::MAX)) as u64);
                }
                if *kind == DataKind::NearReply {
                    l.near = Some(true);
                }
                l
            }
        }
    }

    fn fill_packet(&mut self, l: &mut JsonLine, conn: u64, dir: Direction, bytes: &[u8]) {
        let Some(head) = PacketHead::parse(bytes) else {
            l.malformed = Some(true);
            return;
        };
        l.id = Some(head.id);
        l.flags = Some(head.flags);
        l.reply = Some(head.is_reply());
        l.length = Some(u64::from(head.length));
        let command = match head.kind {
            HeadKind::Command { set, cmd } => {
                self.pairing.command(conn, dir, head.id, set, cmd);
                Some((set, cmd))
            }
            HeadKind::Reply { error } => {
                l.error = Some(error);
                l.error_name = error_name(error).map(str::to_string);
                self.pairing.reply(conn, dir, head.id)
            }
        };
        if let Some((set, cmd)) = command {
            l.cmd_set = Some(set);
            l.cmd = Some(cmd);
            l.command = Some(display_command(set, cmd));
            if is_ddm(set, cmd) {
                let payload = bytes.get(JDWP_HEADER_LEN..).unwrap_or(&[]);
                l.chunks = Some(match self.chunk_decoder {
                    Some(decode) => decode(payload, dir.from_vm(), head.is_reply()),
                    None => chunk_summaries(payload),
                });
            }
        }
    }

    /// Appends the record's line and a newline to `out`.
    pub fn encode(&mut self, r: &Record, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let line = self.line(r);
        serde_json::to_writer(&mut *out, &line)?;
        out.push(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    fn conn() -> Arc<ConnInfo> {
        Arc::new(ConnInfo {
            id: 3,
            vm: "com.example".into(),
            leg: Leg::Debugger,
            client: SocketAddr::from(([127, 0, 0, 1], 5000)),
            server: SocketAddr::from(([127, 0, 0, 1], 8700)),
        })
    }

    fn packet(
        dir: Direction,
        head: PacketHead,
        payload: &[u8],
        latency: Option<Duration>,
    ) -> Record {
        let mut b = head.to_bytes().to_vec();
        b.extend_from_slice(payload);
        let len = b.len();
        Record::Data {
            time: UNIX_EPOCH + Duration::from_micros(1_500_000),
            conn: conn(),
            dir,
            kind: DataKind::Packet {
                orig_id: Some(99),
                latency,
            },
            bytes: Bytes::from(b),
            orig_len: len,
        }
    }

    fn parse(enc: &mut JsonlEncoder, r: &Record) -> Value {
        let mut out = Vec::new();
        enc.encode(r, &mut out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.last(), Some(&b'\n'));
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_near_reply_is_a_packet_line_marked_near() {
        let mut enc = JsonlEncoder::new(None);
        let cmd = PacketHead { length: 11 + 8, id: 7, flags: 0, kind: HeadKind::Command { set: 2, cmd: 1 } };
        let v = parse(&mut enc, &packet(Direction::ToServer, cmd, &[0; 8], None));
        assert_eq!(v.get("near"), None, "a relayed packet is not marked");
        let reply = PacketHead { length: 11 + 4, id: 7, flags: 0x80, kind: HeadKind::Reply { error: 0 } };
        let mut b = reply.to_bytes().to_vec();
        b.extend_from_slice(&[0, 0, 0, 0]);
        let r = Record::Data {
            time: UNIX_EPOCH,
            conn: conn(),
            dir: Direction::ToClient,
            kind: DataKind::NearReply,
            orig_len: b.len(),
            bytes: Bytes::from(b),
        };
        let v = parse(&mut enc, &r);
        assert_eq!(v["kind"], "packet");
        assert_eq!(v["near"], true);
        assert_eq!(v["id"].as_u64(), Some(7));
        assert_eq!(v["command"], "ReferenceType.Signature", "paired with its command like any reply");
        assert_eq!(v.get("orig_id"), None);
    }

    #[test]
    fn command_and_ddm_reply_lines() {
        let mut enc = JsonlEncoder::new(None);
        let mut chunk = b"HELO".to_vec();
        chunk.extend_from_slice(&4u32.to_be_bytes());
        chunk.extend_from_slice(&[0, 0, 0, 1]);
        let cmd = PacketHead {
            length: 11 + 12,
            id: 5,
            flags: 0,
            kind: HeadKind::Command { set: 0xC7, cmd: 1 },
        };
        let v = parse(&mut enc, &packet(Direction::ToServer, cmd, &chunk, None));
        assert_eq!(v["time"], "1970-01-01T00:00:01.500000Z");
        assert_eq!(v["conn"]["leg"], "debugger");
        assert_eq!(v["conn"]["client"], "127.0.0.1:5000");
        assert_eq!(v["dir"], "to_server");
        assert_eq!(v["kind"], "packet");
        assert_eq!(
            (v["id"].as_u64(), v["orig_id"].as_u64()),
            (Some(5), Some(99))
        );
        assert_eq!(
            (v["reply"].as_bool(), v["command"].as_str()),
            (Some(false), Some("DDM.Chunk"))
        );
        assert_eq!(
            v["chunks"],
            serde_json::json!([{"type": "HELO", "length": 4}])
        );
        assert_eq!(v["truncated"], false);

        let reply = PacketHead {
            length: 11 + 12,
            id: 5,
            flags: 0x80,
            kind: HeadKind::Reply { error: 0 },
        };
        let v = parse(
            &mut enc,
            &packet(
                Direction::ToClient,
                reply,
                &chunk,
                Some(Duration::from_micros(120)),
            ),
        );
        assert_eq!(
            (v["reply"].as_bool(), v["error"].as_u64()),
            (Some(true), Some(0))
        );
        assert_eq!(
            (v["error_name"].as_str(), v["latency_us"].as_u64()),
            (Some("NONE"), Some(120))
        );
        assert_eq!(
            v["command"], "DDM.Chunk",
            "reply paired with its DDM command"
        );
        assert_eq!(v["chunks"][0]["type"], "HELO");
    }

    #[test]
    fn chunk_decoder_hook_is_used() {
        fn deco(payload: &[u8], from_vm: bool, is_reply: bool) -> Vec<Value> {
            vec![serde_json::json!({"n": payload.len(), "from_vm": from_vm, "reply": is_reply})]
        }
        let mut enc = JsonlEncoder::new(Some(deco));
        let cmd = PacketHead {
            length: 13,
            id: 1,
            flags: 0,
            kind: HeadKind::Command { set: 0xC7, cmd: 1 },
        };
        let v = parse(&mut enc, &packet(Direction::ToClient, cmd, &[1, 2], None));
        assert_eq!(
            v["chunks"],
            serde_json::json!([{"n": 2, "from_vm": true, "reply": false}])
        );
    }

    #[test]
    fn open_close_handshake_and_malformed_lines() {
        let mut enc = JsonlEncoder::new(None);
        let t = UNIX_EPOCH;
        let v = parse(
            &mut enc,
            &Record::Open {
                time: t,
                conn: conn(),
            },
        );
        assert_eq!((v["kind"].as_str(), v.get("dir")), (Some("open"), None));
        let hs = Record::Data {
            time: t,
            conn: conn(),
            dir: Direction::ToServer,
            kind: DataKind::Handshake,
            bytes: Bytes::from_static(b"JDWP-Handshake"),
            orig_len: 14,
        };
        let v = parse(&mut enc, &hs);
        assert_eq!(
            (v["kind"].as_str(), v["length"].as_u64()),
            (Some("handshake"), Some(14))
        );
        let bad = Record::Data {
            time: t,
            conn: conn(),
            dir: Direction::ToServer,
            kind: DataKind::Packet {
                orig_id: None,
                latency: None,
            },
            bytes: Bytes::from_static(&[0, 0, 0]),
            orig_len: 300,
        };
        let v = parse(&mut enc, &bad);
        assert_eq!(
            (v["malformed"].as_bool(), v["truncated"].as_bool()),
            (Some(true), Some(true))
        );
        let v = parse(
            &mut enc,
            &Record::Close {
                time: t,
                conn: conn(),
            },
        );
        assert_eq!(v["kind"], "close");
    }
}
