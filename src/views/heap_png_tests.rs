//! Tests of the heap map picture: geometry, colours at known runs (from the layout, the RGB
//! image and the decoded PNG), gaps, downscaling, the size cap, the legend and empty maps.

use proptest::prelude::*;

use super::super::heap_layout::layout_with;
use super::super::palette::{colour, Paint, BACKGROUND, FRAME, GAP_COLOUR, TEXT};
use super::*;
use crate::ddm::{HeapMapBuilder, HeapSegment, HeapState, Run};

/// A segment at `address` of 8-byte units from (state, units) pairs; runs longer than 256
/// units are split as a VM would.
fn seg(address: u32, runs: &[(u8, u32)]) -> HeapSegment {
    let mut out = Vec::new();
    for &(state, mut units) in runs {
        while units > 0 {
            let n = units.min(256);
            out.push(Run { state: HeapState(state), units: n as u16 });
            units -= n;
        }
    }
    let length_units = runs.iter().map(|r| r.1).sum();
    HeapSegment { heap_id: 1, unit_size: 8, address, offset: 0, length_units, runs: out }
}

fn build(native: bool, segs: Vec<HeapSegment>) -> HeapMap {
    let mut b = HeapMapBuilder::new();
    b.start(native, 1);
    for s in segs {
        b.add(native, s);
    }
    b.finish(native, 1).expect("started above")
}

/// The design document's heap: 0x200 hard objects, 0x100 soft byte arrays, 0x100 free.
fn document_map() -> HeapMap {
    build(false, vec![seg(0x10000, &[(0x01, 0x200), (0x12, 0x100), (0x00, 0x100)])])
}

fn decode(png_bytes: &[u8]) -> Image {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().expect("valid PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("one frame");
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
    buf.truncate(info.buffer_size());
    Image { width: info.width, height: info.height, rgb: buf }
}

#[test]
fn document_map_geometry_and_colours() {
    let map = document_map();
    let l = layout(&map);
    assert_eq!((l.cells, l.units_per_pixel, l.columns, l.rows, l.scale), (0x400, 1, 32, 32, 8));
    assert_eq!(l.map_size(), (256, 256));
    let (x0, y0) = l.map_origin;
    // Unit 0 is the top-left square; unit 0x200 (first soft byte array) starts row 16.
    let cases = [
        (0x10000, (x0, y0), 0x01),
        (0x10008, (x0 + 8, y0), 0x01),
        (0x10000 + 33 * 8, (x0 + 8, y0 + 8), 0x01),
        (0x11000, (x0, y0 + 16 * 8), 0x12),
        (0x11800, (x0, y0 + 24 * 8), 0x00),
        (0x11ff8, (x0 + 31 * 8, y0 + 31 * 8), 0x00),
        (0x11fff, (x0 + 31 * 8, y0 + 31 * 8), 0x00), // inside the last unit
    ];
    let img = render_layout(&l);
    for (addr, pos, state) in cases {
        assert_eq!(l.position_of(addr), Some(pos), "{addr:#x}");
        let want = colour(HeapState(state));
        assert_eq!(l.paint_at(pos.0, pos.1), Some(Paint::of(HeapState(state))), "{addr:#x}");
        // Every pixel of the unit's 8x8 square has its colour.
        for (dx, dy) in [(0, 0), (7, 0), (0, 7), (7, 7), (3, 4)] {
            assert_eq!(img.pixel(pos.0 + dx, pos.1 + dy), Some(want), "{addr:#x} +({dx},{dy})");
        }
    }
    for outside in [0, 0xffff, 0x12000, u64::MAX] {
        assert_eq!(l.position_of(outside), None, "{outside:#x}");
    }
    assert_eq!(l.paint_at(x0 - 1, y0), None);
    assert_eq!(l.paint_at(x0 + 256, y0), None);
    let legend: Vec<&str> = l.legend.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        legend,
        ["hard: object  4.0 KiB  50.0%", "soft          2.0 KiB  25.0%", "free          2.0 KiB  25.0%"]
    );
    assert_eq!(
        l.title,
        [
            "heap 1   unit 8 B   1 segment, 4 runs",
            "total 8.0 KiB   used 6.0 KiB (75.0%)",
            "free 2.0 KiB (25.0%)",
            "1 unit = 8x8 px   row = 32 units = 256 B",
            "address 0x10000-0x12000",
        ]
    );
}

