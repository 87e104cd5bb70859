//! The fake VM as the design document describes a DDM client: the requests it defines, and
//! THST from the server as "enable periodic thread activity updates" (`u4 interval` in ms,
//! 0 = off), answered by status chunks in the document's layout pushed every interval.

use std::sync::Arc;
use std::time::Duration;

use super::super::ddm::thst_document_payload;
use super::super::wire::Chunk;
use super::ddm::{fail_chunk, live_thst_entries};
use super::state::{Conn, Shared};

/// The FAIL code the fake VM uses for a malformed request.
pub const BAD_REQUEST: u32 = 1;

/// Server-to-client chunk types the document defines (DTRC is left "TBD" there).
pub(super) fn knows(ty: &[u8; 4]) -> bool {
    matches!(ty, b"HELO" | b"DBGD" | b"THEN" | b"THST" | b"HPIF" | b"HPSG" | b"NHSG" | b"EXIT")
}

/// THST `u4 interval`: (re)starts or stops the pushes; returns the answer chunk, if any. An
/// empty request (what later VMs take) is too short: FAIL.
pub(super) fn thst_request(shared: &Arc<Shared>, conn: &Arc<Conn>, data: &[u8]) -> Option<Chunk> {
    let interval = data.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let Some(ms) = interval else {
        return Some(fail_chunk(BAD_REQUEST, "THST request too short: expected u4 interval"));
    };
    let old = conn.pusher.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(task) = old {
        task.abort();
    }
    shared.with(|s| s.thst_interval = ms);
    if ms > 0 {
        let (sh, c) = (shared.clone(), conn.clone());
        let task = tokio::spawn(async move {
            loop {
                if !c.send(c.ddm_packet(&[status(&sh)]).encode()) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
            }
        })
        .abort_handle();
        *conn.pusher.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.clone());
        shared.with(|s| s.tasks.push(task));
    }
    None
}

/// Thread status in the document's layout: state as in the real layout, suspended when the
/// thread's suspend count is above zero.
fn status(shared: &Shared) -> Chunk {
    let suspended = shared.read(|s| s.thread_suspend.clone());
    let entries: Vec<(u32, u8, bool)> = live_thst_entries(shared)
        .iter()
        .enumerate()
        .map(|(i, e)| (e.tid, e.state, suspended.get(i).is_some_and(|n| *n > 0)))
        .collect();
    Chunk::new(b"THST", thst_document_payload(&entries))
}
