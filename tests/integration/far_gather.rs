//! `jdwpmux far` (the real binary) gathering a stop's answers for a near side that asks: a
//! raw JDWP client through a channel sets a suspend-all breakpoint in a real JVM; the answers
//! packet comes just before the event and holds the thread's frames, the fields of `this`,
//! the statics of its class, strings and array heads; each of its replies is what the VM
//! answers to the same command sent right after, the thread still suspended. A near side of
//! protocol 2 is answered under 2.

use std::collections::HashSet;

use anyhow::{bail, ensure, Context, Result};
use bytes::{Buf, Bytes, BytesMut};
use jdwpmux::remote::protocol::frame::{Body, SessionKey};
use jdwpmux::remote::protocol::resume::{Outbound, Resume};
use jdwpmux::remote::stop_answers::relay::Answers;
use jdwpmux::remote::stop_answers::{inband, Key, FAR_IDS};
use jdwpmux::jdwp::packet::{Header, Packet, HEADER_LEN};
use tokio::process::Command;

use super::far::{open_until_taken, wait_for_vm, Near, BIN, SLOW};
use crate::support::console::Console;
use crate::support::{java_available, JavaApp};

const CHANNEL: u32 = 1;

const GATHER_JAVA: &str = "public class Gather {
    static class Base {
        static String baseKind = \"a base\";
        protected String baseName = \"base\";
        long[] history = new long[150];
    }

    static class Worker extends Base {
        static String kind = \"a worker\";
        static int[] sizes = {2, 3, 5};
        String label;
        int count;
        Object none;

        Worker(String label) {
            this.label = label;
        }

        void step(String text, int[] numbers) {
            count += numbers.length;
            if (text.isEmpty()) System.out.println(text);
        }
    }

    public static void main(String[] args) throws Exception {
        Worker w = new Worker(\"the worker\");
        System.out.println(\"Gather started\");
        System.out.flush();
        for (int i = 0; ; i++) {
            w.step(\"step \" + i, new int[] {i, i * i});
            Thread.sleep(20);
        }
    }
}
";

/// A raw JDWP client on a channel of the far side.
struct Client {
    near: Near,
    resume: Resume,
    stream: BytesMut,
    next_id: u32,
}

impl Client {
    /// A near side of `protocols` asking for gathered answers, on a channel to the VM of
    /// `pid`, past the JDWP handshake.
    async fn open(socket: &std::path::Path, protocols: (u16, u16), pid: u32) -> Result<Client> {
        let mut resume = Resume::new(Outbound::new(1 << 20));
        let (mut near, hello) = Near::connect_as(socket, SessionKey::default(), &mut resume, protocols, true).await?;
        ensure!(hello.proto_max == protocols.1, "agreed on {} for {protocols:?}", hello.proto_max);
        let vm = wait_for_vm(&mut near, &mut resume, pid).await?;
        open_until_taken(&mut near, &mut resume, CHANNEL, &vm).await?;
        let mut c = Client { near, resume, stream: BytesMut::new(), next_id: 0 };
        c.send(b"JDWP-Handshake".to_vec()).await?;
        while c.stream.len() < 14 {
            match c.near.next_not_list(&mut c.resume).await?.body {
                Body::Data(b) => c.stream.extend_from_slice(&b),
                other => bail!("during the handshake: {other:?}"),
            }
        }
        ensure!(&c.stream[..14] == b"JDWP-Handshake", "the handshake");
        c.stream.advance(14);
        Ok(c)
    }

    async fn send(&mut self, bytes: Vec<u8>) -> Result<()> {
        self.near.send(&mut self.resume, CHANNEL, Body::Data(Bytes::from(bytes))).await
    }

    /// The next whole JDWP packet of the channel's stream: its header and data.
    async fn packet(&mut self) -> Result<(Header, Vec<u8>)> {
        loop {
            if let Some(h) = Header::parse(&self.stream) {
                let len = (h.length as usize).max(HEADER_LEN);
                if self.stream.len() >= len {
                    let p = self.stream.split_to(len);
                    return Ok((h, p[HEADER_LEN..].to_vec()));
                }
            }
            match self.near.next(&mut self.resume).await?.body {
                Body::Data(b) => self.stream.extend_from_slice(&b),
                // The list changes as the VM is attached to: not the channel's.
                Body::VmList(_) | Body::VmListPlaced(_) => {}
                other => bail!("on the channel: {other:?}"),
            }
        }
    }

    /// Sends a command and returns its reply (error 0 or not); events before it are an error.
    async fn ask(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<(Header, Vec<u8>)> {
        self.ask_ahead(set, cmd, data).await.map(|(h, data, _)| (h, data))
    }

    /// As `ask`, with the answers packets that came before the reply: a class looked up by
    /// name has its class data read ahead and sent before it, for the near cache.
    async fn ask_ahead(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<(Header, Vec<u8>, Vec<Answers>)> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(Packet::command(id, set, cmd, data).as_bytes().to_vec()).await?;
        let mut ahead = Vec::new();
        let (h, data) = loop {
            let (h, data) = self.packet().await?;
            if inband::is_answers(&h) && ahead.len() < 4 {
                ahead.push(inband::answers(&data)?);
                continue;
            }
            break (h, data);
        };
        ensure!(h.is_reply() && h.id == id, "the reply to {set}/{cmd} (id {id}), not {h:?}");
        Ok((h, data, ahead))
    }

    async fn ok(&mut self, set: u8, cmd: u8, data: &[u8]) -> Result<Vec<u8>> {
        let (h, data) = self.ask(set, cmd, data).await?;
        ensure!(h.error_code() == 0, "{set}/{cmd} answered error {}", h.error_code());
        Ok(data)
    }
}

fn string(s: &str) -> Vec<u8> {
    [&(s.len() as u32).to_be_bytes()[..], s.as_bytes()].concat()
}

/// The id of the first method `name` in a ReferenceType.Methods reply.
fn method_id(reply: &[u8], name: &str) -> Option<u64> {
    let mut r = jdwpmux::jdwp::reader::Reader::new(reply);
    for _ in 0..r.u32("methods").ok()? {
        let id = r.id(8, "method").ok()?;
        let n = r.string("name").ok()?;
        r.string("signature").ok()?;
        r.u32("modBits").ok()?;
        if n == name {
            return Some(id);
        }
    }
    None
}

fn answers_of(answers: &Answers, set: u8, cmd: u8) -> Vec<&jdwpmux::remote::stop_answers::plan::Gathered> {
    answers.answers.iter().filter(|g| (g.key.set, g.key.cmd) == (set, cmd)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn far_side_gathers_a_stops_answers_before_its_event_as_the_vm_answers_them() -> Result<()> {
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let app = JavaApp::launch(std::path::Path::new("java"), &[("Gather.java", GATHER_JAVA)], "Gather", &[], false).await?;
    app.wait_for_output("Gather started", SLOW).await?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let mut cmd = Command::new(BIN);
    cmd.args(["far", "--hold", "5", "--scan-interval", "0.2", "--dir"]).arg(&dir);
    let mut far = Console::spawn(cmd, "jdwpmux far")?;
    let socket = dir.join("far.sock");
    far.expect("jdwpmux far: listening on", SLOW).await?;

    // A near side of protocol 2 is answered under 2, whatever its flag byte says.
    let mut old = Resume::new(Outbound::new(1 << 20));
    let (near, hello) = Near::connect_as(&socket, SessionKey::default(), &mut old, (2, 2), true).await?;
    assert_eq!((hello.proto_min, hello.proto_max), (2, 2));
    drop(near);

    // A near side of 2..3 that asks for gathered answers: 3.
    let mut c = Client::open(&socket, (2, 3), app.pid().context("the JVM's pid")?).await?;

    let sizes = c.ok(1, 7, &[]).await?;
    assert_eq!(sizes, [8u32; 5].iter().flat_map(|s| s.to_be_bytes()).collect::<Vec<_>>(), "HotSpot's 8-byte ids");
    let classes = c.ok(1, 2, &string("LGather$Worker;")).await?;
    let worker = u64::from_be_bytes(classes[5..13].try_into()?);
    let methods = c.ok(2, 5, &worker.to_be_bytes()).await?;
    let step = method_id(&methods, "step").context("Worker.step")?;
    // EventRequest.Set: a breakpoint at the start of step, suspending every thread.
    let mut bp = vec![2u8, 2, 0, 0, 0, 1, 7, 1];
    bp.extend_from_slice(&worker.to_be_bytes());
    bp.extend_from_slice(&step.to_be_bytes());
    bp.extend_from_slice(&0u64.to_be_bytes());
    let request = c.ok(15, 1, &bp).await?;

    // Up to the event: the answers packet, then the event right after it.
    let mut before: Option<Answers> = None;
    let (eh, ev) = loop {
        let (h, data) = c.packet().await?;
        if inband::is_answers(&h) {
            ensure!(before.is_none(), "two answers packets before one event");
            before = Some(inband::answers(&data)?);
            continue;
        }
        ensure!(!h.is_reply() || !FAR_IDS.contains(&h.id), "a reply to the far side's own command reached the near side: {h:?}");
        // The breakpoint's event (a composite of one Breakpoint), right after the answers;
        // nothing else was asked for.
        if !h.is_reply() && h.cmd_set() == 64 && data.get(5) == Some(&2) {
            break (h, data);
        }
        bail!("before the breakpoint's event: {h:?} {data:02x?}");
    };
    let answers = before.context("no answers packet before the stop's event")?;
    let thread = u64::from_be_bytes(ev[10..18].try_into()?);
    assert_eq!((answers.event_id, answers.suspend_policy, answers.thread), (eh.id, 2, thread));

    // The thread's frames, `this`' fields, the statics, strings and array heads.
    for (set, cmd) in [(11, 1), (11, 4), (11, 7), (11, 6), (16, 3), (6, 5), (16, 1), (9, 1), (2, 14), (3, 1), (9, 2), (2, 6), (10, 1), (13, 1), (13, 2)] {
        assert!(!answers_of(&answers, set, cmd).is_empty(), "{set}/{cmd} gathered: {:?}", answers.answers.iter().map(|g| (g.key.set, g.key.cmd)).collect::<Vec<_>>());
    }
    let frames = answers_of(&answers, 11, 6);
    assert!(frames.iter().any(|g| g.key.data.ends_with(&(-1i32).to_be_bytes()) && u32::from_be_bytes(g.reply[..4].try_into().unwrap()) >= 2), "frames(): step and main");
    let strings: HashSet<String> = answers_of(&answers, 10, 1).iter().map(|g| String::from_utf8_lossy(&g.reply[4..]).to_string()).collect();
    for s in ["the worker", "base", "a worker", "a base"] {
        assert!(strings.contains(s), "{s:?} among the strings read: {strings:?}");
    }
    assert!(strings.iter().any(|s| s.starts_with("step ")), "the argument text: {strings:?}");
    let heads = answers_of(&answers, 13, 2);
    let lengths: HashSet<u32> = heads.iter().map(|g| u32::from_be_bytes(g.key.data[12..16].try_into().unwrap())).collect();
    assert_eq!(lengths, HashSet::from([2, 3, 100]), "numbers, sizes and the head of history");
    let statics = answers_of(&answers, 2, 6);
    assert_eq!(statics[0].key.data[..8], worker.to_be_bytes(), "the statics of the stopped method's class");
    assert_eq!(u32::from_be_bytes(statics[0].key.data[8..12].try_into()?), 3, "kind, sizes and Base.baseKind");
    let fields = answers_of(&answers, 9, 2);
    assert_eq!(u32::from_be_bytes(fields[0].key.data[8..12].try_into()?), 5, "label, count, none, baseName, history");

    // Every answer is what the VM says now, the thread still suspended.
    let mut asked = HashSet::new();
    for g in &answers.answers {
        assert!(asked.insert(g.key.clone()), "{:?} gathered twice", g.key);
        let Key { set, cmd, data } = &g.key;
        let (h, reply) = c.ask(*set, *cmd, data).await?;
        assert_eq!(h.error_code(), 0, "{set}/{cmd}");
        assert_eq!(reply, g.reply, "{set}/{cmd} {data:02x?}: the VM's reply differs from the gathered one");
    }

    // The breakpoint cleared and the VM resumed, the relay goes on as before.
    let mut clear = vec![2u8];
    clear.extend_from_slice(&request);
    c.ok(15, 2, &clear).await?;
    c.ok(1, 9, &[]).await?;
    let version = c.ok(1, 1, &[]).await?;
    assert!(!version.is_empty());
    drop(c);
    far.kill().await;
    Ok(())
}

/// A class looked up by name through a near side of protocol 6 has its SourceDebugExtension
/// read ahead too, and the VM's ABSENT_INFORMATION comes in the answers' second list; a near
/// side of 5 gets neither (its decoder knows no such list). The VM says the same when asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn far_side_sends_what_a_class_lacks_to_a_near_side_of_6_only() -> Result<()> {
    use jdwpmux::remote::protocol::hello::ABSENT_PROTOCOL;
    assert!(java_available(), "java and javac are needed (install a JDK; ./test.sh does)");
    let app = JavaApp::launch(std::path::Path::new("java"), &[("Gather.java", GATHER_JAVA)], "Gather", &[], false).await?;
    app.wait_for_output("Gather started", SLOW).await?;
    let pid = app.pid().context("the JVM's pid")?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("far");
    let mut cmd = Command::new(BIN);
    cmd.args(["far", "--hold", "1", "--scan-interval", "0.2", "--dir"]).arg(&dir);
    let mut far = Console::spawn(cmd, "jdwpmux far")?;
    let socket = dir.join("far.sock");
    far.expect("jdwpmux far: listening on", SLOW).await?;
    for protocol in [ABSENT_PROTOCOL - 1, ABSENT_PROTOCOL] {
        let mut c = Client::open(&socket, (2, protocol), pid).await?;
        c.ok(1, 7, &[]).await?;
        let (h, classes, ahead) = c.ask_ahead(1, 2, &string("LGather$Worker;")).await?;
        ensure!(h.error_code() == 0 && classes.len() == 17, "one class: {classes:02x?}");
        let worker = classes[5..13].to_vec();
        let read: Vec<(u8, u8)> = ahead.iter().flat_map(|a| a.answers.iter().map(|g| (g.key.set, g.key.cmd))).collect();
        assert!(read.contains(&(2, 15)), "the class's methods read ahead: {read:?}");
        let absent: Vec<&Key> = ahead.iter().flat_map(|a| a.absent.iter()).collect();
        let (sde, _) = c.ask(2, 12, &worker).await?;
        assert_eq!(sde.error_code(), 101, "Gather$Worker has no SourceDebugExtension");
        if protocol < ABSENT_PROTOCOL {
            assert!(absent.is_empty(), "protocol {protocol}: {absent:?}");
        } else {
            assert_eq!(absent, vec![&Key::new(2, 12, worker.clone())], "protocol {protocol}: what the class lacks");
        }
        drop(c);
    }
    far.kill().await;
    Ok(())
}
