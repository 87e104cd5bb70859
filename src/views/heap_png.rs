//! Drawing a [`HeapMap`] as a PNG: title lines, the map (see [`super::heap_layout`] for the
//! geometry and scale rules) in a thin frame, and a legend with a swatch, label, size and
//! share for every paint present in the map. Colours come from [`super::palette`]; text from
//! the embedded [`super::font`].
//!
//! An 8-bit RGB image of at most [`MAX_IMAGE_SIDE`] pixels a side, encoded with the `png`
//! crate using its fast compression (maps are large areas of flat colour, which compress
//! well anyway, and a 2048x2048 map must not take seconds).

use crate::ddm::HeapMap;

use super::font;
use super::heap_layout::SWATCH_TEXT_GAP;
pub use super::heap_layout::{layout, Layout, LegendEntry, MAX_IMAGE_SIDE, MAX_MAP_SIDE, MAX_SCALE, MIN_MAP_SIDE};
use super::palette::{BACKGROUND, FRAME, TEXT};
use super::ViewError;

/// An RGB picture, rows top to bottom, three bytes per pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Image {
    pub fn new(width: u32, height: u32, fill: [u8; 3]) -> Image {
        let n = width as usize * height as usize;
        // `repeat` copies in doubling blocks: a byte-by-byte iterator took most of a small
        // map's drawing time (and far more in an instrumented build).
        Image { width, height, rgb: fill.repeat(n) }
    }

    /// The pixel at (x, y), or `None` outside the image.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 3]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        let p = self.rgb.get(i..i + 3)?;
        Some([p[0], p[1], p[2]])
    }

    /// Fills a rectangle, clipped to the image.
    pub fn fill_rect(&mut self, x: u32, y: u32, w: u32, h: u32, c: [u8; 3]) {
        let (x, y) = (x as usize, y as usize);
        let x_end = x.saturating_add(w as usize).min(self.width as usize);
        let y_end = y.saturating_add(h as usize).min(self.height as usize);
        if x >= x_end || y >= y_end {
            return;
        }
        let width = self.width as usize;
        let (first, len) = ((y * width + x) * 3, (x_end - x) * 3);
        // The first row pixel by doubling copies, then the other rows copied from it.
        let Some(line) = self.rgb.get_mut(first..first + len) else { return };
        line[..3].copy_from_slice(&c);
        let mut done = 3;
        while done < len {
            let n = done.min(len - done);
            line.copy_within(..n, done);
            done += n;
        }
        for row in y + 1..y_end {
            let a = (row * width + x) * 3;
            if a + len > self.rgb.len() {
                break;
            }
            self.rgb.copy_within(first..first + len, a);
        }
    }

    /// Draws `text` with its top-left glyph corner at (x, y), clipped to the image.
    pub fn text(&mut self, x: u32, y: u32, text: &str, scale: u32, c: [u8; 3]) {
        // One square per lit font pixel, not one call per image pixel.
        let side = scale.max(1);
        font::for_each_dot(text, side, |dx, dy| self.fill_rect(x.saturating_add(dx), y.saturating_add(dy), side, side, c));
    }
}

/// Draws a laid-out heap map.
pub fn render_layout(l: &Layout<'_>) -> Image {
    let mut img = Image::new(l.width, l.height, BACKGROUND);
    let ts = l.text_scale;
    let line = font::LINE_HEIGHT * ts;
    for (i, text) in (0u32..).zip(&l.title) {
        img.text(l.title_origin.0, l.title_origin.1 + i * line, text, ts, TEXT);
    }
    let (map_w, map_h) = l.map_size();
    if map_w > 0 {
        let (x0, y0) = l.map_origin;
        // A one-pixel frame just outside the map, so the unused tail of the last row and a
        // map edge of gap grey still read as "the map ends here".
        img.fill_rect(x0 - 1, y0 - 1, map_w + 2, map_h + 2, FRAME);
        img.fill_rect(x0, y0, map_w, map_h, BACKGROUND);
        let (cols, s) = (u64::from(l.columns.max(1)), l.scale);
        l.sweep(|first, count, paint| {
            // A run of map pixels is drawn as one band of squares per grid row it crosses.
            let (c, end) = (paint.colour(), first + count);
            let mut p = first;
            while p < end {
                let (col, row) = (p % cols, p / cols);
                let n = (cols - col).min(end - p);
                img.fill_rect(x0 + col as u32 * s, y0 + row as u32 * s, n as u32 * s, s, c);
                p += n;
            }
            true
        });
    }
    let swatch = 7 * ts;
    for (i, e) in (0u32..).zip(&l.legend) {
        let (col, row) = (i / l.legend_rows.max(1), i % l.legend_rows.max(1));
        let x = l.legend_origin.0 + col * l.legend_column_width;
        let y = l.legend_origin.1 + row * line;
        img.fill_rect(x, y, swatch, swatch, FRAME);
        img.fill_rect(x + 1, y + 1, swatch - 2, swatch - 2, e.colour);
        img.text(x + swatch + SWATCH_TEXT_GAP * ts, y, &e.text, ts, TEXT);
    }
    img
}

/// The heap map as an RGB image.
pub fn render_image(map: &HeapMap) -> Image {
    render_layout(&layout(map))
}

/// Encodes an image as PNG, with `title` in a `Title` text chunk.
pub fn encode_png(img: &Image, title: &str) -> Result<Vec<u8>, ViewError> {
    let err = |e: png::EncodingError| ViewError::Png { width: img.width, height: img.height, message: e.to_string() };
    if img.width == 0 || img.height == 0 || img.width > MAX_IMAGE_SIDE || img.height > MAX_IMAGE_SIDE {
        return Err(ViewError::ImageSize { width: img.width, height: img.height, max: MAX_IMAGE_SIDE });
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, img.width, img.height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    enc.add_text_chunk("Title".to_string(), title.to_string()).map_err(err)?;
    let mut writer = enc.write_header().map_err(err)?;
    writer.write_image_data(&img.rgb).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(out)
}

/// The heap map as a PNG file's bytes.
pub fn render_png(map: &HeapMap) -> Result<Vec<u8>, ViewError> {
    let l = layout(map);
    let title = format!("jdwpmux {}", l.title.join(" / "));
    encode_png(&render_layout(&l), &title)
}

#[cfg(test)]
#[path = "heap_png_tests.rs"]
mod tests;
