//! A gathering channel against a VM (a TCP server here) that writes a large reply without
//! reading while the near side sends megabytes of commands: neither side waits on the other
//! for good, every byte arrives once and in order both ways, and jdwpmux's own command (the
//! id sizes) reaches the VM between the near side's packets and its reply never reaches the
//! near side.

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::remote::far::channel::{self, Event};
use crate::remote::stop_answers::FAR_IDS;
use crate::jdwp::handshake::HANDSHAKE;
use crate::jdwp::packet::{Header, Packet, HEADER_LEN};

const WAIT: Duration = Duration::from_secs(60);
/// The VM's large reply, written before it reads anything after the handshake.
const REPLY: usize = 4 << 20;
/// Commands the near side sends at once (11 bytes each: 2.2 MB).
const COMMANDS: u32 = 200_000;

#[tokio::test]
async fn a_vm_writing_while_the_near_side_writes_loses_and_blocks_nothing() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let vm = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut hs = [0u8; 14];
        s.read_exact(&mut hs).await.unwrap();
        s.write_all(&HANDSHAKE[..]).await.unwrap();
        let reply = Packet::reply(1, 0, &vec![7u8; REPLY - HEADER_LEN]);
        s.write_all(reply.as_bytes()).await.unwrap();
        // Only now it reads: every near command, and jdwpmux's own, whole and in order.
        let (mut buf, mut near_ids, mut own) = (Vec::new(), Vec::new(), Vec::new());
        while near_ids.len() < COMMANDS as usize || own.is_empty() {
            let mut chunk = vec![0u8; 64 * 1024];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the channel closed early");
            buf.extend_from_slice(&chunk[..n]);
            let mut at = 0;
            while let Some(h) = Header::parse(&buf[at..]) {
                if buf.len() - at < h.length as usize {
                    break;
                }
                assert_eq!(h.length as usize, HEADER_LEN, "a packet split or joined: {h:?}");
                if FAR_IDS.contains(&h.id) {
                    own.push((h.cmd_set(), h.cmd()));
                    let sizes: Vec<u8> = [8u32; 5].iter().flat_map(|v| v.to_be_bytes()).collect();
                    s.write_all(Packet::reply(h.id, 0, &sizes).as_bytes()).await.unwrap();
                } else {
                    near_ids.push(h.id);
                }
                at += h.length as usize;
            }
            buf.drain(..at);
        }
        s.write_all(Packet::reply(2, 0, b"done").as_bytes()).await.unwrap();
        (near_ids, own)
    });

    let (events_tx, mut events) = mpsc::channel(64);
    let c = channel::open(1, crate::transport::Endpoint::Tcp(addr), Some(crate::remote::stop_answers::plan::Limits::default()), events_tx);
    let to_vm = c.to_vm.clone();
    let near = tokio::spawn(async move {
        to_vm.send(Bytes::copy_from_slice(&HANDSHAKE[..])).await.unwrap();
        let mut all = Vec::new();
        for id in 1..=COMMANDS {
            all.extend_from_slice(Packet::command(id + 10, 1, 1, &[]).as_bytes());
        }
        for piece in all.chunks(7919) {
            to_vm.send(Bytes::copy_from_slice(piece)).await.unwrap();
        }
    });

    let want = [&HANDSHAKE[..], Packet::reply(1, 0, &vec![7u8; REPLY - HEADER_LEN]).as_bytes(), Packet::reply(2, 0, b"done").as_bytes()].concat();
    let mut got = Vec::new();
    tokio::time::timeout(WAIT, async {
        while got.len() < want.len() {
            match events.recv().await {
                Some(Event::Data { bytes, .. }) => got.extend_from_slice(&bytes),
                Some(Event::Opened { result, .. }) => assert!(result.is_ok(), "{result:?}"),
                other => panic!("{other:?}"),
            }
        }
    })
    .await
    .expect("every byte of the VM's reached the near side in time");
    assert!(got == want, "the VM's bytes, in order, without the reply to jdwpmux's own command");
    let (near_ids, own) = tokio::time::timeout(WAIT, vm).await.unwrap().unwrap();
    assert_eq!(near_ids, (11..=COMMANDS + 10).collect::<Vec<_>>());
    assert_eq!(own, vec![(1, 7)], "the id sizes, asked once");
    near.await.unwrap();
    drop(c);
}

/// A stop whose commands the VM never answers: at the hold's deadline the event goes on to
/// the near side without answers (the channel's timer, not a reply, releases it).
#[tokio::test]
async fn a_stop_the_vm_does_not_answer_goes_on_at_the_holds_deadline() {
    let thread = 0x51u64;
    let mut event = vec![2u8, 0, 0, 0, 1, 2, 0, 0, 0, 7];
    event.extend_from_slice(&thread.to_be_bytes());
    event.extend_from_slice(&[&[1u8][..], &[0; 16], &5u64.to_be_bytes()].concat());
    let event = Packet::command(3, 64, 100, &event);
    let sent = event.as_bytes().to_vec();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let vm = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut hs = [0u8; 14];
        s.read_exact(&mut hs).await.unwrap();
        s.write_all(&HANDSHAKE[..]).await.unwrap();
        // The id sizes, answered; then the stop; then silence, reading what comes.
        let mut head = [0u8; HEADER_LEN];
        s.read_exact(&mut head).await.unwrap();
        let h = Header::parse(&head).unwrap();
        assert_eq!((h.cmd_set(), h.cmd()), (1, 7));
        let sizes: Vec<u8> = [8u32; 5].iter().flat_map(|v| v.to_be_bytes()).collect();
        s.write_all(Packet::reply(h.id, 0, &sizes).as_bytes()).await.unwrap();
        s.write_all(&sent).await.unwrap();
        let mut asked = 0usize;
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return asked,
                Ok(n) => asked += n,
            }
        }
    });
    let (events_tx, mut events) = mpsc::channel(64);
    let c = channel::open(1, crate::transport::Endpoint::Tcp(addr), Some(crate::remote::stop_answers::plan::Limits::default()), events_tx);
    c.to_vm.send(Bytes::copy_from_slice(&HANDSHAKE[..])).await.unwrap();
    let want = [&HANDSHAKE[..], event.as_bytes()].concat();
    let mut got = Vec::new();
    tokio::time::timeout(WAIT, async {
        while got.len() < want.len() {
            match events.recv().await {
                Some(Event::Data { bytes, .. }) => got.extend_from_slice(&bytes),
                Some(Event::Opened { result, .. }) => assert!(result.is_ok(), "{result:?}"),
                other => panic!("{other:?}"),
            }
        }
    })
    .await
    .expect("the event goes on after the hold");
    assert!(got == want, "the handshake and the event, and no answers packet");
    drop(c);
    let asked = tokio::time::timeout(WAIT, vm).await.unwrap().unwrap();
    assert!(asked > 0, "the stop's plan was sent to the VM");
}