#[test]
fn decoded_png_has_the_layout_size_and_run_colours() {
    let map = document_map();
    let l = layout(&map);
    let png_bytes = render_png(&map).expect("encodes");
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    let img = decode(&png_bytes);
    assert_eq!((img.width, img.height), (l.width, l.height));
    assert!(l.width >= 256 && l.width <= 2048 && l.height >= 256 && l.height <= 2048, "{}x{}", l.width, l.height);
    assert_eq!(img, render_image(&map), "PNG round trip is lossless");
    for (addr, state) in [(0x10000u64, 0x01u8), (0x107f8, 0x01), (0x11000, 0x12), (0x117f8, 0x12), (0x11800, 0x00)] {
        let (x, y) = l.position_of(addr).expect("reported address");
        assert_eq!(img.pixel(x + 4, y + 4), Some(colour(HeapState(state))), "{addr:#x}");
    }
    // Legend swatches carry their colours; the title is drawn in the text colour.
    let line = font::LINE_HEIGHT * l.text_scale;
    for (i, e) in (0u32..).zip(&l.legend) {
        let (x, y) = (l.legend_origin.0 + 3, l.legend_origin.1 + i * line + 3);
        assert_eq!(img.pixel(x, y), Some(e.colour), "legend swatch {i}");
    }
    let title_area = (l.title_origin.1..l.title_origin.1 + line)
        .flat_map(|y| (0..img.width).map(move |x| (x, y)))
        .filter(|&(x, y)| img.pixel(x, y) == Some(TEXT))
        .count();
    assert!(title_area > 200, "title drawn: {title_area} text pixels");
}

#[test]
fn every_colour_in_the_map_is_in_the_legend() {
    let map = build(
        false,
        vec![
            seg(0x1000, &[(0x01, 300), (0x09, 40), (0x11, 50), (0x19, 60), (0x21, 70), (0x29, 80), (0x00, 90)]),
            seg(
                0x3000,
                &[(0x02, 10), (0x03, 20), (0x04, 30), (0x05, 40), (0x06, 50), (0x07, 60), (0x31, 70), (0x39, 80)],
            ),
        ],
    );
    let l = layout(&map);
    let img = render_layout(&l);
    let legend: Vec<[u8; 3]> = l.legend.iter().map(|e| e.colour).collect();
    assert_eq!(legend.len(), 16, "14 states, free and the gap");
    assert!(legend.contains(&GAP_COLOUR));
    let (w, h) = l.map_size();
    for y in l.map_origin.1..l.map_origin.1 + h {
        for x in l.map_origin.0..l.map_origin.0 + w {
            let c = img.pixel(x, y).expect("inside");
            // The tail of the last row is background.
            assert!(c == BACKGROUND || legend.contains(&c), "({x},{y}) {c:?}");
        }
    }
}

/// Top-left image pixel of map pixel number `i`.
fn pixel_pos(l: &Layout<'_>, i: u32) -> (u32, u32) {
    (l.map_origin.0 + (i % l.columns) * l.scale, l.map_origin.1 + (i / l.columns) * l.scale)
}

