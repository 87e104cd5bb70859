//! Assembling heap segments into a picture of one heap: HPST, then HPSG/HPSO pieces, then
//! HPEN (NHST/NHSG/NHEN for native heaps), per heap id. A finished [`HeapMap`] has totals
//! per solidity and kind and exposes its runs, placed at byte addresses, for drawing.
//!
//! A VM that starts maps and never ends them must not grow our memory: pending run storage
//! has one budget across all open maps, and segments past it are counted, not kept.

use std::collections::BTreeMap;

use serde::Serialize;

use super::heap::{HeapSegment, HeapState, Kind, Solidity};

/// Runs held across all maps still being assembled (4 bytes each: 16 MiB).
pub const MAX_PENDING_RUNS: usize = 1 << 22;
/// Heaps that may be open (started, not ended) at once.
pub const MAX_OPEN_MAPS: usize = 16;

/// A quantity of heap in allocation units and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub units: u64,
    pub bytes: u64,
}

impl Usage {
    fn add(&mut self, units: u64, unit_size: u8) {
        self.units += units;
        self.bytes += units * u64::from(unit_size);
    }
}

/// Totals over a whole map. `by_kind` counts only units that are not free (the kind bits of
/// a free run say nothing about what is stored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HeapTotals {
    pub total: Usage,
    pub free: Usage,
    pub used: Usage,
    pub by_solidity: BTreeMap<Solidity, Usage>,
    pub by_kind: BTreeMap<Kind, Usage>,
}

/// A run at its byte address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedRun {
    pub address: u64,
    pub units: u32,
    pub unit_size: u8,
    pub state: HeapState,
}

impl PlacedRun {
    pub fn bytes(&self) -> u64 {
        u64::from(self.units) * u64::from(self.unit_size)
    }
}

/// One complete heap picture. Serialized without the runs (they can be millions); callers
/// that draw use [`HeapMap::segments`] or [`HeapMap::runs`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapMap {
    pub heap_id: u32,
    /// Built from NHST/NHSG/NHEN rather than HPST/HPSG|HPSO/HPEN.
    pub native: bool,
    /// Pieces in address order.
    #[serde(skip)]
    pub segments: Vec<HeapSegment>,
    pub segment_count: usize,
    pub run_count: usize,
    pub totals: HeapTotals,
    /// Segments not kept because the pending-run budget was exhausted.
    pub dropped_segments: u32,
}

impl HeapMap {
    fn build(heap_id: u32, native: bool, mut segments: Vec<HeapSegment>, dropped_segments: u32) -> Self {
        segments.sort_by_key(|s| s.start());
        let mut totals = HeapTotals::default();
        for seg in &segments {
            for run in &seg.runs {
                let units = u64::from(run.units);
                totals.total.add(units, seg.unit_size);
                let sol = run.state.solidity();
                totals.by_solidity.entry(sol).or_default().add(units, seg.unit_size);
                if sol == Solidity::Free {
                    totals.free.add(units, seg.unit_size);
                } else {
                    totals.used.add(units, seg.unit_size);
                    totals.by_kind.entry(run.state.kind()).or_default().add(units, seg.unit_size);
                }
            }
        }
        let run_count = segments.iter().map(|s| s.runs.len()).sum();
        HeapMap { heap_id, native, segment_count: segments.len(), run_count, segments, totals, dropped_segments }
    }

    /// Every run at its byte address, in address order of the pieces.
    pub fn runs(&self) -> impl Iterator<Item = PlacedRun> + '_ {
        self.segments.iter().flat_map(|seg| {
            let mut addr = seg.start();
            seg.runs.iter().map(move |run| {
                let placed =
                    PlacedRun { address: addr, units: u32::from(run.units), unit_size: seg.unit_size, state: run.state };
                addr += placed.bytes();
                placed
            })
        })
    }
}

#[derive(Debug, Clone, Default)]
struct Pending {
    segments: Vec<HeapSegment>,
    dropped: u32,
}

/// Collects segments between start and end messages, per (native?, heap id).
#[derive(Debug, Clone, Default)]
pub struct HeapMapBuilder {
    open: BTreeMap<(bool, u32), Pending>,
    pending_runs: usize,
}

impl HeapMapBuilder {
    pub fn new() -> Self {
        HeapMapBuilder::default()
    }

    /// HPST/NHST: forget whatever was being assembled for this heap.
    pub fn start(&mut self, native: bool, heap_id: u32) {
        self.discard(native, heap_id);
        if self.open.len() < MAX_OPEN_MAPS {
            self.open.insert((native, heap_id), Pending::default());
        }
    }

    /// A segment; one arriving without a start message opens its heap implicitly.
    pub fn add(&mut self, native: bool, seg: HeapSegment) {
        let key = (native, seg.heap_id);
        if !self.open.contains_key(&key) && self.open.len() >= MAX_OPEN_MAPS {
            return;
        }
        let fits = self.pending_runs + seg.runs.len() <= MAX_PENDING_RUNS;
        let pending = self.open.entry(key).or_default();
        if fits {
            self.pending_runs += seg.runs.len();
            pending.segments.push(seg);
        } else {
            pending.dropped = pending.dropped.saturating_add(1);
        }
    }

    /// HPEN/NHEN: the finished map, or `None` if this heap was never started.
    pub fn finish(&mut self, native: bool, heap_id: u32) -> Option<HeapMap> {
        let pending = self.open.remove(&(native, heap_id))?;
        self.pending_runs -= pending.segments.iter().map(|s| s.runs.len()).sum::<usize>();
        Some(HeapMap::build(heap_id, native, pending.segments, pending.dropped))
    }

