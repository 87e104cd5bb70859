//! Frame fixtures shared by decode and encode (each case's bytes are the wire format, written
//! out), fed whole and in fragments; refusals with the error each must give; and property
//! tests: any frame round-trips in any cut, any bytes are refused or decoded without a panic.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

use super::*;
use crate::remote::protocol::frame::{
    Body, ByeReason, CloseReason, Hello, MainKind, OpenStatus, Role, SessionKey, VmInfo, MAX_DATA, MAX_PAYLOAD, MAX_TEXT, MAX_VMS,
};

/// "0a 0b" -> [10, 11]; spaces are for the reader.
fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}

pub(super) fn frame(channel: u32, seq: u64, ack: u64, body: Body) -> Frame {
    Frame { channel, seq, ack, body }
}

fn near_hello() -> Hello {
    Hello {
        role: Role::Near,
        proto_min: 1,
        proto_max: 1,
        binary: "0.1.0".into(),
        session: SessionKey { id: [0x11; 16], token: [0x22; 16] },
        hold_secs: 300,
        resumed: false,
        gather: false,
    }
}

fn one_vm() -> VmInfo {
    VmInfo {
        key: 1,
        pid: 4242,
        port: 8000,
        listening: true,
        attached: false,
        waiting: Some(false),
        other_net: false,
        bind: Some(std::net::Ipv4Addr::LOCALHOST.into()),
        user: "root".into(),
        main: Some((MainKind::Class, "Main".into())),
        unreachable: String::new(),
        command: "java Main".into(),
        place: String::new(),
    }
}

/// (name, frame, its bytes): the header is len, kind, flags, channel, seq, ack.
fn fixtures() -> Vec<(&'static str, Frame, Vec<u8>)> {
    let z8 = "0000000000000000";
    vec![
        ("ack", frame(0, 0, 7, Body::Ack), hex(&format!("00000000 03 00 00000000 {z8} 0000000000000007"))),
        ("ping", frame(0, 0, 0, Body::Ping(0x0102_0304_0506_0708)), hex(&format!("00000008 04 00 00000000 {z8} {z8} 0102030405060708"))),
        ("pong", frame(0, 0, 2, Body::Pong(9)), hex(&format!("00000008 05 00 00000000 {z8} 0000000000000002 0000000000000009"))),
        ("open", frame(5, 1, 0, Body::Open { vm: 9 }), hex(&format!("00000004 11 00 00000005 0000000000000001 {z8} 00000009"))),
        (
            "opened",
            frame(5, 1, 1, Body::Opened { status: OpenStatus::Ok, text: String::new() }),
            hex("00000003 12 00 00000005 0000000000000001 0000000000000001 00 0000"),
        ),
        (
            "close",
            frame(5, 4, 0, Body::Close { reason: CloseReason::VmClosed, text: "gone".into() }),
            hex(&format!("00000007 13 00 00000005 0000000000000004 {z8} 01 0004 676f6e65")),
        ),
        (
            "data",
            frame(5, 2, 3, Body::Data(Bytes::from_static(b"JDWP-Handshake"))),
            hex("0000000e 14 00 00000005 0000000000000002 0000000000000003 4a4457502d48616e647368616b65"),
        ),
        (
            "bye",
            frame(0, 0, 0, Body::Bye { reason: ByeReason::Version, text: "v2".into() }),
            hex(&format!("00000005 02 00 00000000 {z8} {z8} 01 0002 7632")),
        ),
        (
            "hello",
            frame(0, 0, 12, Body::Hello(near_hello())),
            hex(&format!(
                "00000039 01 00 00000000 {z8} 000000000000000c 4a4457504d555846 01 0001 0001 0005 302e312e30 {} {} 0000012c 00",
                "11".repeat(16),
                "22".repeat(16)
            )),
        ),
        (
            "near hello asking for gathered answers (the byte a far side's resumed takes)",
            frame(0, 0, 0, Body::Hello(Hello { proto_min: 2, proto_max: 3, gather: true, ..near_hello() })),
            hex(&format!(
                "00000039 01 00 00000000 {z8} {z8} 4a4457504d555846 01 0002 0003 0005 302e312e30 {} {} 0000012c 01",
                "11".repeat(16),
                "22".repeat(16)
            )),
        ),
        (
            "far hello of a resumed session",
            frame(0, 0, 4, Body::Hello(Hello { role: Role::Far, proto_min: 3, proto_max: 3, resumed: true, ..near_hello() })),
            hex(&format!(
                "00000039 01 00 00000000 {z8} 0000000000000004 4a4457504d555846 02 0003 0003 0005 302e312e30 {} {} 0000012c 01",
                "11".repeat(16),
                "22".repeat(16)
            )),
        ),
        (
            "vm list",
            frame(0, 3, 0, Body::VmList(vec![one_vm()])),
            hex(&format!(
                "0000002c 10 00 00000000 0000000000000003 {z8} 0001 00000001 00001092 1f40 05 04 7f000001 0004 726f6f74 01 0004 4d61696e 0000 0009 6a617661204d61696e"
            )),
        ),
        (
            "vm list, agent on all IPv6 addresses",
            frame(0, 3, 0, Body::VmList(vec![VmInfo { bind: Some(std::net::Ipv6Addr::UNSPECIFIED.into()), ..one_vm() }])),
            hex(&format!(
                "00000038 10 00 00000000 0000000000000003 {z8} 0001 00000001 00001092 1f40 05 06 {} 0004 726f6f74 01 0004 4d61696e 0000 0009 6a617661204d61696e",
                "00".repeat(16)
            )),
        ),
        (
            "vm list, bind not known",
            frame(0, 3, 0, Body::VmList(vec![VmInfo { bind: None, ..one_vm() }])),
            hex(&format!(
                "00000028 10 00 00000000 0000000000000003 {z8} 0001 00000001 00001092 1f40 05 00 0004 726f6f74 01 0004 4d61696e 0000 0009 6a617661204d61696e"
            )),
        ),
        ("empty vm list", frame(0, 1, 0, Body::VmList(Vec::new())), hex(&format!("00000002 10 00 00000000 0000000000000001 {z8} 0000"))),
        // Protocol 4: each VM followed by where it runs, a text as every other.
        (
            "placed vm list",
            frame(0, 1, 0, Body::VmListPlaced(vec![VmInfo { place: "pod shop/orders".into(), ..one_vm() }])),
            {
                let mut plain = Vec::new();
                crate::remote::protocol::payload::encode(&Body::VmList(vec![one_vm()]), &mut plain).unwrap();
                let mut payload = plain.clone();
                payload.extend_from_slice(&(15u16).to_be_bytes());
                payload.extend_from_slice(b"pod shop/orders");
                let mut out = hex(&format!("{:08x} 15 00 00000000 0000000000000001 {z8}", payload.len()));
                out.extend_from_slice(&payload);
                out
            },
        ),
    ]
}