#[test]
fn gaps_are_grey_and_long_ones_shortened() {
    // 64 units, a gap of 32 units (256 bytes), 64 units: drawn at true length.
    let near = build(false, vec![seg(0x1000, &[(0x01, 64)]), seg(0x1300, &[(0x02, 64)])]);
    let l = layout(&near);
    assert_eq!((l.cells, l.shortened_gaps), (160, 0));
    let img = render_layout(&l);
    let (x, y) = pixel_pos(&l, 63);
    assert_eq!(l.position_of(0x11f8), Some((x, y)), "last unit of the first segment");
    for cell in [64, 80, 95] {
        let (x, y) = pixel_pos(&l, cell);
        assert_eq!(img.pixel(x, y), Some(GAP_COLOUR), "cell {cell} is gap");
    }
    assert_eq!(l.position_of(0x1300), Some(pixel_pos(&l, 96)), "second segment after the gap");
    assert_eq!(l.position_of(0x1200), None, "gap addresses are not reported");
    let legend: Vec<&str> = l.legend.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        legend,
        ["hard: object        512 B  50.0%", "soft                512 B  50.0%", "not reported (gap)  256 B",]
    );
    // The same data 1 GiB apart: the gap is capped at a quarter of the data.
    let far = build(false, vec![seg(0x1000, &[(0x01, 64)]), seg(0x4000_1000, &[(0x02, 64)])]);
    let l = layout(&far);
    assert_eq!((l.gap_cap, l.shortened_gaps, l.cells), (32, 1, 160));
    assert!(l.title.iter().any(|t| t.contains("1 gap shortened to 32 units")), "{:?}", l.title);
    let gap_bytes = l.legend.iter().find(|e| e.paint == Paint::Gap).map(|e| e.bytes);
    assert_eq!(gap_bytes, Some(0x4000_1000 - 0x1200), "the legend gives the true gap");
    // Three gaps share that quarter: a cap of 100 / 4 / 3 = 8 units each.
    let three = build(
        false,
        vec![
            seg(0x1000, &[(0x01, 25)]),
            seg(0x2000, &[(0x01, 25)]),
            seg(0x3000, &[(0x01, 25)]),
            seg(0x4000, &[(0x01, 25)]),
        ],
    );
    let l = layout(&three);
    assert_eq!((l.gap_cap, l.shortened_gaps, l.cells), (8, 3, 124));
    assert_eq!(l.legend.iter().find(|e| e.paint == Paint::Gap).map(|e| e.bytes), Some(3 * (0x1000 - 200)));
}

#[test]
fn downscaled_pixels_show_the_majority() {
    // Threshold 4x4 = 16 cells; 64 units -> 4 units per pixel, 16 pixels, 4 columns.
    let map = build(
        false,
        vec![seg(
            0,
            &[
                (0x01, 3),
                (0x00, 1), // pixel 0: hard wins 3:1
                (0x01, 1),
                (0x00, 3), // pixel 1: free wins 3:1
                (0x02, 2),
                (0x00, 2), // pixel 2: tie, soft (earlier in legend order) wins
                (0x00, 2),
                (0x01, 2), // pixel 3: tie, hard wins over free
                (0x03, 1),
                (0x04, 1),
                (0x05, 1),
                (0x00, 1), // pixel 4: all tied, weak first
                (0x00, 44),
            ],
        )],
    );
    let l = layout_with(&map, 4);
    assert_eq!((l.units_per_pixel, l.columns, l.rows), (4, 4, 4));
    let img = render_layout(&l);
    let want = [Paint::Hard(0), Paint::Free, Paint::Held(2), Paint::Hard(0), Paint::Held(3), Paint::Free];
    for (i, paint) in (0u32..).zip(want) {
        let (x, y) = pixel_pos(&l, i);
        assert_eq!(l.paint_at(x, y), Some(paint), "pixel {i}");
        assert_eq!(img.pixel(x, y), Some(paint.colour()), "pixel {i}");
    }
    assert_eq!(l.position_of(0x10 * 8), Some((l.map_origin.0, l.map_origin.1 + l.scale)), "unit 16 -> pixel 4");
    assert!(l.title.iter().any(|t| t.contains("1 px = 4 units (majority shown)")), "{:?}", l.title);
}

#[test]
fn huge_map_is_capped() {
    // 2 x 4 Mi units (64 MiB of 8-byte units): more than MAX_MAP_SIDE² cells.
    let half = 4 << 20;
    let map = build(false, vec![seg(0, &[(0x01, half), (0x00, half)])]);
    let l = layout(&map);
    assert_eq!(l.units_per_pixel, 2);
    assert_eq!((l.columns, l.rows, l.scale), (MAX_MAP_SIDE, MAX_MAP_SIDE, 1));
    assert!(l.width <= MAX_IMAGE_SIDE && l.height <= MAX_IMAGE_SIDE, "{}x{}", l.width, l.height);
    let img = render_layout(&l);
    let (first, last) = (l.position_of(0).expect("first"), l.position_of(2 * half as u64 * 8 - 1).expect("last"));
    assert_eq!(first, l.map_origin);
    assert_eq!(last, (l.map_origin.0 + MAX_MAP_SIDE - 1, l.map_origin.1 + MAX_MAP_SIDE - 1));
    assert_eq!(img.pixel(first.0, first.1), Some(colour(HeapState(0x01))));
    assert_eq!(img.pixel(last.0, last.1), Some(colour(HeapState(0x00))));
    let png_bytes = encode_png(&img, "huge").expect("encodes");
    assert!(png_bytes.len() < 1 << 20, "flat colour compresses: {} bytes", png_bytes.len());
}

