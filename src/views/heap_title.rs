//! The title lines above a heap map picture: which heap, unit size, counts, totals, the
//! scale, the address range and notes (shortened gaps, dropped segments), wrapped between
//! fields to the picture's width.

use crate::ddm::HeapMap;

use super::units::{human_bytes, percent, plural};

/// Title text as groups of fields; each group starts a new line.
pub(crate) fn title_groups(
    map: &HeapMap,
    cells: u64,
    upp: u64,
    columns: u32,
    scale: u32,
    gap_cap: u64,
    shortened: u64,
) -> Vec<Vec<String>> {
    let name = format!("{}heap {}", if map.native { "native " } else { "" }, map.heap_id);
    let mut sizes: Vec<u8> = map.segments.iter().map(|s| s.unit_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let unit = match sizes.as_slice() {
        [] => None,
        [one] => Some(format!("unit {one} B")),
        [first, .., last] => Some(format!("units {first}-{last} B")),
    };
    let mut head = vec![name];
    head.extend(unit);
    head.push(format!("{}, {}", plural(map.segment_count as u64, "segment"), plural(map.run_count as u64, "run")));
    let t = &map.totals;
    let mut groups = vec![head];
    if cells == 0 {
        groups.push(vec!["no data".to_string()]);
    } else {
        groups.push(vec![
            format!("total {}", human_bytes(t.total.bytes)),
            format!("used {} ({})", human_bytes(t.used.bytes), percent(t.used.bytes, t.total.bytes)),
            format!("free {} ({})", human_bytes(t.free.bytes), percent(t.free.bytes, t.total.bytes)),
        ]);
        let row_units = u64::from(columns) * upp;
        let mut row = format!("row = {row_units} units");
        if let [one] = sizes.as_slice() {
            row += &format!(" = {}", human_bytes(row_units * u64::from(*one)));
        }
        let per = match (upp, scale) {
            (1, 1) => "1 unit = 1 px".to_string(),
            (1, s) => format!("1 unit = {s}x{s} px"),
            (n, _) => format!("1 px = {n} units (majority shown)"),
        };
        groups.push(vec![per, row]);
        let mut notes = Vec::new();
        let ends = map
            .segments
            .iter()
            .map(|s| s.start() + s.runs.iter().map(|r| u64::from(r.units)).sum::<u64>() * u64::from(s.unit_size));
        if let (Some(first), Some(end)) = (map.segments.iter().map(|s| s.start()).min(), ends.max()) {
            notes.push(format!("address 0x{first:x}-0x{end:x}"));
        }
        if shortened > 0 {
            notes.push(format!("{} shortened to {gap_cap} units", plural(shortened, "gap")));
        }
        groups.push(notes);
    }
    if map.dropped_segments > 0 {
        groups.push(vec![format!("{} dropped (too many runs)", plural(u64::from(map.dropped_segments), "segment"))]);
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// Joins each group's fields with three spaces, breaking lines between fields so that none is
/// longer than `max_chars` (a single over-long field gets a line of its own and is clipped
/// when drawn).
pub(crate) fn wrap(groups: &[Vec<String>], max_chars: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for group in groups {
        let mut line = String::new();
        for field in group {
            let needed = line.chars().count() + 3 + field.chars().count();
            if !line.is_empty() && needed > max_chars {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push_str("   ");
            }
            line.push_str(field);
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_between_fields_and_keeps_groups_apart() {
        let groups = vec![
            vec!["heap 1".to_string(), "unit 8 B".to_string(), "2 segments, 9 runs".to_string()],
            vec!["a-field-longer-than-the-line".to_string(), "x".to_string()],
        ];
        let cases: [(usize, &[&str]); 3] = [
            (80, &["heap 1   unit 8 B   2 segments, 9 runs", "a-field-longer-than-the-line   x"]),
            (20, &["heap 1   unit 8 B", "2 segments, 9 runs", "a-field-longer-than-the-line", "x"]),
            (1, &["heap 1", "unit 8 B", "2 segments, 9 runs", "a-field-longer-than-the-line", "x"]),
        ];
        for (max, want) in cases {
            assert_eq!(wrap(&groups, max), want, "max {max}");
        }
    }
}
