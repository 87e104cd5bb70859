//! The text of `jdwpmux heap SELECTOR`: for each heap, what the VM's last HPIF said (sizes,
//! objects, when it was captured) and, when a complete map was captured (HPSG/HPSO or NHSG),
//! a table of bytes per solidity and per kind with their shares.
//!
//! VM heaps come first by id (HPIF figures, then that heap's map), then native heaps. Sizes
//! are in binary units (KiB, MiB); percentages have one decimal; times are UTC.

use std::fmt::Write;

use crate::ddm::{HeapInfo, HeapMap, Solidity};

use super::palette::{kind_name, solidity_name};
use super::units::{human_bytes, percent, plural, utc_timestamp};

/// Label column of the per-heap block.
const KEY: usize = 13;
/// Name column of the solidity/kind tables (fits "object/int/float array").
const NAME: usize = 23;

fn reason(r: u8) -> String {
    match r {
        1 => "on request".into(),
        2 => "at next GC".into(),
        3 => "at every GC".into(),
        n => format!("reason {n}"),
    }
}

fn info_block(out: &mut String, h: &HeapInfo) {
    let (max, size, alloc) = (u64::from(h.max_bytes), u64::from(h.size_bytes), u64::from(h.allocated_bytes));
    let rows = [
        ("max size", human_bytes(max)),
        ("heap size", format!("{}  ({} of max)", human_bytes(size), percent(size, max))),
        ("allocated", format!("{}  ({} used)", human_bytes(alloc), percent(alloc, size))),
        ("objects", h.objects.to_string()),
        ("captured", format!("{}  ({})", utc_timestamp(h.timestamp_ms), reason(h.reason))),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "  {k:<KEY$}{v}");
    }
}

fn table_row(out: &mut String, name: &str, bytes: &str, share: &str) {
    let _ = writeln!(out, "    {name:<NAME$}{bytes:>11}{share:>8}");
}