/// Feeds `input` in pieces of `step` bytes, then ends the stream.
pub(super) fn decode_all(input: &[u8], step: usize) -> Result<Vec<Frame>, CodecError> {
    let mut codec = FarCodec;
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in input.chunks(step.max(1)) {
        buf.extend_from_slice(piece);
        while let Some(f) = codec.decode(&mut buf)? {
            out.push(f);
        }
    }
    if let Some(f) = codec.decode_eof(&mut buf)? {
        out.push(f);
    }
    Ok(out)
}

#[test]
fn fixtures_decode_whole_and_in_fragments() {
    for (name, want, bytes) in fixtures() {
        for step in [1, 2, 3, 5, 25, 26, 27, 4096] {
            let got = decode_all(&bytes, step).unwrap_or_else(|e| panic!("{name} step {step}: {e}"));
            assert_eq!(got, vec![want.clone()], "{name} step {step}");
        }
    }
}

#[test]
fn fixtures_encode_to_their_bytes() {
    for (name, f, bytes) in fixtures() {
        let mut out = BytesMut::new();
        FarCodec.encode(&f, &mut out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.to_vec(), bytes, "{name}");
        assert_eq!(wire_len(&f.body).unwrap(), bytes.len(), "{name}");
    }
}

#[test]
fn all_fixtures_back_to_back() {
    let (frames, bytes): (Vec<Frame>, Vec<Vec<u8>>) = fixtures().into_iter().map(|(_, f, b)| (f, b)).unzip();
    let joined = bytes.concat();
    for step in [1, 7, 64, 100_000] {
        assert_eq!(decode_all(&joined, step).unwrap(), frames, "step {step}");
    }
}

