//! Thread payloads: THST status (both the design document's layout and the one real VMs
//! send) and STKL stack traces.
//!
//! THST layouts, told apart by exact length arithmetic on the chunk:
//! - document: `u4 count, {u4 tid, u1 state, u1 suspended}*` — length `4 + 6*count`;
//! - real VMs: `u1 headerLen, u1 bytesPerEntry, u2 count`, entries of `bytesPerEntry` bytes
//!   (`u4 tid, u1 state, u4 sysTid, u4 utime, u4 stime [, u1 isDaemon]`, then anything newer)
//!   — `headerLen >= 4`, `bytesPerEntry >= 17`, length `headerLen + bytesPerEntry*count`.
//!
//! When the real header holds (first byte >= 4), the document's count is at least 0x04000000
//! threads, i.e. at least 384 MiB of data, so the two cannot both match a real chunk; the
//! real layout is tried first anyway.

use std::fmt;

use serde::ser::SerializeStruct;
use serde::Serialize;

use super::error::DdmError;
use super::reader::Reader;

/// A thread state number. 1..=8 are named by the design document; real VMs send others too,
/// which are kept as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadState(pub u8);

impl ThreadState {
    pub const RUNNING: ThreadState = ThreadState(1);
    pub const SLEEPING: ThreadState = ThreadState(2);
    pub const MONITOR: ThreadState = ThreadState(3);
    pub const WAITING: ThreadState = ThreadState(4);
    /// Threads announced by THCR are in this state until a THST says otherwise.
    pub const INITIALIZING: ThreadState = ThreadState(5);
    pub const STARTING: ThreadState = ThreadState(6);
    pub const NATIVE: ThreadState = ThreadState(7);
    pub const VMWAIT: ThreadState = ThreadState(8);

    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "running",
            2 => "sleeping",
            3 => "monitor",
            4 => "waiting",
            5 => "initializing",
            6 => "starting",
            7 => "native",
            8 => "vmwait",
            _ => return None,
        })
    }
}

impl fmt::Display for ThreadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "state{}", self.0),
        }
    }
}

/// `{"code": 1, "name": "running"}`; `name` is null for numbers the document does not name.
impl Serialize for ThreadState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ThreadState", 2)?;
        st.serialize_field("code", &self.0)?;
        st.serialize_field("name", &self.name())?;
        st.end()
    }
}

/// Which THST layout a status chunk used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "layout", rename_all = "snake_case")]
pub enum ThstLayout {
    Document,
    Real { header_len: u8, bytes_per_entry: u8 },
}

/// One thread in a THST chunk; fields a layout does not carry are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThreadEntry {
    pub tid: u32,
    pub state: ThreadState,
    pub suspended: Option<bool>,
    pub sys_tid: Option<u32>,
    pub utime: Option<u32>,
    pub stime: Option<u32>,
    pub daemon: Option<bool>,
}

/// A decoded THST chunk from the VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadStatus {
    #[serde(flatten)]
    pub layout: ThstLayout,
    pub threads: Vec<ThreadEntry>,
}

pub fn parse_thst(data: &[u8]) -> Result<ThreadStatus, DdmError> {
    let len = data.len();
    let mut r = Reader::new(data);
    let head = r.bytes(4, "THST header")?;
    let (header_len, bytes_per_entry) = (head[0], head[1]);
    let real_count = u16::from_be_bytes([head[2], head[3]]);
    let doc_count = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let real_needed = u64::from(header_len) + u64::from(bytes_per_entry) * u64::from(real_count);
    let doc_needed = 4 + 6 * u64::from(doc_count);
    if header_len >= 4 && bytes_per_entry >= 17 && real_needed == len as u64 {
        r.skip(usize::from(header_len) - 4, "THST header")?;
        let mut threads = Vec::with_capacity(usize::from(real_count));
        for _ in 0..real_count {
            let mut e = r.sub(usize::from(bytes_per_entry), "thread entry")?;
            let tid = e.u4("thread id")?;
            let state = ThreadState(e.u1("thread state")?);
            let sys_tid = Some(e.u4("system tid")?);
            let utime = Some(e.u4("utime")?);
            let stime = Some(e.u4("stime")?);
            let daemon = if bytes_per_entry >= 18 { Some(e.u1("is daemon")? != 0) } else { None };
            // Anything after is a newer VM's addition: bytesPerEntry tells us to skip it.
            threads.push(ThreadEntry { tid, state, suspended: None, sys_tid, utime, stime, daemon });
        }
        return Ok(ThreadStatus { layout: ThstLayout::Real { header_len, bytes_per_entry }, threads });
    }
    if doc_needed == len as u64 {
        let n = r.check_count(u64::from(doc_count), 6, "thread count")?;
        let mut threads = Vec::with_capacity(n);
        for _ in 0..n {
            let tid = r.u4("thread id")?;
            let state = ThreadState(r.u1("thread state")?);
            let suspended = Some(r.u1("suspended")? != 0);
            threads.push(ThreadEntry { tid, state, suspended, sys_tid: None, utime: None, stime: None, daemon: None });
        }
        return Ok(ThreadStatus { layout: ThstLayout::Document, threads });
    }
    Err(DdmError::ThstLayout { len, doc_count, doc_needed, header_len, bytes_per_entry, real_count, real_needed })
}

