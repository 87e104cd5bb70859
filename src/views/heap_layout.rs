//! Where everything goes in a heap map picture: which map pixel shows which allocation units,
//! how big the picture is, the title lines and the legend. Pure arithmetic on a [`HeapMap`],
//! so tests can check pixels without drawing or decoding anything.
//!
//! The map is a grid read like text: units in address order, row by row, left to right.
//! - Scale: a map of C cells (units plus gap units) gets a power-of-two number of columns,
//!   at least sqrt(C), so rows hold a round number of units. Small maps are blown up to
//!   squares of `scale` x `scale` image pixels so the map is about [`MIN_MAP_SIDE`] wide
//!   (at most [`MAX_SCALE`]); maps of more than [`MAX_MAP_SIDE`]² cells are downscaled, each
//!   pixel standing for `units_per_pixel` (a power of two) cells and showing the paint that
//!   covers most of them (ties: the earlier paint in legend order, i.e. used before free
//!   before gap).
//! - Gaps between segments are drawn in the gap colour at their true length in units of the
//!   following segment, but all gaps together take at most a fifth of the picture (a quarter
//!   as many cells as reported units): a gap longer than its equal share (`gap_cap` units) is
//!   shortened, and the title says so, so that segments at distant addresses do not
//!   shrink the data into a corner.

use crate::ddm::HeapMap;

use super::font::{text_width, ADVANCE, LINE_HEIGHT};
use super::heap_title::{title_groups, wrap};
use super::palette::{Paint, PAINTS};
use super::units::{human_bytes, percent};

/// The map area is never more than this many pixels wide or tall; bigger maps are downscaled.
pub const MAX_MAP_SIDE: u32 = 2048;
/// Small maps are enlarged until about this wide.
pub const MIN_MAP_SIDE: u32 = 256;
/// Largest square drawn for one unit.
pub const MAX_SCALE: u32 = 32;
/// The picture is at least this wide, so titles stay readable.
pub const MIN_WIDTH: u32 = 512;
/// Space between a legend swatch and its text, in font pixels.
pub(crate) const SWATCH_TEXT_GAP: u32 = 4;
/// Hard cap on the whole picture (map, title and legend); [`Layout`] never exceeds it.
pub const MAX_IMAGE_SIDE: u32 = 4096;

/// Where one segment's units start in the grid, after the (possibly shortened) gap before it.
#[derive(Debug, Clone, Copy)]
struct Placement {
    start: u64,
    unit_size: u64,
    units: u64,
    gap_cells: u64,
    first_cell: u64,
}

/// One legend line: a swatch of `colour` and `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegendEntry {
    pub paint: Paint,
    pub colour: [u8; 3],
    /// Reported bytes in this paint (for the gap: unreported bytes between segments).
    pub bytes: u64,
    pub text: String,
}

/// The computed geometry of one heap picture. All coordinates are image pixels.
#[derive(Debug, Clone)]
pub struct Layout<'a> {
    map: &'a HeapMap,
    placements: Vec<Placement>,
    /// Grid cells: reported units plus drawn gap units.
    pub cells: u64,
    pub units_per_pixel: u64,
    pub columns: u32,
    pub rows: u32,
    /// Side of the square drawn per map pixel.
    pub scale: u32,
    pub gap_cap: u64,
    pub shortened_gaps: u64,
    pub text_scale: u32,
    pub padding: u32,
    pub width: u32,
    pub height: u32,
    pub map_origin: (u32, u32),
    pub title: Vec<String>,
    pub title_origin: (u32, u32),
    pub legend: Vec<LegendEntry>,
    pub legend_origin: (u32, u32),
    pub legend_rows: u32,
    pub legend_column_width: u32,
}

/// `ceil(sqrt(n))` for the sizes we meet (exact, no float rounding surprises).
fn ceil_sqrt(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r * r < n {
        r += 1;
    }
    while r > 0 && (r - 1) * (r - 1) >= n {
        r -= 1;
    }
    r
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Lays out `map` with the standard limits.
pub fn layout(map: &HeapMap) -> Layout<'_> {
    layout_with(map, MAX_MAP_SIDE)
}

