//! The JSON shapes of the monitor's API: what the wire has as numbers gets its name too
//! (thread states, command names, error names, DDM chunk types), so neither the page nor a
//! script needs the tables.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::ddm::{ClientData, HeapInfo};
use crate::jdwp::names;
use crate::session::recent::PacketSummary;

/// A thread table: `GET /api/vms/{id}/threads` and the `threads` event.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Threads {
    pub app: Option<String>,
    pub pid: Option<u32>,
    pub threads: Vec<Thread>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Thread {
    pub tid: u32,
    pub name: Option<String>,
    /// "running", "sleeping", ...; `None` for a number the DDM document does not name.
    pub state: Option<&'static str>,
    pub state_code: Option<u8>,
    pub suspended: Option<bool>,
    pub sys_tid: Option<u32>,
    /// CPU time in the VM's clock ticks.
    pub utime: Option<u32>,
    pub stime: Option<u32>,
    pub daemon: Option<bool>,
}

impl Threads {
    pub fn of(d: &ClientData) -> Threads {
        let threads = d
            .threads
            .iter()
            .map(|(tid, t)| Thread {
                tid: *tid,
                name: t.name.clone(),
                state: t.state.and_then(|s| s.name()),
                state_code: t.state.map(|s| s.0),
                suspended: t.suspended,
                sys_tid: t.sys_tid,
                utime: t.utime,
                stime: t.stime,
                daemon: t.daemon,
            })
            .collect();
        Threads { app: d.app_name.clone(), pid: d.pid, threads }
    }
}

/// `GET /api/vms/{id}/heap` and `POST /api/vms/{id}/gc`.
#[derive(Debug, Clone, Serialize)]
pub struct Heap {
    /// HPIF figures per heap.
    pub heaps: Vec<HeapInfo>,
    /// The text `jdwpmux heap` prints.
    pub text: String,
    /// The last heap map drawn for this VM, if any.
    pub picture: Option<Picture>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Picture {
    /// Where the PNG is (changes with every new picture).
    pub url: String,
    pub width: u32,
    pub height: u32,
    /// When it was drawn, milliseconds since the Unix epoch.
    pub taken_ms: u64,
}

/// `GET /api/vms/{id}/packets` and the `packets` event.
#[derive(Debug, Clone, Serialize)]
pub struct Packets<'a> {
    /// The `since` to ask with next time.
    pub next: u64,
    pub packets: Vec<Packet<'a>>,
}

/// A packet summary (`seq`, `at_ms`, `from`, `to`, `conn`, `id`, `reply`, `len`,
/// `latency_us`) with its numbers named.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Packet<'a> {
    #[serde(flatten)]
    pub summary: &'a PacketSummary,
    /// "VirtualMachine.Version"; for a reply, the command it answers when known.
    pub command: Option<String>,
    pub cmd_set: Option<u8>,
    pub cmd: Option<u8>,
    /// A reply's error name ("NONE", "INVALID_THREAD", ...).
    pub error: Option<String>,
    pub error_code: Option<u16>,
    /// The first chunk type of a DDM packet ("THST").
    pub chunk: Option<String>,
}

impl<'a> From<&'a PacketSummary> for Packet<'a> {
    fn from(p: &'a PacketSummary) -> Packet<'a> {
        Packet {
            summary: p,
            command: p.command.map(|(s, c)| names::display_command(s, c)),
            cmd_set: p.command.map(|(s, _)| s),
            cmd: p.command.map(|(_, c)| c),
            error: p.reply.then(|| names::display_error(p.error)),
            error_code: p.reply.then_some(p.error),
            chunk: p.chunk.map(|c| c.iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '?' }).collect()),
        }
    }
}

impl<'a> Packets<'a> {
    pub fn of(summaries: &'a [PacketSummary], asked: u64) -> Packets<'a> {
        let next = summaries.last().map_or(asked, |p| p.seq + 1);
        Packets { next, packets: summaries.iter().map(Packet::from).collect() }
    }
}

/// Now, in milliseconds since the epoch: the `now_ms` of the messages and the time a
/// picture was taken.
pub(super) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddm::{ThreadInfo, ThreadState};
    use crate::session::recent::Party;

    #[test]
    fn threads_get_their_state_names() {
        let mut d = ClientData::default();
        d.app_name = Some("com.example".into());
        d.pid = Some(7);
        let t = |state| ThreadInfo { name: Some("main".into()), state: Some(ThreadState(state)), ..ThreadInfo::default() };
        d.threads.insert(1, t(1));
        d.threads.insert(2, t(42));
        let j = Threads::of(&d);
        assert_eq!((j.app.as_deref(), j.pid), (Some("com.example"), Some(7)));
        assert_eq!((j.threads[0].state, j.threads[0].state_code), (Some("running"), Some(1)));
        assert_eq!((j.threads[1].state, j.threads[1].state_code), (None, Some(42)));
    }

    #[test]
    fn packets_get_command_error_and_chunk_names() {
        let base = PacketSummary {
            seq: 4,
            at_ms: 1,
            from: Party::Vm,
            to: Party::Debugger,
            conn: Some(2),
            id: 9,
            command: Some((1, 1)),
            reply: true,
            error: 112,
            len: 11,
            latency_us: Some(80),
            chunk: None,
        };
        let ddm = PacketSummary { seq: 5, reply: false, command: Some((0xC7, 1)), chunk: Some([b'T', b'H', 0, b'T']), ..base };
        let summaries = [base, ddm];
        let j = Packets::of(&summaries, 0);
        assert_eq!(j.next, 6);
        assert_eq!(j.packets[0].command.as_deref(), Some("VirtualMachine.Version"));
        assert_eq!(j.packets[0].error.as_deref(), Some("VM_DEAD"));
        assert_eq!((j.packets[1].error.as_deref(), j.packets[1].chunk.as_deref()), (None, Some("TH?T")));
        assert_eq!(Packets::of(&[], 17).next, 17);
        // One flat object: the summary's fields, the numbers named, no raw duplicates.
        let v = serde_json::to_value(&j.packets[0]).unwrap();
        assert_eq!((v["seq"].as_u64(), v["conn"].as_u64(), v["latency_us"].as_u64()), (Some(4), Some(2), Some(80)));
        assert_eq!((v["error"].as_str(), v["error_code"].as_u64(), v["from"].as_str()), (Some("VM_DEAD"), Some(112), Some("vm")));
    }
}