/// One frame of an STKL reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackFrame {
    pub class: String,
    pub method: String,
    /// `None` when the VM sent an empty file name.
    pub file: Option<String>,
    /// Signed: VMs use negative numbers for "unknown" and "native".
    pub line: i32,
}

/// An STKL reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackTrace {
    pub future: u32,
    pub tid: u32,
    pub frames: Vec<StackFrame>,
}

pub fn parse_stkl(r: &mut Reader<'_>) -> Result<StackTrace, DdmError> {
    let future = r.u4("future")?;
    let tid = r.u4("thread id")?;
    let depth = r.u4("depth")?;
    let n = r.check_count(u64::from(depth), 16, "depth")?;
    let mut frames = Vec::with_capacity(n);
    for _ in 0..n {
        let class = r.string("class")?;
        let method = r.string("method")?;
        let file = Some(r.string("file")?).filter(|f| !f.is_empty());
        let line = r.u4("line")? as i32;
        frames.push(StackFrame { class, method, file, line });
    }
    Ok(StackTrace { future, tid, frames })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names() {
        let names: Vec<String> = (0..=9).map(|n| ThreadState(n).to_string()).collect();
        assert_eq!(names, [
            "state0", "running", "sleeping", "monitor", "waiting", "initializing", "starting", "native",
            "vmwait", "state9"
        ]);
        assert_eq!(serde_json::to_string(&ThreadState(9)).unwrap(), r#"{"code":9,"name":null}"#);
        assert_eq!(serde_json::to_string(&ThreadState(4)).unwrap(), r#"{"code":4,"name":"waiting"}"#);
    }

    #[test]
    fn real_layout_with_longer_header_and_entries() {
        // headerLen 6 (2 unknown header bytes), 20 bytes per entry (2 unknown trailing bytes).
        #[rustfmt::skip]
        let data = [
            6, 20, 0, 1, 0xaa, 0xbb,
            0, 0, 0, 7,  9,  0, 0, 0x30, 0x39,  0, 0, 0, 5,  0, 0, 0, 6,  1,  0xcc, 0xdd,
        ];
        let st = parse_thst(&data).unwrap();
        assert_eq!(st.layout, ThstLayout::Real { header_len: 6, bytes_per_entry: 20 });
        assert_eq!(st.threads, vec![ThreadEntry {
            tid: 7,
            state: ThreadState(9),
            suspended: None,
            sys_tid: Some(12345),
            utime: Some(5),
            stime: Some(6),
            daemon: Some(true),
        }]);
        let v = serde_json::to_value(&st).unwrap();
        assert_eq!((v["layout"].as_str(), v["bytes_per_entry"].as_u64()), (Some("real"), Some(20)));
    }

    #[test]
    fn real_layout_of_17_bytes_has_no_daemon_flag() {
        let data = [4, 17, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4];
        let st = parse_thst(&data).unwrap();
        assert_eq!(st.threads[0].daemon, None);
        assert_eq!(st.threads[0].stime, Some(4));
    }

    #[test]
    fn neither_layout_reports_both_calculations() {
        let data = [4, 18, 0, 2, 0, 0, 0, 1, 1];
        assert_eq!(parse_thst(&data).unwrap_err(), DdmError::ThstLayout {
            len: 9,
            doc_count: 0x04120002,
            doc_needed: 4 + 6 * 0x04120002,
            header_len: 4,
            bytes_per_entry: 18,
            real_count: 2,
            real_needed: 40,
        });
        assert_eq!(parse_thst(&[0, 0]).unwrap_err(), DdmError::Short {
            field: "THST header",
            needed: 4,
            available: 2
        });
    }

    #[test]
    fn stack_trace_frames() {
        #[rustfmt::skip]
        let data = [
            0, 0, 0, 0,  0, 0, 0, 3,  0, 0, 0, 1,
            0, 0, 0, 1, 0, b'A',  0, 0, 0, 1, 0, b'm',  0, 0, 0, 0,  0xff, 0xff, 0xff, 0xfe,
        ];
        let st = parse_stkl(&mut Reader::new(&data)).unwrap();
        assert_eq!((st.future, st.tid), (0, 3));
        assert_eq!(st.frames, vec![StackFrame { class: "A".into(), method: "m".into(), file: None, line: -2 }]);
        let huge = [0, 0, 0, 0, 0, 0, 0, 3, 0x10, 0, 0, 0];
        assert_eq!(parse_stkl(&mut Reader::new(&huge)).unwrap_err(), DdmError::CountTooLarge {
            field: "depth",
            count: 0x1000_0000,
            needed: 0x1000_0000 * 16,
            available: 0
        });
    }
}