#[test]
fn empty_map_is_a_small_picture_saying_no_data() {
    let map = build(true, vec![]);
    let l = layout(&map);
    assert_eq!(l.title, ["native heap 1   0 segments, 0 runs", "no data"]);
    assert!(l.legend.is_empty());
    assert_eq!(l.map_size(), (0, 0));
    assert_eq!(l.position_of(0), None);
    let img = decode(&render_png(&map).expect("encodes"));
    assert_eq!(img.width, 512);
    assert!(img.height < 100, "{}", img.height);
    assert!(img.rgb.chunks_exact(3).any(|p| p == TEXT), "title drawn");
    // Segments with no units are still "no data", however far apart.
    let hollow = build(false, vec![seg(0x1000, &[]), seg(0x9000, &[])]);
    let l = layout(&hollow);
    assert_eq!((l.cells, l.legend.len()), (0, 0));
    assert_eq!(l.title, ["heap 1   unit 8 B   2 segments, 0 runs", "no data"]);
}

#[test]
fn oversized_images_are_refused() {
    let err = encode_png(&Image::new(0, 1, BACKGROUND), "x").unwrap_err();
    assert_eq!(err, ViewError::ImageSize { width: 0, height: 1, max: MAX_IMAGE_SIDE });
    assert_eq!(err.to_string(), "image of 0x1 pixels is empty or exceeds 4096x4096");
}

/// Pixel by pixel, as a reference for the block copies of `Image::new` and `fill_rect`.
fn fill_naive(img: &mut Image, x: u32, y: u32, w: u32, h: u32, c: [u8; 3]) {
    for py in y..y.saturating_add(h).min(img.height) {
        for px in x..x.saturating_add(w).min(img.width) {
            let i = (py as usize * img.width as usize + px as usize) * 3;
            img.rgb[i..i + 3].copy_from_slice(&c);
        }
    }
}

#[test]
fn new_image_is_all_fill() {
    for (w, h) in [(0, 0), (1, 1), (3, 5), (512, 330)] {
        let img = Image::new(w, h, [1, 2, 3]);
        assert_eq!(img.rgb.len(), w as usize * h as usize * 3);
        assert!(img.rgb.chunks_exact(3).all(|p| p == [1, 2, 3]), "{w}x{h}");
    }
}

#[test]
fn fill_rect_clips_at_every_edge() {
    let mut img = Image::new(5, 4, BACKGROUND);
    img.fill_rect(3, 2, 10, 10, TEXT);
    img.fill_rect(u32::MAX, 0, 3, 3, GAP_COLOUR);
    img.fill_rect(0, 0, u32::MAX, 1, GAP_COLOUR);
    img.fill_rect(1, 1, 0, 3, TEXT);
    let mut want = Image::new(5, 4, BACKGROUND);
    fill_naive(&mut want, 3, 2, 2, 2, TEXT);
    fill_naive(&mut want, 0, 0, 5, 1, GAP_COLOUR);
    assert_eq!(img, want);
    // An image whose buffer is short of its size: rows past its end are left out.
    let mut short = Image { width: 4, height: 4, rgb: vec![0; 4 * 3 * 2 + 6] };
    short.fill_rect(1, 0, 2, 4, TEXT);
    let row = |r: &[u8]| r.chunks_exact(3).map(|p| p == TEXT).collect::<Vec<_>>();
    assert_eq!(row(&short.rgb[..12]), [false, true, true, false]);
    assert_eq!(row(&short.rgb[12..24]), [false, true, true, false]);
    assert_eq!(row(&short.rgb[24..]), [false, false]);
}

