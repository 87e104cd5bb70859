//! Reading a DDM-aware VM's heap: the HPIF figures now and, when asked, the map the VM sends
//! during the next GC (HPSG or NHSG), optionally after asking for that GC. Shared by
//! `jdwpmux heap` and the web monitor, so both show the same thing.

use std::sync::Arc;
use std::time::Duration;

use crate::ddm::{Chunk, ChunkType, HeapInfo, HeapMap};
use crate::session::{Completion, VmHandle};
use crate::views;

/// Longest wait for the HPIF answer.
pub const HEAP_INFO_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the VM to take segment updates off again.
const OFF_TIMEOUT: Duration = Duration::from_secs(5);

/// A PNG and its size in pixels.
pub type Png = (Vec<u8>, (u32, u32));

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapAsk {
    /// The native heap (NHSG) instead of the VM heap (HPSG).
    pub native: bool,
    /// Ask the VM for a GC, so the map comes at once.
    pub gc: bool,
    /// Wait for a map at all (else only the HPIF figures).
    pub map: bool,
    /// How long to wait for the next GC's map.
    pub timeout: Duration,
}

/// The figures and maps of one reading.
#[derive(Debug, Clone)]
pub struct HeapReading {
    pub infos: Vec<HeapInfo>,
    pub maps: Vec<Arc<HeapMap>>,
}

impl HeapReading {
    /// The text `jdwpmux heap` prints.
    pub fn text(&self) -> String {
        let maps: Vec<&HeapMap> = self.maps.iter().map(|m| m.as_ref()).collect();
        views::heap_summary(&self.infos, &maps)
    }

    /// The first map drawn as a PNG, with its size in pixels; `None` without a map.
    pub fn png(&self) -> Result<Option<Png>, String> {
        let Some(m) = self.maps.first() else { return Ok(None) };
        let bytes = views::render_png(m).map_err(|e| format!("drawing the heap map: {e}"))?;
        let l = views::layout(m);
        Ok(Some((bytes, (l.width, l.height))))
    }
}

/// Reads the heap; the error is a sentence for the user.
pub async fn read(h: &VmHandle, ask: HeapAsk) -> Result<HeapReading, String> {
    // HPIF `u1 when` (1 = now), the same in the document and today; the heap info comes
    // pushed (or in the reply). A FAIL or JDWP error is shown.
    let summary = h
        .ddm(vec![Chunk::HpifRequest { when: 1 }], vec![ChunkType::HPIF], Completion::Chunks, HEAP_INFO_TIMEOUT)
        .await
        .map_err(|e| format!("heap info: {e}"))?;
    let infos: Vec<HeapInfo> = summary.state.heap_infos.values().copied().collect();
    if !ask.map {
        return Ok(HeapReading { infos, maps: Vec::new() });
    }
    // HPSG/NHSG `u1 when, u1 what` (when 1: at every GC, then off again with 0), the same
    // in the document and today. HPGC (empty) is not in the document: a VM that follows it
    // answers it empty and runs no GC, so the map waits for the VM's own GC. A FAIL or JDWP
    // error for either is shown; one for "off" is only logged.
    let (on, off, end) = if ask.native {
        (Chunk::NhsgRequest { when: 1, what: 0 }, Chunk::NhsgRequest { when: 0, what: 0 }, ChunkType::NHEN)
    } else {
        (Chunk::HpsgRequest { when: 1, what: 0 }, Chunk::HpsgRequest { when: 0, what: 0 }, ChunkType::HPEN)
    };
    let mut chunks = vec![on];
    if ask.gc {
        chunks.push(Chunk::Hpgc);
    }
    let answer = h.ddm(chunks, vec![end], Completion::Chunks, ask.timeout).await;
    let _ = h.ddm(vec![off], Vec::new(), Completion::Chunks, OFF_TIMEOUT).await;
    let answer = answer.map_err(|e| {
        let hint = if ask.gc {
            " (no GC followed the request: a VM that follows the design document does not know HPGC and sends the map at its own next GC)"
        } else {
            " (no GC happened; add --gc to ask for one)"
        };
        format!("heap map: {e}{hint}")
    })?;
    let maps = if ask.native { &answer.state.native_heap_maps } else { &answer.state.heap_maps };
    Ok(HeapReading { infos, maps: maps.values().cloned().collect() })
}