fn map_block(out: &mut String, m: &HeapMap) {
    let t = &m.totals;
    let mut head = vec![plural(m.segment_count as u64, "segment"), plural(m.run_count as u64, "run")];
    let mut sizes: Vec<u8> = m.segments.iter().map(|s| s.unit_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    match sizes.as_slice() {
        [] => {}
        [one] => head.push(format!("unit {one} B")),
        [first, .., last] => head.push(format!("units {first}-{last} B")),
    }
    head.push(format!("{} reported", human_bytes(t.total.bytes)));
    let _ = writeln!(out, "  {:<KEY$}{}", "map", head.join(", "));
    if m.dropped_segments > 0 {
        let n = plural(u64::from(m.dropped_segments), "segment");
        let _ = writeln!(out, "  {:<KEY$}{n} dropped (too many runs); figures are incomplete", "warning");
    }
    if t.total.units == 0 {
        return;
    }
    table_row(out, "solidity", "bytes", "share");
    // Held memory first, free last, then the total the shares are of.
    let mut sol: Vec<(&Solidity, u64)> = t.by_solidity.iter().map(|(s, u)| (s, u.bytes)).collect();
    sol.sort_by_key(|(s, _)| (**s == Solidity::Free, **s));
    for (s, b) in sol {
        table_row(out, &solidity_name(*s), &human_bytes(b), &percent(b, t.total.bytes));
    }
    table_row(out, "total", &human_bytes(t.total.bytes), &percent(t.total.bytes, t.total.bytes));
    if t.by_kind.is_empty() {
        return;
    }
    table_row(out, "kind (share of used)", "bytes", "share");
    for (k, u) in &t.by_kind {
        table_row(out, &kind_name(*k), &human_bytes(u.bytes), &percent(u.bytes, t.used.bytes));
    }
}

/// The heap report: one block per heap id, separated by blank lines; ends with a newline.
pub fn heap_summary(infos: &[HeapInfo], maps: &[&HeapMap]) -> String {
    let mut ids: Vec<(bool, u32)> = infos.iter().map(|h| (false, h.heap_id)).collect();
    ids.extend(maps.iter().map(|m| (m.native, m.heap_id)));
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return "no heap data yet (the VM has sent no HPIF and no complete heap map)\n".to_string();
    }
    let mut out = String::new();
    for (i, &(native, id)) in ids.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "{}heap {id}", if native { "native " } else { "" });
        if !native {
            match infos.iter().rev().find(|h| h.heap_id == id) {
                Some(h) => info_block(&mut out, h),
                None => {
                    let _ = writeln!(out, "  {:<KEY$}none (no HPIF reply)", "info");
                }
            }
        }
        let mut any = false;
        for m in maps.iter().filter(|m| m.native == native && m.heap_id == id) {
            map_block(&mut out, m);
            any = true;
        }
        if !any {
            let _ = writeln!(out, "  {:<KEY$}none captured", "map");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddm::heap::parse_segment;
    use crate::ddm::HeapMapBuilder;

    fn map(native: bool, heap: u32, pieces: &[(u32, u32, &[u8])]) -> HeapMap {
        let mut b = HeapMapBuilder::new();
        b.start(native, heap);
        for &(offset, len, runs) in pieces {
            let mut d = heap.to_be_bytes().to_vec();
            d.extend_from_slice(&[8, 0, 1, 0, 0]);
            d.extend_from_slice(&offset.to_be_bytes());
            d.extend_from_slice(&len.to_be_bytes());
            d.extend_from_slice(runs);
            b.add(native, parse_segment(&d).expect("test segment"));
        }
        b.finish(native, heap).expect("started above")
    }

    fn info(heap_id: u32) -> HeapInfo {
        HeapInfo {
            heap_id,
            timestamp_ms: 1_714_566_896_789,
            reason: 3,
            max_bytes: 64 << 20,
            size_bytes: 12 << 20,
            allocated_bytes: 9_961_472, // 9.5 MiB
            objects: 48_213,
        }
    }

    #[test]
    fn nothing_known() {
        assert_eq!(heap_summary(&[], &[]), "no heap data yet (the VM has sent no HPIF and no complete heap map)\n");
    }

    #[test]
    fn info_and_document_example_map() {
        // The design document's heap: 0x200 hard objects, 0x100 soft byte arrays, 0x100 free.
        let m = map(false, 1, &[(0, 0x400, &[0x01, 0xff, 0x01, 0xff, 0x12, 0xff, 0x00, 0xff])]);
        let want = "\
heap 1
  max size     64.0 MiB
  heap size    12.0 MiB  (18.8% of max)
  allocated    9.5 MiB  (79.2% used)
  objects      48213
  captured     2024-05-01 12:34:56.789 UTC  (at every GC)
  map          1 segment, 4 runs, unit 8 B, 8.0 KiB reported
    solidity                     bytes   share
    hard                       4.0 KiB   50.0%
    soft                       2.0 KiB   25.0%
    free                       2.0 KiB   25.0%
    total                      8.0 KiB  100.0%
    kind (share of used)         bytes   share
    object                     4.0 KiB   66.7%
    byte/boolean array         2.0 KiB   33.3%
";
        assert_eq!(heap_summary(&[info(1)], &[&m]), want);
    }

    #[test]
    fn heaps_without_map_or_info_native_last_and_odd_values() {
        let mut zero = info(2);
        (zero.max_bytes, zero.size_bytes, zero.allocated_bytes, zero.objects, zero.reason) = (0, 0, 0, 0, 9);
        zero.timestamp_ms = 0;
        let vm3 = map(false, 3, &[(0, 2, &[0x07, 0x00, 0x31, 0x00]), (0x10, 1, &[0x00, 0x00])]);
        let native = map(true, 1, &[(0, 4, &[0x39, 0x02, 0x00, 0x00])]);
        let empty = map(true, 7, &[]);
        let want = "\
heap 2
  max size     0 B
  heap size    0 B  (- of max)
  allocated    0 B  (- used)
  objects      0
  captured     1970-01-01 00:00:00.000 UTC  (reason 9)
  map          none captured

heap 3
  info         none (no HPIF reply)
  map          2 segments, 3 runs, unit 8 B, 24 B reported
    solidity                     bytes   share
    hard                           8 B   33.3%
    solidity 7                     8 B   33.3%
    free                           8 B   33.3%
    total                         24 B  100.0%
    kind (share of used)         bytes   share
    object                         8 B   50.0%
    kind 6                         8 B   50.0%

native heap 1
  map          1 segment, 2 runs, unit 8 B, 32 B reported
    solidity                     bytes   share
    hard                          24 B   75.0%
    free                           8 B   25.0%
    total                         32 B  100.0%
    kind (share of used)         bytes   share
    native (non-VM)               24 B  100.0%

native heap 7
  map          0 segments, 0 runs, 0 B reported
";
        assert_eq!(heap_summary(&[zero], &[&native, &vm3, &empty]), want);
    }

    #[test]
    fn dropped_segments_are_flagged() {
        let mut m = map(false, 1, &[(0, 1, &[0x01, 0x00])]);
        m.dropped_segments = 3;
        let s = heap_summary(&[], &[&m]);
        assert!(s.contains("\n  warning      3 segments dropped (too many runs); figures are incomplete\n"), "{s}");
    }
}
