//! A tiny embedded 5x7 bitmap font for the text in rendered images (titles, legends), so that
//! drawing a PNG needs no font files or font crates.
//!
//! Covers `A-Z`, `0-9`, space and `: / . - ( ) % , = + _ ? # < > ' [ ] * !`; lowercase
//! letters are drawn as uppercase and anything else as a hollow box, so unexpected text stays
//! visible instead of vanishing. Each glyph is 7 rows of 5 bits, bit 4 being the leftmost
//! column. Glyphs sit in a 6x9 cell (one column and two rows of spacing) and are scaled by
//! whole numbers, which keeps them sharp.

/// Glyph width in font pixels.
pub const GLYPH_W: u32 = 5;
/// Glyph height in font pixels.
pub const GLYPH_H: u32 = 7;
/// Horizontal distance between the starts of two characters, in font pixels.
pub const ADVANCE: u32 = 6;
/// Vertical distance between two lines of text, in font pixels.
pub const LINE_HEIGHT: u32 = 10;

/// Drawn for characters the font lacks.
const MISSING: [u8; 7] = [0b11111, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b11111];

/// The rows of the glyph for `c`.
pub fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        'A' => [0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        'B' => [0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110],
        'C' => [0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110],
        'D' => [0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100],
        'E' => [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111],
        'F' => [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000],
        'G' => [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111],
        'H' => [0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        'I' => [0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        'J' => [0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100],
        'K' => [0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001],
        'L' => [0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111],
        'M' => [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001],
        'N' => [0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001],
        'O' => [0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        'P' => [0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000],
        'Q' => [0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101],
        'R' => [0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001],
        'S' => [0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110],
        'T' => [0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100],
        'U' => [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        'V' => [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100],
        'W' => [0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010],
        'X' => [0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001],
        'Y' => [0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100, 0b00100],
        'Z' => [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111],
        '0' => [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110],
        '1' => [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        '2' => [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],
        '3' => [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],
        '4' => [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],
        '5' => [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],
        '6' => [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],
        '7' => [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],
        '8' => [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],
        '9' => [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],
        ' ' => [0; 7],
        ':' => [0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000],
        '/' => [0b00000, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b00000],
        '.' => [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100],
        '-' => [0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000],
        '(' => [0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010],
        ')' => [0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000],
        '%' => [0b11000, 0b11001, 0b00010, 0b00100, 0b01000, 0b10011, 0b00011],
        ',' => [0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b00100, 0b01000],
        '=' => [0b00000, 0b00000, 0b11111, 0b00000, 0b11111, 0b00000, 0b00000],
        '+' => [0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000],
        '_' => [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111],
        '?' => [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b00000, 0b00100],
        '#' => [0b01010, 0b01010, 0b11111, 0b01010, 0b11111, 0b01010, 0b01010],
        '<' => [0b00010, 0b00100, 0b01000, 0b10000, 0b01000, 0b00100, 0b00010],
        '>' => [0b01000, 0b00100, 0b00010, 0b00001, 0b00010, 0b00100, 0b01000],
        '\'' => [0b00100, 0b00100, 0b01000, 0b00000, 0b00000, 0b00000, 0b00000],
        '[' => [0b01110, 0b01000, 0b01000, 0b01000, 0b01000, 0b01000, 0b01110],
        ']' => [0b01110, 0b00010, 0b00010, 0b00010, 0b00010, 0b00010, 0b01110],
        '*' => [0b00000, 0b00100, 0b10101, 0b01110, 0b10101, 0b00100, 0b00000],
        '!' => [0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00000, 0b00100],
        _ => MISSING,
    }
}

/// Width in image pixels of `text` drawn at `scale` (no trailing spacing).
pub fn text_width(text: &str, scale: u32) -> u32 {
    let n = u32::try_from(text.chars().count()).unwrap_or(u32::MAX);
    match n {
        0 => 0,
        n => ((n - 1).saturating_mul(ADVANCE).saturating_add(GLYPH_W)).saturating_mul(scale),
    }
}

/// Calls `put(dx, dy)` for every lit image pixel of `text` drawn at `scale`, relative to the
/// top-left corner of the first glyph. The caller clips.
pub fn for_each_pixel(text: &str, scale: u32, mut put: impl FnMut(u32, u32)) {
    let scale = scale.max(1);
    for_each_dot(text, scale, |x, y| {
        for sy in 0..scale {
            for sx in 0..scale {
                put(x.saturating_add(sx), y + sy);
            }
        }
    });
}

/// Calls `put(dx, dy)` with the top-left image pixel of every lit font pixel of `text`, a
/// square of `scale` (at least 1) image pixels a side, relative to the top-left corner of the
/// first glyph. The caller clips.
pub fn for_each_dot(text: &str, scale: u32, mut put: impl FnMut(u32, u32)) {
    let scale = scale.max(1);
    let mut x0: u32 = 0;
    for c in text.chars() {
        for (row, bits) in (0u32..).zip(glyph(c)) {
            for col in 0..GLYPH_W {
                if bits & (1 << (GLYPH_W - 1 - col)) != 0 {
                    put(x0.saturating_add(col * scale), row * scale);
                }
            }
        }
        x0 = x0.saturating_add(ADVANCE * scale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The glyph of `c` as text art, for readable assertions.
    fn art(c: char) -> Vec<String> {
        glyph(c).iter().map(|b| (0..5).map(|i| if b & (0x10 >> i) != 0 { '#' } else { '.' }).collect()).collect()
    }

    #[test]
    fn glyphs_fit_five_columns_and_cover_the_promised_set() {
        let set = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 :/.-()%,=+_?#<>'[]*!";
        for c in set.chars() {
            let g = glyph(c);
            assert!(g.iter().all(|row| *row < 32), "{c:?} wider than 5 columns");
            if c != ' ' {
                assert_ne!(g, MISSING, "{c:?} has no glyph");
                assert!(g.iter().any(|row| *row != 0), "{c:?} is blank");
            }
        }
        // Distinct glyphs, so no two characters read the same.
        let mut seen = std::collections::HashMap::new();
        for c in set.chars() {
            if let Some(other) = seen.insert(glyph(c), c) {
                panic!("{c:?} and {other:?} share a glyph");
            }
        }
    }

    #[test]
    fn lowercase_is_uppercase_and_unknown_is_a_box() {
        assert_eq!(glyph('k'), glyph('K'));
        assert_eq!(glyph('é'), MISSING);
        assert_eq!(glyph('\n'), MISSING);
        assert_eq!(art('A'), [".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"]);
    }

    #[test]
    fn widths_and_pixels() {
        let cases = [("", 1, 0), ("A", 1, 5), ("AB", 1, 11), ("AB", 2, 22), ("HEAP 1", 3, 105)];
        for (text, scale, want) in cases {
            assert_eq!(text_width(text, scale), want, "{text:?} at {scale}");
        }
        let mut lit = Vec::new();
        for_each_pixel("-.", 2, |x, y| lit.push((x, y)));
        // '-' is row 3 fully lit: 5 columns x 2x2 each = 20 pixels; '.' is a 2x2 block x 4.
        assert_eq!(lit.len(), 20 + 16);
        assert!(lit.contains(&(0, 6)) && lit.contains(&(9, 7)));
        assert!(lit.iter().all(|&(x, y)| x < text_width("-.", 2) && y < GLYPH_H * 2));
        assert!(lit.contains(&(12 + 2, 10)), "'.' starts one advance (12 px) to the right");
    }
}