/// A header with these fields and `payload` after it.
pub(super) fn raw(len: u32, kind: u8, flags: u8, channel: u32, seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = len.to_be_bytes().to_vec();
    v.push(kind);
    v.push(flags);
    v.extend_from_slice(&channel.to_be_bytes());
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&0u64.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

#[test]
fn refusals_name_what_is_wrong() {
    let hello_bytes = fixtures().into_iter().find(|c| c.0 == "hello").map(|c| c.2).unwrap();
    let vm_bytes = fixtures().into_iter().find(|c| c.0 == "vm list").map(|c| c.2).unwrap();
    let mut bad_magic = hello_bytes.clone();
    bad_magic[26] = b'X';
    let mut bad_role = hello_bytes.clone();
    bad_role[34] = 3;
    let mut bad_range = hello_bytes.clone();
    bad_range[35..39].copy_from_slice(&[0, 2, 0, 1]);
    let mut bad_resumed = hello_bytes.clone();
    *bad_resumed.last_mut().unwrap() = 2;
    let mut key_zero = vm_bytes.clone();
    key_zero[28..32].copy_from_slice(&[0; 4]);
    let mut bad_flags = vm_bytes.clone();
    bad_flags[38] = 0x08; // "waits" without "known"
    let mut bad_main = vm_bytes.clone();
    bad_main[50] = 4;
    let mut bad_bind = vm_bytes.clone();
    bad_bind[39] = 5;
    // A protocol 1 list (no bind address) is no protocol 2 list: its user's length is read
    // where the bind's family was, and is refused.
    let v1_list = hex(&format!(
        "00000027 10 00 00000000 0000000000000003 {} 0001 00000001 00001092 1f40 05 0004 726f6f74 01 0004 4d61696e 0000 0009 6a617661204d61696e",
        "0".repeat(16)
    ));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("unassigned kind", raw(0, 7, 0, 0, 0, &[]), "unknown frame kind 7"),
        ("kind 0", raw(0, 0, 0, 0, 0, &[]), "unknown frame kind 0"),
        ("kind 255", raw(0, 255, 0, 0, 0, &[]), "unknown frame kind 255"),
        ("ack with a payload", raw(1, 3, 0, 0, 0, &[0]), "Ack frame of 1 bytes exceeds its maximum of 0"),
        ("data over MAX_DATA", raw(MAX_DATA as u32 + 1, 20, 0, 1, 1, &[]), "Data frame of 65537 bytes exceeds its maximum of 65536"),
        ("list over MAX_PAYLOAD", raw(MAX_PAYLOAD as u32 + 1, 16, 0, 0, 1, &[]), "VmList frame of 4194305 bytes"),
        ("length u32::MAX", raw(u32::MAX, 20, 0, 1, 1, &[]), "Data frame of 4294967295 bytes"),
        ("flags", raw(0, 3, 1, 0, 0, &[]), "flags 0x01"),
        ("data on the link", raw(1, 20, 0, 0, 1, &[0]), "Data frame on channel 0"),
        ("ping on a channel", raw(8, 4, 0, 3, 0, &[0; 8]), "Ping frame on channel 3"),
        ("numbered frame with seq 0", raw(1, 20, 0, 1, 0, &[0]), "numbered frames start at 1"),
        ("link frame with a seq", raw(0, 3, 0, 0, 5, &[]), "link frames carry 0"),
        ("empty data", raw(0, 20, 0, 1, 1, &[]), "data length: 0 is not a valid value"),
        ("hello magic", bad_magic, "does not start with jdwpmux's far-side hello"),
        ("hello role", bad_role, "hello role: 3"),
        ("hello protocol range", bad_range, "protocol range"),
        ("hello resumed flag", bad_resumed, "resumed: 2"),
        ("short open", raw(3, 17, 0, 1, 1, &[0, 0, 1]), "open vm: needed 4 bytes, 3 left"),
        ("trailing byte", raw(4, 18, 0, 1, 1, &[0, 0, 0, 9]), "1 bytes after the payload's last field"),
        ("text not UTF-8", raw(5, 2, 0, 0, 0, &[1, 0, 2, 0xC3, 0x28]), "bye text is not UTF-8"),
        ("text over its maximum", raw(3, 2, 0, 0, 0, &[1, 0x02, 0x01]), "bye text: 513 bytes, at most 512"),
        ("too many vms", raw(2, 16, 0, 0, 1, &(MAX_VMS as u16 + 1).to_be_bytes()), "vm list: 513 bytes, at most 512"),
        ("vm key 0", key_zero, "vm key: 0"),
        ("vm flags", bad_flags, "vm flags: 8"),
        ("vm main kind", bad_main, "vm main kind: 4"),
        ("vm bind family", bad_bind, "vm bind family: 5"),
        ("a protocol 1 vm list", v1_list, "vm user: 1138 bytes, at most 512"),
    ];
    for (name, input, want) in cases {
        for step in [1, 26, 100_000] {
            let err = decode_all(&input, step).expect_err(name);
            assert!(err.to_string().contains(want), "{name} step {step}: {err}");
        }
    }
}

