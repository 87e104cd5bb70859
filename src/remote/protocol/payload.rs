//! Each kind's payload, to bytes and back. Strict both ways: a payload is read to its last
//! byte (trailing bytes are an error), every text is UTF-8 within its maximum, and the
//! encoder refuses what the decoder would refuse, so decode -> encode -> decode is the
//! identity and a frame this side writes is one the other side reads.

use std::net::IpAddr;

use bytes::Bytes;

use super::frame::{
    Body, ByeReason, CloseReason, Hello, Kind, MainKind, OpenStatus, Role, SessionKey, VmInfo, MAGIC, MAX_COMMAND, MAX_NAME, MAX_TEXT,
    MAX_VERSION, MAX_VMS,
};
use crate::jdwp::reader::{ReadError, Reader};

/// A payload that does not say what its kind says.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error(transparent)]
    Short(#[from] ReadError),
    #[error("{what}: {len} bytes, at most {max}")]
    TooLong { what: &'static str, len: usize, max: usize },
    #[error("{what} is not UTF-8")]
    NotUtf8 { what: &'static str },
    #[error("{what}: {value} is not a valid value")]
    Invalid { what: &'static str, value: u64 },
    #[error("{0} bytes after the payload's last field")]
    Trailing(usize),
    #[error("the stream does not start with jdwpmux's far-side hello")]
    Magic,
    #[error(transparent)]
    Squeezed(#[from] super::squeeze::SqueezeError),
}

/// Decodes the payload of a frame of `kind`. Data takes `bytes` without copying.
pub fn decode(kind: Kind, bytes: Bytes) -> Result<Body, PayloadError> {
    let mut r = Reader::new(&bytes);
    let body = match kind {
        Kind::Data if bytes.is_empty() => return Err(PayloadError::Invalid { what: "data length", value: 0 }),
        Kind::Data => return Ok(Body::Data(bytes.clone())),
        Kind::DataZ => return Ok(Body::Data(super::squeeze::unsqueeze(&bytes, super::frame::MAX_DATA)?.into())),
        Kind::Hello => Body::Hello(hello(&mut r)?),
        Kind::Bye => {
            let reason = bye_reason(r.u8("bye reason")?);
            Body::Bye { reason, text: text(&mut r, "bye text", MAX_TEXT)? }
        }
        Kind::Ack => Body::Ack,
        Kind::Ping => Body::Ping(u64(&mut r, "ping stamp")?),
        Kind::Pong => Body::Pong(u64(&mut r, "pong stamp")?),
        Kind::VmList | Kind::VmListPlaced => {
            let placed = kind == Kind::VmListPlaced;
            let n = usize::from(u16(&mut r, "vm count")?);
            if n > MAX_VMS {
                return Err(PayloadError::TooLong { what: "vm list", len: n, max: MAX_VMS });
            }
            let mut vms = Vec::with_capacity(n);
            for _ in 0..n {
                let mut v = vm(&mut r)?;
                if placed {
                    v.place = text(&mut r, "vm place", MAX_NAME)?;
                }
                vms.push(v);
            }
            if placed { Body::VmListPlaced(vms) } else { Body::VmList(vms) }
        }
        Kind::Open => Body::Open { vm: r.u32("open vm")? },
        Kind::Opened => {
            let status = open_status(r.u8("open status")?);
            Body::Opened { status, text: text(&mut r, "open text", MAX_TEXT)? }
        }
        Kind::Close => {
            let reason = close_reason(r.u8("close reason")?);
            Body::Close { reason, text: text(&mut r, "close text", MAX_TEXT)? }
        }
    };
    if r.remaining() != 0 {
        return Err(PayloadError::Trailing(r.remaining()));
    }
    Ok(body)
}

/// Appends the payload of `body`; refuses what `decode` would refuse.
pub fn encode(body: &Body, out: &mut Vec<u8>) -> Result<(), PayloadError> {
    match body {
        Body::Hello(h) => {
            out.extend_from_slice(&MAGIC);
            out.push(h.role as u8);
            out.extend_from_slice(&h.proto_min.to_be_bytes());
            out.extend_from_slice(&h.proto_max.to_be_bytes());
            put_text(out, &h.binary, "binary version", MAX_VERSION)?;
            out.extend_from_slice(&h.session.id);
            out.extend_from_slice(&h.session.token);
            out.extend_from_slice(&h.hold_secs.to_be_bytes());
            // One byte, whose meaning is the role's: the decoder could not tell the other
            // side's flag from this side's.
            let flag = match h.role {
                Role::Far if h.gather => return Err(PayloadError::Invalid { what: "a far side's gather flag", value: 1 }),
                Role::Near if h.resumed => return Err(PayloadError::Invalid { what: "a near side's resumed flag", value: 1 }),
                Role::Far => h.resumed,
                Role::Near => h.gather,
            };
            out.push(u8::from(flag));
        }
        Body::Bye { reason, text } => {
            out.push(bye_code(*reason));
            put_text(out, text, "bye text", MAX_TEXT)?;
        }
        Body::Ack => {}
        Body::Ping(stamp) | Body::Pong(stamp) => out.extend_from_slice(&stamp.to_be_bytes()),
        Body::VmList(vms) | Body::VmListPlaced(vms) => {
            let placed = matches!(body, Body::VmListPlaced(_));
            if vms.len() > MAX_VMS {
                return Err(PayloadError::TooLong { what: "vm list", len: vms.len(), max: MAX_VMS });
            }
            out.extend_from_slice(&(vms.len() as u16).to_be_bytes());
            for v in vms {
                put_vm(out, v)?;
                if placed {
                    put_text(out, &v.place, "vm place", MAX_NAME)?;
                } else if !v.place.is_empty() {
                    // A protocol-3 list has no room for it: the decoder would give it back
                    // empty, so the encoding would not be the VM's.
                    return Err(PayloadError::Invalid { what: "a place in a protocol-3 vm list", value: 1 });
                }
            }
        }
        Body::Open { vm } => out.extend_from_slice(&vm.to_be_bytes()),
        Body::Opened { status, text } => {
            out.push(open_code(*status));
            put_text(out, text, "open text", MAX_TEXT)?;
        }
        Body::Close { reason, text } => {
            out.push(close_code(*reason));
            put_text(out, text, "close text", MAX_TEXT)?;
        }
        Body::Data(bytes) => {
            if bytes.is_empty() {
                return Err(PayloadError::Invalid { what: "data length", value: 0 });
            }
            out.extend_from_slice(bytes);
        }
    }
    Ok(())
}

fn hello(r: &mut Reader<'_>) -> Result<Hello, PayloadError> {
    if r.bytes(MAGIC.len(), "hello magic")? != MAGIC {
        return Err(PayloadError::Magic);
    }
    let role = match r.u8("hello role")? {
        1 => Role::Near,
        2 => Role::Far,
        other => return Err(PayloadError::Invalid { what: "hello role", value: other.into() }),
    };
    let proto_min = u16(r, "protocol min")?;
    let proto_max = u16(r, "protocol max")?;
    if proto_min > proto_max {
        return Err(PayloadError::Invalid { what: "protocol range", value: proto_min.into() });
    }
    let binary = text(r, "binary version", MAX_VERSION)?;
    let mut session = SessionKey::default();
    session.id.copy_from_slice(r.bytes(16, "session id")?);
    session.token.copy_from_slice(r.bytes(16, "session token")?);
    let hold_secs = r.u32("hold time")?;
    // The far side's "resumed", the near side's "gather": see `Hello::gather`.
    let flag = flag(r.u8("resumed")?, "resumed")?;
    let (resumed, gather) = match role {
        Role::Far => (flag, false),
        Role::Near => (false, flag),
    };
    Ok(Hello { role, proto_min, proto_max, binary, session, hold_secs, resumed, gather })
}

fn vm(r: &mut Reader<'_>) -> Result<VmInfo, PayloadError> {
    let key = r.u32("vm key")?;
    if key == 0 {
        return Err(PayloadError::Invalid { what: "vm key", value: 0 });
    }
    let pid = r.u32("vm pid")?;
    let port = u16(r, "vm port")?;
    let flags = r.u8("vm flags")?;
    if flags & !0x1F != 0 {
        return Err(PayloadError::Invalid { what: "vm flags", value: flags.into() });
    }
    let waiting = match (flags & 0x04 != 0, flags & 0x08 != 0) {
        (false, false) => None,
        (true, w) => Some(w),
        (false, true) => return Err(PayloadError::Invalid { what: "vm flags", value: flags.into() }),
    };
    let bind = match r.u8("vm bind family")? {
        0 => None,
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(r.bytes(4, "vm bind")?).map_err(|_| PayloadError::Invalid { what: "vm bind", value: 4 })?)),
        6 => Some(IpAddr::from(<[u8; 16]>::try_from(r.bytes(16, "vm bind")?).map_err(|_| PayloadError::Invalid { what: "vm bind", value: 16 })?)),
        other => return Err(PayloadError::Invalid { what: "vm bind family", value: other.into() }),
    };
    let user = text(r, "vm user", MAX_NAME)?;
    let main = match r.u8("vm main kind")? {
        0 => {
            // No main: its text must be empty, so each VM has one encoding.
            text(r, "vm main", 0)?;
            None
        }
        1 => Some((MainKind::Class, text(r, "vm main", MAX_NAME)?)),
        2 => Some((MainKind::Jar, text(r, "vm main", MAX_NAME)?)),
        3 => Some((MainKind::Module, text(r, "vm main", MAX_NAME)?)),
        other => return Err(PayloadError::Invalid { what: "vm main kind", value: other.into() }),
    };
    let unreachable = text(r, "vm unreachable", MAX_TEXT)?;
    let command = text(r, "vm command", MAX_COMMAND)?;
    Ok(VmInfo {
        key,
        pid,
        port,
        listening: flags & 0x01 != 0,
        attached: flags & 0x02 != 0,
        waiting,
        other_net: flags & 0x10 != 0,
        bind,
        user,
        main,
        unreachable,
        command,
        place: String::new(),
    })
}

fn put_vm(out: &mut Vec<u8>, v: &VmInfo) -> Result<(), PayloadError> {
    if v.key == 0 {
        return Err(PayloadError::Invalid { what: "vm key", value: 0 });
    }
    out.extend_from_slice(&v.key.to_be_bytes());
    out.extend_from_slice(&v.pid.to_be_bytes());
    out.extend_from_slice(&v.port.to_be_bytes());
    let waiting = match v.waiting {
        None => 0,
        Some(false) => 0x04,
        Some(true) => 0x0C,
    };
    out.push(u8::from(v.listening) | u8::from(v.attached) << 1 | waiting | u8::from(v.other_net) << 4);
    match v.bind {
        None => out.push(0),
        Some(IpAddr::V4(ip)) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        Some(IpAddr::V6(ip)) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    put_text(out, &v.user, "vm user", MAX_NAME)?;
    match &v.main {
        None => {
            out.push(0);
            put_text(out, "", "vm main", 0)?;
        }
        Some((kind, name)) => {
            out.push(*kind as u8);
            put_text(out, name, "vm main", MAX_NAME)?;
        }
    }
    put_text(out, &v.unreachable, "vm unreachable", MAX_TEXT)?;
    put_text(out, &v.command, "vm command", MAX_COMMAND)
}

fn u16(r: &mut Reader<'_>, what: &'static str) -> Result<u16, PayloadError> {
    let b = r.bytes(2, what)?;
    Ok(u16::from_be_bytes([b[0], b[1]]))
}

fn u64(r: &mut Reader<'_>, what: &'static str) -> Result<u64, PayloadError> {
    let b = r.bytes(8, what)?;
    Ok(u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
}

fn flag(b: u8, what: &'static str) -> Result<bool, PayloadError> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(PayloadError::Invalid { what, value: other.into() }),
    }
}

/// A text: u16 byte length, then UTF-8.
fn text(r: &mut Reader<'_>, what: &'static str, max: usize) -> Result<String, PayloadError> {
    let len = usize::from(u16(r, what)?);
    if len > max {
        return Err(PayloadError::TooLong { what, len, max });
    }
    let bytes = r.bytes(len, what)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| PayloadError::NotUtf8 { what })
}

fn put_text(out: &mut Vec<u8>, s: &str, what: &'static str, max: usize) -> Result<(), PayloadError> {
    if s.len() > max {
        return Err(PayloadError::TooLong { what, len: s.len(), max });
    }
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

// Reason and status codes: a code this version does not know is kept as `Other` (a later
// far side may say more), never an error: the text says what it means.

fn bye_reason(c: u8) -> ByeReason {
    match c {
        1 => ByeReason::Version,
        2 => ByeReason::UnknownSession,
        3 => ByeReason::BadToken,
        4 => ByeReason::Replaced,
        5 => ByeReason::ShuttingDown,
        6 => ByeReason::Protocol,
        7 => ByeReason::Busy,
        other => ByeReason::Other(other),
    }
}

fn bye_code(r: ByeReason) -> u8 {
    match r {
        ByeReason::Version => 1,
        ByeReason::UnknownSession => 2,
        ByeReason::BadToken => 3,
        ByeReason::Replaced => 4,
        ByeReason::ShuttingDown => 5,
        ByeReason::Protocol => 6,
        ByeReason::Busy => 7,
        ByeReason::Other(c) => c,
    }
}

fn open_status(c: u8) -> OpenStatus {
    match c {
        0 => OpenStatus::Ok,
        1 => OpenStatus::NoSuchVm,
        2 => OpenStatus::ConnectFailed,
        other => OpenStatus::Other(other),
    }
}

fn open_code(s: OpenStatus) -> u8 {
    match s {
        OpenStatus::Ok => 0,
        OpenStatus::NoSuchVm => 1,
        OpenStatus::ConnectFailed => 2,
        OpenStatus::Other(c) => c,
    }
}

fn close_reason(c: u8) -> CloseReason {
    match c {
        0 => CloseReason::Done,
        1 => CloseReason::VmClosed,
        2 => CloseReason::HoldExpired,
        3 => CloseReason::Error,
        other => CloseReason::Other(other),
    }
}

fn close_code(r: CloseReason) -> u8 {
    match r {
        CloseReason::Done => 0,
        CloseReason::VmClosed => 1,
        CloseReason::HoldExpired => 2,
        CloseReason::Error => 3,
        CloseReason::Other(c) => c,
    }
}
