//! One-line text rendering of decoded capture records, in the spirit of jdwpspy:
//! `12:00:01.123456 #3 dbg 127.0.0.1:5000 -> proxy  id=5 VirtualMachine.Version len=11`.

use std::time::Duration;

use super::reader::{ConnDesc, DecodedEvent, DecodedPacket, DecodedRecord, PacketKind};
use super::record::{Direction, Leg};
use super::time::format_time_of_day;
use crate::jdwp::names::{display_command, display_error, event_kind_name, EVENT_COMMAND_SET};

/// "120µs", "12.345ms", "1.234s".
pub fn format_latency(d: Duration) -> String {
    let us = d.as_micros();
    if us < 1000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{:.3}ms", us as f64 / 1000.0)
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

fn endpoints(c: &ConnDesc, dir: Option<Direction>) -> String {
    let arrow = if dir == Some(Direction::ToClient) {
        "<-"
    } else {
        "->"
    };
    match c.leg {
        Some(Leg::Debugger) => format!("dbg {} {arrow} proxy", c.client),
        Some(Leg::Vm) => format!("proxy {arrow} vm {}", c.server),
        None => format!("{} {arrow} {}", c.client, c.server),
    }
}

/// "events=2 first=BREAKPOINT" for an Event.Composite payload.
fn event_summary(payload: &[u8]) -> Option<String> {
    let count = u32::from_be_bytes(payload.get(1..5)?.try_into().ok()?);
    let kind = *payload.get(5)?;
    let name = event_kind_name(kind).map_or_else(|| format!("KIND({kind})"), str::to_string);
    Some(format!("events={count} first={name}"))
}

fn packet_text(p: &DecodedPacket) -> String {
    let mut s = match p.kind {
        PacketKind::Command { set, cmd } => format!("id={} {}", p.id, display_command(set, cmd)),
        PacketKind::Reply { error, command } => {
            let what = command
                .map(|(s, c)| format!(" {}", display_command(s, c)))
                .unwrap_or_default();
            format!("reply id={}{what} error={}", p.id, display_error(error))
        }
    };
    if let Some(o) = p.orig_id {
        s.push_str(&format!(" orig_id={o}"));
    }
    s.push_str(&format!(" len={}", p.length));
    if let Some(l) = p.latency {
        s.push_str(&format!(" latency={}", format_latency(l)));
    }
    if p.near {
        s.push_str(" near");
    }
    if let (
        PacketKind::Command {
            set: EVENT_COMMAND_SET,
            ..
        },
        Some(pl),
    ) = (p.kind, &p.payload)
    {
        if let Some(ev) = event_summary(pl) {
            s.push(' ');
            s.push_str(&ev);
        }
    }
    if !p.ddm_chunks.is_empty() {
        let list: Vec<String> = p
            .ddm_chunks
            .iter()
            .map(|(t, l)| format!("{t}({l})"))
            .collect();
        s.push_str(&format!(" chunks={}", list.join(",")));
    }
    if p.truncated {
        s.push_str(" truncated");
    }
    s
}

/// One jdwpspy-style line, e.g.
/// `12:00:01.123456 #3 dbg 127.0.0.1:5000 -> proxy  id=5 VirtualMachine.Version len=11`.
pub fn format_line(r: &DecodedRecord) -> String {
    let (dir, what) = match &r.event {
        DecodedEvent::Open if r.conn.vm.is_empty() => (None, "open".to_string()),
        DecodedEvent::Open => (None, format!("open vm={}", r.conn.vm)),
        DecodedEvent::Close => (None, "close".to_string()),
        DecodedEvent::Handshake { dir } => (Some(*dir), "handshake".to_string()),
        DecodedEvent::Packet(p) => (Some(p.dir), packet_text(p)),
    };
    format!(
        "{} #{} {}  {what}",
        format_time_of_day(r.time),
        r.conn.id,
        endpoints(&r.conn, dir)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::UNIX_EPOCH;

    fn rec(leg: Option<Leg>, event: DecodedEvent) -> DecodedRecord {
        DecodedRecord {
            time: UNIX_EPOCH + Duration::from_micros(43_201_123_456),
            conn: Arc::new(ConnDesc {
                id: 3,
                vm: "app".into(),
                leg,
                client: SocketAddr::from(([127, 0, 0, 1], 5000)),
                server: SocketAddr::from(([127, 0, 0, 1], 8700)),
            }),
            event,
        }
    }

    fn pkt(dir: Direction, kind: PacketKind) -> DecodedPacket {
        DecodedPacket {
            dir,
            id: 5,
            orig_id: None,
            flags: 0,
            kind,
            length: 11,
            latency: None,
            near: false,
            payload: None,
            truncated: false,
            ddm_chunks: Vec::new(),
        }
    }

    #[test]
    fn lines_look_like_jdwpspy() {
        let cmd = pkt(Direction::ToServer, PacketKind::Command { set: 1, cmd: 1 });
        let r = rec(Some(Leg::Debugger), DecodedEvent::Packet(cmd.clone()));
        assert_eq!(
            format_line(&r),
            "12:00:01.123456 #3 dbg 127.0.0.1:5000 -> proxy  id=5 VirtualMachine.Version len=11"
        );
        let mut reply = pkt(
            Direction::ToClient,
            PacketKind::Reply {
                error: 0,
                command: Some((1, 1)),
            },
        );
        reply.latency = Some(Duration::from_micros(120));
        reply.length = 40;
        let r = rec(Some(Leg::Debugger), DecodedEvent::Packet(reply));
        assert_eq!(
            format_line(&r),
            "12:00:01.123456 #3 dbg 127.0.0.1:5000 <- proxy  reply id=5 VirtualMachine.Version error=NONE len=40 latency=120µs"
        );
        let mut vm = cmd;
        vm.orig_id = Some(2);
        vm.truncated = true;
        let r = rec(Some(Leg::Vm), DecodedEvent::Packet(vm));
        assert!(format_line(&r).ends_with(
            "proxy -> vm 127.0.0.1:8700  id=5 VirtualMachine.Version orig_id=2 len=11 truncated"
        ));
        assert!(format_line(&rec(None, DecodedEvent::Open))
            .ends_with("#3 127.0.0.1:5000 -> 127.0.0.1:8700  open vm=app"));
        let mut ev = pkt(
            Direction::ToClient,
            PacketKind::Command { set: 64, cmd: 100 },
        );
        ev.payload = Some(vec![2, 0, 0, 0, 1, 2, 0, 0, 0, 0]);
        assert!(format_line(&rec(None, DecodedEvent::Packet(ev)))
            .contains("Event.Composite len=11 events=1 first=BREAKPOINT"));
    }

    #[test]
    fn latency_units() {
        assert_eq!(format_latency(Duration::from_micros(999)), "999µs");
        assert_eq!(format_latency(Duration::from_micros(12_345)), "12.345ms");
        assert_eq!(format_latency(Duration::from_millis(1_234)), "1.234s");
    }
}