#[test]
fn a_refused_length_sizes_no_buffer() {
    // The header alone is enough to refuse: nothing is reserved for the announced payload.
    let mut buf = BytesMut::from(&raw(u32::MAX, 20, 0, 1, 1, &[])[..]);
    let before = buf.capacity();
    assert!(matches!(FarCodec.decode(&mut buf), Err(CodecError::Header(HeaderError::TooLong { .. }))));
    assert_eq!(buf.capacity(), before);
    // A legal length waits for its payload and reserves exactly that much.
    let mut buf = BytesMut::from(&raw(MAX_DATA as u32, 20, 0, 1, 1, &[1, 2, 3])[..]);
    assert!(FarCodec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() >= HEADER_LEN + MAX_DATA && buf.capacity() < 2 * (HEADER_LEN + MAX_DATA));
}

#[test]
fn truncated_at_eof_says_how_much_was_missing() {
    let (_, _, bytes) = fixtures().into_iter().find(|c| c.0 == "data").unwrap();
    for cut in [1, 25, 26, 30] {
        let err = decode_all(&bytes[..cut], 1000).unwrap_err();
        let want = if cut < HEADER_LEN { HEADER_LEN } else { bytes.len() };
        assert!(matches!(err, CodecError::Truncated { have, want: w } if have == cut && w == want), "cut {cut}: {err}");
    }
}

#[test]
fn the_encoder_refuses_what_the_decoder_would_and_writes_nothing() {
    let cases = vec![
        ("empty data", frame(1, 1, 0, Body::Data(Bytes::new()))),
        ("data over MAX_DATA", frame(1, 1, 0, Body::Data(Bytes::from(vec![0; MAX_DATA + 1])))),
        ("data on the link", frame(0, 1, 0, Body::Data(Bytes::from_static(b"x")))),
        ("unnumbered data", frame(1, 0, 0, Body::Data(Bytes::from_static(b"x")))),
        ("numbered ack", frame(0, 4, 0, Body::Ack)),
        ("long text", frame(1, 1, 0, Body::Close { reason: CloseReason::Done, text: "x".repeat(MAX_TEXT + 1) })),
        ("vm key 0", frame(0, 1, 0, Body::VmList(vec![VmInfo { key: 0, ..one_vm() }]))),
        ("too many vms", frame(0, 1, 0, Body::VmList(vec![one_vm(); MAX_VMS + 1]))),
        ("long binary version", frame(0, 0, 0, Body::Hello(Hello { binary: "9".repeat(65), ..near_hello() }))),
        ("a near side's hello saying resumed", frame(0, 0, 0, Body::Hello(Hello { resumed: true, ..near_hello() }))),
        ("a far side's hello asking for answers", frame(0, 0, 0, Body::Hello(Hello { role: Role::Far, gather: true, ..near_hello() }))),
    ];
    for (name, f) in cases {
        let mut out = BytesMut::new();
        assert!(FarCodec.encode(&f, &mut out).is_err(), "{name}");
        assert!(out.is_empty(), "{name}: wrote {} bytes", out.len());
        if f.channel != 0 && f.seq != 0 {
            assert!(wire_len(&f.body).is_err(), "{name}: the resume table would count it");
        }
    }
}

#[test]
fn session_keys_match_only_themselves_and_never_log_the_token() {
    let k = SessionKey { id: [1; 16], token: [2; 16] };
    assert!(k.matches(&k));
    assert!(!k.matches(&SessionKey { token: [3; 16], ..k }));
    assert!(!k.matches(&SessionKey { id: [0; 16], ..k }));
    assert!(!SessionKey::default().matches(&SessionKey::default()), "no session matches the empty key");
    assert_eq!(format!("{k:?}"), "SessionKey(01010101..)");
}

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::char::any(), 0..8).prop_map(move |cs| {
        let mut s = String::new();
        for c in cs {
            if s.len() + c.len_utf8() <= max {
                s.push(c);
            }
        }
        s
    })
}

