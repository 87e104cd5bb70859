//! Encoders for the VM's list-shaped chunks (THST, STKL, HPIF, ARTT), split from encode.rs
//! for size. Only tests and fake VMs need them; the proxy itself never sends these.

use super::info::{CmdTiming, HeapInfo};
use super::reader::Writer;
use super::threads::{StackTrace, ThreadStatus, ThstLayout};

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// THST in the layout recorded in `st`; bytes a layout reserves beyond the known fields are
/// written as zeros.
pub(super) fn thst(w: &mut Writer, st: &ThreadStatus) {
    match st.layout {
        ThstLayout::Document => {
            w.put_u4(count(st.threads.len()));
            for t in &st.threads {
                w.put_u4(t.tid).put_u1(t.state.0).put_u1(u8::from(t.suspended.unwrap_or(false)));
            }
        }
        ThstLayout::Real { header_len, bytes_per_entry } => {
            let n = u16::try_from(st.threads.len()).unwrap_or(u16::MAX);
            w.put_u1(header_len).put_u1(bytes_per_entry).put_u2(n);
            for _ in 4..header_len {
                w.put_u1(0);
            }
            for t in st.threads.iter().take(usize::from(n)) {
                w.put_u4(t.tid).put_u1(t.state.0);
                w.put_u4(t.sys_tid.unwrap_or(0)).put_u4(t.utime.unwrap_or(0)).put_u4(t.stime.unwrap_or(0));
                let mut written = 17u8;
                if bytes_per_entry >= 18 {
                    w.put_u1(u8::from(t.daemon.unwrap_or(false)));
                    written = 18;
                }
                for _ in written..bytes_per_entry {
                    w.put_u1(0);
                }
            }
        }
    }
}

pub(super) fn stkl(w: &mut Writer, st: &StackTrace) {
    w.put_u4(st.future).put_u4(st.tid).put_u4(count(st.frames.len()));
    for fr in &st.frames {
        w.put_string(&fr.class).put_string(&fr.method);
        w.put_string(fr.file.as_deref().unwrap_or(""));
        w.put_u4(fr.line as u32);
    }
}

pub(super) fn hpif(w: &mut Writer, heaps: &[HeapInfo]) {
    w.put_u4(count(heaps.len()));
    for h in heaps {
        w.put_u4(h.heap_id).put_u8(h.timestamp_ms).put_u1(h.reason);
        w.put_u4(h.max_bytes).put_u4(h.size_bytes).put_u4(h.allocated_bytes).put_u4(h.objects);
    }
}

pub(super) fn artt(w: &mut Writer, version: u32, timings: &[CmdTiming]) {
    w.put_u4(version).put_u4(count(timings.len()));
    for t in timings {
        w.put_u4(t.id).put_u4(t.cmd_set).put_u4(t.cmd).put_u8(t.start_ns).put_u8(t.duration_ns);
    }
}
