//! The far side's VM list: the JVMs its /proc scan found (the same scan and the same keys as
//! `serve`'s local discovery, `discovery::jvms::decide::decide`), each under a number the near side
//! opens channels by. Pure.
//!
//! A number names one process's VM: a JVM keeps its number while it runs, and a new process
//! (the same program restarted) gets a new one, so a channel opened by number never reaches a
//! different VM than the one the near side saw. Numbers are never reused in a far side's life.

use std::collections::HashMap;

use crate::discovery::jvms::decide::Decision;
use crate::discovery::jvms::cmdline::MainName;
use crate::discovery::jvms::FoundJvm;
use crate::transport::Endpoint;
use crate::remote::protocol::frame::{MainKind, VmInfo, MAX_COMMAND, MAX_NAME, MAX_TEXT, MAX_VMS};

#[derive(Debug, Default)]
pub struct VmTable {
    last: u32,
    /// Numbers by (pid, discovery key).
    numbers: HashMap<(u32, String), u32>,
    list: Vec<VmInfo>,
    addrs: HashMap<u32, Endpoint>,
}

impl VmTable {
    /// Takes a scan round's JVMs and what `decide` said of each (same order); true when the
    /// list changed.
    pub fn update(&mut self, found: &[FoundJvm], decisions: &[Decision]) -> bool {
        let mut numbers = HashMap::new();
        let mut list = Vec::new();
        let mut addrs = HashMap::new();
        for (f, d) in found.iter().zip(decisions).take(MAX_VMS) {
            let slot = (f.pid, d.key.clone());
            let key = match self.numbers.get(&slot) {
                Some(k) => *k,
                None => {
                    self.last += 1;
                    self.last
                }
            };
            numbers.insert(slot, key);
            if d.unreachable.is_none() {
                addrs.insert(key, d.endpoint.clone());
            }
            list.push(info(key, f, d));
        }
        list.sort_by_key(|v| v.key);
        self.numbers = numbers;
        self.addrs = addrs;
        let changed = list != self.list;
        self.list = list;
        changed
    }

    pub fn list(&self) -> &[VmInfo] {
        &self.list
    }

    /// Where the VM numbered `key` is reached, when it is listed and reachable: an address
    /// here, or one inside a container's network namespace.
    pub fn endpoint(&self, key: u32) -> Option<Endpoint> {
        self.addrs.get(&key).cloned()
    }
}