/// [`layout`] with another downscaling threshold (tests use small ones).
pub(crate) fn layout_with(map: &HeapMap, max_side: u32) -> Layout<'_> {
    let reported: u64 = map.segments.iter().flat_map(|s| &s.runs).map(|r| u64::from(r.units)).sum();
    let mut bytes = [0u64; PAINTS];
    let (mut gaps, mut end) = (0u64, None::<u64>);
    for seg in &map.segments {
        let units: u64 = seg.runs.iter().map(|r| u64::from(r.units)).sum();
        if end.is_some_and(|e| seg.start() > e) {
            gaps += 1;
        }
        end = Some(end.unwrap_or(0).max(seg.start() + units * u64::from(seg.unit_size.max(1))));
    }
    let gap_cap = (reported / 4 / gaps.max(1)).max(1);
    let (mut placements, mut cell, mut shortened, mut end) = (Vec::new(), 0u64, 0u64, None::<u64>);
    for seg in &map.segments {
        let unit_size = u64::from(seg.unit_size.max(1));
        let units: u64 = seg.runs.iter().map(|r| u64::from(r.units)).sum();
        for r in &seg.runs {
            bytes[Paint::of(r.state).index()] += u64::from(r.units) * unit_size;
        }
        let start = seg.start();
        // With nothing reported there is no map to place gaps in.
        let gap_bytes = if reported == 0 { 0 } else { end.map_or(0, |e| start.saturating_sub(e)) };
        bytes[Paint::Gap.index()] += gap_bytes;
        let gap_units = gap_bytes.div_ceil(unit_size);
        if gap_units > gap_cap {
            shortened += 1;
        }
        let gap_cells = gap_units.min(gap_cap);
        placements.push(Placement { start, unit_size, units, gap_cells, first_cell: cell + gap_cells });
        cell += gap_cells + units;
        end = Some(end.unwrap_or(0).max(start + units * unit_size));
    }
    let cells = cell;
    let max_cells = u64::from(max_side) * u64::from(max_side);
    let units_per_pixel = if cells <= max_cells { 1 } else { cells.div_ceil(max_cells).next_power_of_two() };
    let pixels = cells.div_ceil(units_per_pixel);
    let columns = to_u32(ceil_sqrt(pixels).next_power_of_two().min(u64::from(max_side)));
    let rows = to_u32(pixels.div_ceil(u64::from(columns.max(1))));
    let scale = (MIN_MAP_SIDE / columns.max(1)).clamp(1, MAX_SCALE);
    let (map_w, map_h) = if cells == 0 { (0, 0) } else { (columns * scale, rows * scale) };
    let text_scale = (map_w / 512).clamp(2, 4);
    let padding = 6 * text_scale;

    let total = map.totals.total.bytes;
    // Label, size and share in aligned columns (the font is monospaced).
    let parts: Vec<(Paint, u64, String, String, String)> = (0..PAINTS)
        .map(Paint::from_index)
        .filter(|p| bytes[p.index()] > 0)
        .map(|p| {
            let b = bytes[p.index()];
            // The gap is no part of the heap: no share.
            let share = if p == Paint::Gap { String::new() } else { percent(b, total) };
            (p, b, p.label(), human_bytes(b), share)
        })
        .collect();
    let lw = parts.iter().map(|p| p.2.len()).max().unwrap_or(0);
    let bw = parts.iter().map(|p| p.3.len()).max().unwrap_or(0);
    let sw = parts.iter().map(|p| p.4.len()).max().unwrap_or(0);
    let legend: Vec<LegendEntry> = parts
        .into_iter()
        .map(|(paint, bytes, label, size, share)| {
            let text = format!("{label:<lw$}  {size:>bw$}  {share:>sw$}").trim_end().to_string();
            LegendEntry { paint, colour: paint.colour(), bytes, text }
        })
        .collect();
    // Swatch (one glyph height square), a gap, then the text.
    let entry_w =
        |e: &LegendEntry| SWATCH_TEXT_GAP.saturating_mul(text_scale) + 7 * text_scale + text_width(&e.text, text_scale);
    let widest = legend.iter().map(entry_w).max().unwrap_or(0);
    let width = MIN_WIDTH.max(map_w + 2 * padding).max(widest + 2 * padding).min(MAX_IMAGE_SIDE);

    let col_gap = 4 * ADVANCE * text_scale;
    let legend_column_width = widest + col_gap;
    let legend_cols = ((width - 2 * padding + col_gap) / legend_column_width.max(1)).max(1);
    let legend_rows = to_u32(legend.len() as u64).div_ceil(legend_cols);

    let max_chars = ((width - 2 * padding) / (ADVANCE * text_scale)) as usize;
    let title = wrap(&title_groups(map, cells, units_per_pixel, columns, scale, gap_cap, shortened), max_chars);
    let line = LINE_HEIGHT * text_scale;
    let title_origin = (padding, padding);
    let map_origin = (padding, padding + to_u32(title.len() as u64) * line + padding / 2);
    let legend_origin = (padding, map_origin.1 + map_h + if cells == 0 { 0 } else { padding });
    let height = (legend_origin.1 + legend_rows * line + padding).min(MAX_IMAGE_SIDE);

    Layout {
        map,
        placements,
        cells,
        units_per_pixel,
        columns,
        rows,
        scale,
        gap_cap,
        shortened_gaps: shortened,
        text_scale,
        padding,
        width,
        height,
        map_origin,
        title,
        title_origin,
        legend,
        legend_origin,
        legend_rows,
        legend_column_width,
    }
}