/// Text drawn a square per lit font pixel is the text drawn pixel by pixel, clipped alike.
#[test]
fn text_is_drawn_as_its_font_pixels() {
    for (x, y, scale) in [(0, 0, 0), (3, 2, 1), (5, 1, 2), (30, 10, 3), (38, 17, 4), (u32::MAX - 5, 0, 2), (0, u32::MAX, 2)] {
        let mut img = Image::new(40, 20, BACKGROUND);
        img.text(x, y, "HEAP 1: 42% (x)", scale, TEXT);
        let mut want = Image::new(40, 20, BACKGROUND);
        font::for_each_pixel("HEAP 1: 42% (x)", scale, |dx, dy| {
            let (px, py) = (x.saturating_add(dx), y.saturating_add(dy));
            if px < want.width && py < want.height {
                fill_naive(&mut want, px, py, 1, 1, TEXT);
            }
        });
        assert_eq!(img, want, "at ({x}, {y}) scale {scale}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Drawing (one sweep) and asking pixel by pixel agree, and the map has exactly the
    /// pixels the cells need, whatever the runs, gaps and threshold.
    #[test]
    fn drawing_matches_paint_at(
        runs in prop::collection::vec((0u8..=255, 1u32..40), 1..30),
        split in 0usize..30,
        gap in 0u32..4000,
        max_side in 2u32..12,
    ) {
        let cut = split.min(runs.len());
        let first = seg(0x1000, &runs[..cut]);
        let second = seg(0x1000 + first.length_units * 8 + gap, &runs[cut..]);
        let map = build(false, vec![first, second]);
        let l = layout_with(&map, max_side);
        prop_assert!(l.columns <= max_side.max(1) && l.rows <= max_side);
        let img = render_layout(&l);
        let mut drawn = 0u64;
        for row in 0..l.rows {
            for col in 0..l.columns {
                let (x, y) = (l.map_origin.0 + col * l.scale, l.map_origin.1 + row * l.scale);
                let px = img.pixel(x, y);
                match l.paint_at(x, y) {
                    Some(p) => { drawn += 1; prop_assert_eq!(px, Some(p.colour())); }
                    None => prop_assert_eq!(px, Some(BACKGROUND)),
                }
            }
        }
        prop_assert_eq!(drawn, l.cells.div_ceil(l.units_per_pixel));
    }

    /// Rectangles anywhere, clipped or not, fill exactly the pixels a pixel-by-pixel fill does.
    #[test]
    fn fill_rect_is_the_pixel_by_pixel_fill(
        (w, h) in (1u32..40, 1u32..20),
        rects in prop::collection::vec((0u32..50, 0u32..30, 0u32..50, 0u32..30, 0u8..=255), 1..8),
    ) {
        let (mut img, mut want) = (Image::new(w, h, BACKGROUND), Image::new(w, h, BACKGROUND));
        for (x, y, rw, rh, v) in rects {
            img.fill_rect(x, y, rw, rh, [v, v ^ 0x55, 7]);
            fill_naive(&mut want, x, y, rw, rh, [v, v ^ 0x55, 7]);
        }
        prop_assert_eq!(img, want);
    }

    /// Every image pixel of the map area, not only each square's corner, shows the paint of
    /// its cell (runs drawn as bands of squares cover whole squares and nothing else).
    #[test]
    fn every_map_pixel_shows_its_cell(
        runs in prop::collection::vec((0u8..=255, 1u32..40), 1..30),
        gap in 0u32..4000,
        max_side in 2u32..12,
    ) {
        let first = seg(0x1000, &runs);
        let second = seg(0x1000 + first.length_units * 8 + gap, &runs[..runs.len() / 2]);
        let map = build(false, vec![first, second]);
        let l = layout_with(&map, max_side);
        let img = render_layout(&l);
        for (row, col) in (0..l.rows).flat_map(|r| (0..l.columns).map(move |c| (r, c))) {
            let (x0, y0) = (l.map_origin.0 + col * l.scale, l.map_origin.1 + row * l.scale);
            let want = l.paint_at(x0, y0).map_or(BACKGROUND, |p| p.colour());
            for (x, y) in (y0..y0 + l.scale).flat_map(|y| (x0..x0 + l.scale).map(move |x| (x, y))) {
                prop_assert_eq!(img.pixel(x, y), Some(want), "({}, {})", x, y);
            }
        }
        // The frame just outside the map is whole.
        let (w, h) = l.map_size();
        for x in l.map_origin.0 - 1..=l.map_origin.0 + w {
            prop_assert_eq!(img.pixel(x, l.map_origin.1 - 1), Some(FRAME));
            prop_assert_eq!(img.pixel(x, l.map_origin.1 + h), Some(FRAME));
        }
    }
}