fn info(key: u32, f: &FoundJvm, d: &Decision) -> VmInfo {
    let main = f.main.as_ref().map(|m| match m {
        MainName::Class(s) => (MainKind::Class, cut(s, MAX_NAME)),
        MainName::Jar(s) => (MainKind::Jar, cut(s, MAX_NAME)),
        MainName::Module(s) => (MainKind::Module, cut(s, MAX_NAME)),
    });
    VmInfo {
        key,
        pid: f.pid,
        port: f.port.unwrap_or(0),
        listening: f.listening,
        attached: f.attached,
        waiting: f.waiting,
        other_net: f.other_net,
        bind: f.bound,
        user: cut(f.user.as_deref().unwrap_or(""), MAX_NAME),
        main,
        unreachable: cut(d.unreachable.as_deref().unwrap_or(""), MAX_TEXT),
        command: cut(&f.command, MAX_COMMAND),
        place: if f.place == crate::discovery::jvms::Place::Host { String::new() } else { cut(&f.place.to_string(), MAX_NAME) },
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

// A command line the scan keeps fits the VM list's (a wire limit of the protocol).
const _: () = assert!(crate::discovery::jvms::found::MAX_COMMAND <= MAX_COMMAND);

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use crate::discovery::jvms::decide::decide;
    use crate::discovery::jvms::keys::KeyBook;
    use crate::discovery::jvms::Reach;

    fn at(port: u16) -> Reach {
        Reach::At(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    #[test]
    fn numbers_follow_processes() {
        let mut book = KeyBook::default();
        let mut table = VmTable::default();
        let round1 = vec![FoundJvm::sample(100, "A", 8000, 8000, at(8000)), FoundJvm::sample(200, "B", 0, 40000, at(40000))];
        assert!(table.update(&round1, &decide(&round1, None, &mut book)));
        let keys: Vec<(u32, u32)> = table.list().iter().map(|v| (v.pid, v.key)).collect();
        assert_eq!(keys, vec![(100, 1), (200, 2)]);
        assert_eq!(table.endpoint(2), Some(Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], 40000)))));
        // The same round again: nothing changed.
        assert!(!table.update(&round1, &decide(&round1, None, &mut book)));
        // B restarted (new pid, same program): a new number; A keeps its own.
        let round2 = vec![FoundJvm::sample(100, "A", 8000, 8000, at(8000)), FoundJvm::sample(300, "B", 0, 40001, at(40001))];
        assert!(table.update(&round2, &decide(&round2, None, &mut book)));
        let keys: Vec<(u32, u32)> = table.list().iter().map(|v| (v.pid, v.key)).collect();
        assert_eq!(keys, vec![(100, 1), (300, 3)]);
        assert_eq!(table.endpoint(2), None, "a gone VM cannot be opened");
        // All gone, then one back: numbers are never reused.
        assert!(table.update(&[], &[]));
        assert!(table.list().is_empty());
        let round3 = vec![FoundJvm::sample(100, "A", 8000, 8000, at(8000))];
        table.update(&round3, &decide(&round3, None, &mut book));
        assert_eq!(table.list()[0].key, 4);
    }

    #[test]
    fn an_unreachable_vm_is_listed_with_why_but_cannot_be_opened() {
        let mut book = KeyBook::default();
        let mut table = VmTable::default();
        let found = vec![FoundJvm::sample(100, "A", 8000, 8000, Reach::Unreachable("listens in a container".into()))];
        table.update(&found, &decide(&found, None, &mut book));
        assert_eq!(table.list()[0].unreachable, "listens in a container");
        assert_eq!(table.endpoint(table.list()[0].key), None);
    }

    #[test]
    fn what_is_listed_fits_the_wire() {
        let mut f = FoundJvm::sample(100, "é".repeat(400).as_str(), 8000, 8000, at(8000));
        f.user = Some("ü".repeat(300));
        f.command = "x".repeat(MAX_COMMAND + 10);
        let mut book = KeyBook::default();
        let mut table = VmTable::default();
        let found = vec![f];
        table.update(&found, &decide(&found, None, &mut book));
        let v = &table.list()[0];
        assert!(v.main.as_ref().is_some_and(|(_, m)| m.len() <= MAX_NAME) && v.user.len() <= MAX_NAME && v.command.len() == MAX_COMMAND);
        let frame = crate::remote::protocol::Frame { channel: 0, seq: 1, ack: 0, body: crate::remote::protocol::Body::VmList(table.list().to_vec()) };
        assert!(crate::remote::protocol::codec::wire_len(&frame.body).is_ok());
    }

    #[test]
    fn each_vm_carries_where_its_agent_listens() {
        let mut book = KeyBook::default();
        let mut table = VmTable::default();
        let mut open = FoundJvm::sample(100, "Open", 8000, 8000, at(8000));
        open.bound = Some("::".parse().unwrap());
        let mut unknown = FoundJvm::sample(200, "Quiet", 8001, 8001, at(8001));
        unknown.bound = None;
        let found = vec![open, unknown, FoundJvm::sample(300, "Local", 8002, 8002, at(8002))];
        table.update(&found, &decide(&found, None, &mut book));
        let binds: Vec<Option<std::net::IpAddr>> = table.list().iter().map(|v| v.bind).collect();
        assert_eq!(binds, [Some("::".parse().unwrap()), None, Some("127.0.0.1".parse().unwrap())]);
    }
}