    fn discard(&mut self, native: bool, heap_id: u32) {
        if let Some(p) = self.open.remove(&(native, heap_id)) {
            self.pending_runs -= p.segments.iter().map(|s| s.runs.len()).sum::<usize>();
        }
    }

    /// Heaps started and not yet ended.
    pub fn open_maps(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::heap::{parse_segment, Run};
    use super::*;

    fn seg(heap: u32, offset: u32, len: u32, runs: &[u8]) -> HeapSegment {
        let mut d = heap.to_be_bytes().to_vec();
        d.extend_from_slice(&[8, 0, 1, 0, 0]);
        d.extend_from_slice(&offset.to_be_bytes());
        d.extend_from_slice(&len.to_be_bytes());
        d.extend_from_slice(runs);
        parse_segment(&d).unwrap()
    }

    /// The document's 0x400-unit heap at 0x10000: 0x200 hard objects, 0x100 byte arrays
    /// (soft), 0x100 free.
    const RUNS: [u8; 8] = [0x01, 0xff, 0x01, 0xff, 0x12, 0xff, 0x00, 0xff];

    fn check_example(map: &HeapMap) {
        let t = &map.totals;
        assert_eq!(t.total, Usage { units: 0x400, bytes: 0x2000 });
        assert_eq!(t.free, Usage { units: 0x100, bytes: 0x800 });
        assert_eq!(t.used, Usage { units: 0x300, bytes: 0x1800 });
        assert_eq!(t.by_solidity[&Solidity::Hard], Usage { units: 0x200, bytes: 0x1000 });
        assert_eq!(t.by_solidity[&Solidity::Soft], Usage { units: 0x100, bytes: 0x800 });
        assert_eq!(t.by_kind[&Kind::Object], Usage { units: 0x200, bytes: 0x1000 });
        assert_eq!(t.by_kind[&Kind::Array1], Usage { units: 0x100, bytes: 0x800 });
        assert_eq!(t.by_kind.len(), 2, "free units are not counted by kind");
        let runs: Vec<PlacedRun> = map.runs().collect();
        let addrs: Vec<u64> = runs.iter().map(|r| r.address).collect();
        assert_eq!(addrs, vec![0x10000, 0x10800, 0x11000, 0x11800]);
        assert!(runs[3].state.is_free());
        assert_eq!(runs.iter().map(PlacedRun::bytes).sum::<u64>(), 0x2000);
    }

    #[test]
    fn document_example_one_chunk() {
        let mut b = HeapMapBuilder::new();
        b.start(false, 1);
        b.add(false, seg(1, 0, 0x400, &RUNS));
        let map = b.finish(false, 1).unwrap();
        assert_eq!((map.heap_id, map.native, map.segment_count, map.run_count), (1, false, 1, 4));
        check_example(&map);
        assert_eq!(b.open_maps(), 0);
    }

    #[test]
    fn document_example_two_pieces_out_of_order() {
        let mut b = HeapMapBuilder::new();
        b.start(false, 1);
        b.add(false, seg(1, 0x300, 0x100, &RUNS[6..]));
        b.add(false, seg(1, 0, 0x300, &RUNS[..6]));
        let map = b.finish(false, 1).unwrap();
        assert_eq!(map.segment_count, 2);
        check_example(&map);
    }

    #[test]
    fn heaps_and_native_maps_are_kept_apart() {
        let mut b = HeapMapBuilder::new();
        b.start(false, 1);
        b.start(true, 1);
        b.add(true, seg(1, 0, 2, &[0x39, 0x01]));
        b.add(false, seg(1, 0, 0x400, &RUNS));
        b.add(false, seg(2, 0, 1, &[0x00, 0x00])); // heap 2 opened implicitly
        let native = b.finish(true, 1).unwrap();
        assert_eq!(native.totals.by_kind[&Kind::Native].units, 2);
        check_example(&b.finish(false, 1).unwrap());
        assert_eq!(b.finish(false, 2).unwrap().totals.free.units, 1);
        assert!(b.finish(false, 3).is_none());
    }

    #[test]
    fn restart_discards_pieces() {
        let mut b = HeapMapBuilder::new();
        b.start(false, 1);
        b.add(false, seg(1, 0, 0x400, &RUNS));
        b.start(false, 1);
        let map = b.finish(false, 1).unwrap();
        assert_eq!((map.segment_count, map.totals.total.units), (0, 0));
        assert_eq!(b.pending_runs, 0);
    }

    #[test]
    fn budget_drops_segments_instead_of_growing() {
        let mut b = HeapMapBuilder::new();
        let big = HeapSegment {
            heap_id: 1,
            unit_size: 8,
            address: 0,
            offset: 0,
            length_units: 0,
            runs: vec![Run { state: HeapState(1), units: 1 }; MAX_PENDING_RUNS - 1],
        };
        b.add(false, big);
        b.add(false, seg(1, 0, 2, &[0x01, 0x01])); // would exceed: dropped
        b.add(false, seg(1, 0, 1, &[0x01, 0x00])); // fits exactly
        let map = b.finish(false, 1).unwrap();
        assert_eq!((map.segment_count, map.dropped_segments), (2, 1));
        for i in 0..MAX_OPEN_MAPS as u32 + 5 {
            b.start(false, i);
        }
        assert_eq!(b.open_maps(), MAX_OPEN_MAPS);
    }

    #[test]
    fn serializes_totals_not_runs() {
        let mut b = HeapMapBuilder::new();
        b.add(false, seg(1, 0, 0x400, &RUNS));
        let v = serde_json::to_value(b.finish(false, 1).unwrap()).unwrap();
        assert!(v.get("segments").is_none());
        assert_eq!(v["totals"]["by_solidity"]["hard"]["bytes"], 0x1000);
        assert_eq!(v["totals"]["by_kind"]["array1"]["units"], 0x100);
    }
}