impl<'a> Layout<'a> {
    pub fn map(&self) -> &'a HeapMap {
        self.map
    }

    /// Size of the map area in image pixels (zero for an empty map).
    pub fn map_size(&self) -> (u32, u32) {
        if self.cells == 0 {
            (0, 0)
        } else {
            (self.columns * self.scale, self.rows * self.scale)
        }
    }

    /// Top-left image pixel of the square that shows the unit at byte `address`, or `None`
    /// if no segment reported that address.
    pub fn position_of(&self, address: u64) -> Option<(u32, u32)> {
        let i = self.placements.partition_point(|p| p.start <= address).checked_sub(1)?;
        let p = self.placements.get(i)?;
        let offset = address.checked_sub(p.start)? / p.unit_size;
        if offset >= p.units {
            return None;
        }
        Some(self.position_of_pixel((p.first_cell + offset) / self.units_per_pixel))
    }

    fn position_of_pixel(&self, pixel: u64) -> (u32, u32) {
        let cols = u64::from(self.columns.max(1));
        let (col, row) = (to_u32(pixel % cols), to_u32(pixel / cols));
        (self.map_origin.0 + col * self.scale, self.map_origin.1 + row * self.scale)
    }

    /// What the map shows at image pixel (x, y); `None` outside the drawn cells.
    pub fn paint_at(&self, x: u32, y: u32) -> Option<Paint> {
        let (w, h) = self.map_size();
        let (dx, dy) = (x.checked_sub(self.map_origin.0)?, y.checked_sub(self.map_origin.1)?);
        if dx >= w || dy >= h {
            return None;
        }
        let want = u64::from(dy / self.scale) * u64::from(self.columns) + u64::from(dx / self.scale);
        let mut found = None;
        self.sweep(|first, count, paint| {
            if want >= first && want < first + count {
                found = Some(paint);
            }
            found.is_none() && first + count <= want
        });
        found
    }

    /// Every run and gap in grid order as (cells, paint).
    fn spans(&self) -> impl Iterator<Item = (u64, Paint)> + '_ {
        self.placements.iter().zip(&self.map.segments).flat_map(|(p, seg)| {
            let gap = (p.gap_cells > 0).then_some((p.gap_cells, Paint::Gap));
            gap.into_iter().chain(seg.runs.iter().map(|r| (u64::from(r.units), Paint::of(r.state))))
        })
    }

    /// Calls `emit(first_pixel, count, paint)` for consecutive map pixels in order, until it
    /// returns false. A pixel covering several paints shows the one with most cells.
    pub(crate) fn sweep(&self, mut emit: impl FnMut(u64, u64, Paint) -> bool) {
        let n = self.units_per_pixel.max(1);
        let (mut tally, mut filled, mut pixel) = ([0u64; PAINTS], 0u64, 0u64);
        for (len, paint) in self.spans() {
            let mut left = len;
            while left > 0 {
                if filled == 0 && left >= n {
                    let k = left / n;
                    if !emit(pixel, k, paint) {
                        return;
                    }
                    pixel += k;
                    left -= k * n;
                    continue;
                }
                let take = (n - filled).min(left);
                tally[paint.index()] += take;
                filled += take;
                left -= take;
                if filled == n {
                    if !emit(pixel, 1, majority(&tally)) {
                        return;
                    }
                    (tally, filled, pixel) = ([0; PAINTS], 0, pixel + 1);
                }
            }
        }
        if filled > 0 {
            emit(pixel, 1, majority(&tally));
        }
    }
}

/// The paint with the most cells; ties go to the earlier paint.
fn majority(tally: &[u64; PAINTS]) -> Paint {
    let mut best = 0;
    for (i, &n) in tally.iter().enumerate() {
        if n > tally[best] {
            best = i;
        }
    }
    Paint::from_index(best)
}
