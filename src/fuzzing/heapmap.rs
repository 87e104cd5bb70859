//! Heap maps: HPST/HPSG/HPSO/HPEN (and NHST/NHSG/NHEN) chunks from a VM assembled by the
//! per-VM state, then laid out, drawn and encoded as a PNG.
//!
//! Input: a DDM payload from the VM (the chunks of many packets, back to back). What must
//! hold for every finished map:
//! - its totals add up: total = free + used, the per-solidity figures sum to the total and
//!   the per-kind ones to the used part, the run count is the runs kept;
//! - each segment's runs cover exactly its declared length;
//! - the picture is within `MAX_IMAGE_SIDE` a side, every run's square lies inside the map
//!   area, and the PNG decodes to the laid-out size with its title;
//! - the text summary renders.

use std::io::Cursor;

use crate::ddm::heapmap::MAX_PENDING_RUNS;
use crate::ddm::{decode_payload, ClientData, Dir, HeapMap};
use crate::views::{heap_summary, layout, render_png, MAX_IMAGE_SIDE};

/// Runs whose squares are looked up per map (the lookup walks the map: keep inputs fast).
const RUNS_LOOKED_UP: usize = 64;

pub fn check(data: &[u8]) {
    let mut state = ClientData::new();
    for chunk in decode_payload(data, Dir::FromVm, false, None).iter().flatten() {
        state.apply(chunk);
    }
    let maps: Vec<&HeapMap> = state.heap_maps.values().chain(state.native_heap_maps.values()).map(|m| &**m).collect();
    assert!(maps.len() <= 2 * (data.len() / 8 + 1));
    for map in &maps {
        totals_add_up(map);
        picture_fits(map);
    }
    let infos: Vec<_> = state.heap_infos.values().cloned().collect();
    let _ = heap_summary(&infos, &maps);
}

fn totals_add_up(map: &HeapMap) {
    let t = &map.totals;
    assert_eq!(t.total.units, t.free.units + t.used.units);
    assert_eq!(t.total.bytes, t.free.bytes + t.used.bytes);
    assert_eq!(t.total.units, t.by_solidity.values().map(|u| u.units).sum::<u64>());
    assert_eq!(t.used.bytes, t.by_kind.values().map(|u| u.bytes).sum::<u64>());
    assert_eq!(map.run_count, map.segments.iter().map(|s| s.runs.len()).sum::<usize>());
    assert!(map.run_count <= MAX_PENDING_RUNS && map.segment_count == map.segments.len());
    for seg in &map.segments {
        let units: u64 = seg.runs.iter().map(|r| u64::from(r.units)).sum();
        assert_eq!(units, u64::from(seg.length_units), "runs and length disagree");
    }
}

fn picture_fits(map: &HeapMap) {
    let l = layout(map);
    assert!(l.width > 0 && l.height > 0 && l.width <= MAX_IMAGE_SIDE && l.height <= MAX_IMAGE_SIDE);
    let (map_w, map_h) = l.map_size();
    assert!(l.map_origin.0 + map_w <= l.width, "map wider than the picture");
    for run in map.runs().take(RUNS_LOOKED_UP) {
        if let Some((x, y)) = l.position_of(run.address) {
            assert!(x < l.map_origin.0 + map_w && y < l.map_origin.1 + map_h, "run square outside the map");
        }
    }
    let png = render_png(map).unwrap_or_else(|e| panic!("{}x{}: {e}", l.width, l.height));
    let decoder = png::Decoder::new(Cursor::new(&png));
    let reader = decoder.read_info().unwrap_or_else(|e| panic!("our PNG does not decode: {e}"));
    let info = reader.info();
    assert_eq!((info.width, info.height), (l.width, l.height));
    assert!(info.uncompressed_latin1_text.iter().any(|t| t.keyword == "Title" && t.text.starts_with("jdwpmux ")));
}