fn vm_info() -> impl Strategy<Value = VmInfo> {
    let main = proptest::option::of((prop_oneof![Just(MainKind::Class), Just(MainKind::Jar), Just(MainKind::Module)], text(MAX_TEXT)));
    let bind = proptest::option::of(any::<std::net::IpAddr>());
    let flags = (any::<[bool; 3]>(), proptest::option::of(any::<bool>()), bind);
    (1u32.., any::<u32>(), any::<u16>(), flags, text(64), main, text(64), text(64)).prop_map(
        |(key, pid, port, ([listening, attached, other_net], waiting, bind), user, main, unreachable, command)| VmInfo {
            key,
            pid,
            port,
            listening,
            attached,
            waiting,
            other_net,
            bind,
            user,
            main,
            unreachable,
            command,
            place: String::new(),
        },
    )
}

pub(super) fn any_frame() -> impl Strategy<Value = Frame> {
    let hello = (any::<bool>(), 0u16..4, 0u16..4, text(MAX_TEXT), any::<[u8; 16]>(), any::<[u8; 16]>(), any::<u32>(), any::<bool>()).prop_map(
        |(near, a, b, binary, id, token, hold_secs, flag)| {
            let binary: String = binary.chars().take(8).collect();
            Body::Hello(Hello {
                role: if near { Role::Near } else { Role::Far },
                proto_min: a.min(b),
                proto_max: a.max(b),
                binary,
                session: SessionKey { id, token },
                hold_secs,
                // The one flag byte is the role's own.
                resumed: flag && !near,
                gather: flag && near,
            })
        },
    );
    let link = prop_oneof![
        hello,
        (8u8.., text(MAX_TEXT)).prop_map(|(c, text)| Body::Bye { reason: ByeReason::Other(c), text }),
        Just(Body::Ack),
        any::<u64>().prop_map(Body::Ping),
        any::<u64>().prop_map(Body::Pong),
    ];
    let channel = prop_oneof![
        any::<u32>().prop_map(|vm| Body::Open { vm }),
        text(MAX_TEXT).prop_map(|text| Body::Opened { status: OpenStatus::ConnectFailed, text }),
        text(MAX_TEXT).prop_map(|text| Body::Close { reason: CloseReason::HoldExpired, text }),
        proptest::collection::vec(any::<u8>(), 1..300).prop_map(|b| Body::Data(Bytes::from(b))),
    ];
    prop_oneof![
        (link, any::<u64>()).prop_map(|(body, ack)| frame(0, 0, ack, body)),
        (proptest::collection::vec(vm_info(), 0..4), 1u64.., any::<u64>()).prop_map(|(vms, seq, ack)| frame(0, seq, ack, Body::VmList(vms))),
        (proptest::collection::vec((vm_info(), text(64)), 0..4), 1u64.., any::<u64>()).prop_map(|(vms, seq, ack)| {
            frame(0, seq, ack, Body::VmListPlaced(vms.into_iter().map(|(v, place)| VmInfo { place, ..v }).collect()))
        }),
        (channel, 1u32.., 1u64.., any::<u64>()).prop_map(|(body, ch, seq, ack)| frame(ch, seq, ack, body)),
    ]
}

proptest! {
    #[test]
    fn any_frames_round_trip_in_any_cut(frames in proptest::collection::vec(any_frame(), 1..6), step in 1usize..200) {
        let mut bytes = BytesMut::new();
        for f in &frames {
            FarCodec.encode(f, &mut bytes).unwrap();
        }
        prop_assert_eq!(decode_all(&bytes, step).unwrap(), frames);
    }

    #[test]
    fn any_bytes_decode_or_are_refused_without_panic(data in proptest::collection::vec(any::<u8>(), 0..400), step in 1usize..50) {
        let mut codec = FarCodec;
        let mut buf = BytesMut::new();
        'feed: for piece in data.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(f)) => {
                        // Whatever decodes encodes back to a frame that decodes the same.
                        let mut again = BytesMut::new();
                        codec.encode(&f, &mut again).unwrap();
                        prop_assert_eq!(codec.decode(&mut again).unwrap(), Some(f));
                    }
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
    }
}
