//! Colours and names for heap states, shared by the PNG heap map and the text summary.
//!
//! Every HPSG/NHSG state byte falls in one [`Paint`]: used memory gets one colour per
//! solidity, except hard references (by far the most common) which get one hue per kind;
//! free memory is dark whatever its kind bits; the stretches between reported segments get a
//! neutral grey. Hard kinds use cool hues (blues, greens, violet) and the weaker solidities
//! warm ones (orange, yellow, pink, red, brown), so "how much is only softly held" shows at a
//! glance. The partial flag and the unused bit do not change the colour.

use crate::ddm::{HeapState, Kind, Solidity};

/// What a map pixel shows; also the legend's order (and the tie-break order when a
/// downscaled pixel has no single majority: earlier wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Paint {
    /// Hard reference, by kind bits (0..=7).
    Hard(u8),
    /// Any other non-free solidity (its 3-bit value, 2..=7), whatever the kind.
    Held(u8),
    Free,
    /// Between reported segments: nothing is known.
    Gap,
}

/// Number of distinct paints: 8 hard kinds, 6 other solidities, free, gap.
pub const PAINTS: usize = 16;

/// Where the reader's eye should not be drawn: image background and text.
pub const BACKGROUND: [u8; 3] = [246, 246, 242];
pub const TEXT: [u8; 3] = [24, 24, 28];
/// Frame around the map and around legend swatches.
pub const FRAME: [u8; 3] = [90, 90, 96];

const HARD: [[u8; 3]; 8] = [
    [38, 110, 235],  // object: blue
    [150, 70, 225],  // class object: violet
    [0, 195, 225],   // byte/boolean arrays: cyan
    [0, 145, 105],   // char/short arrays: dark green
    [125, 210, 60],  // Object/int/float arrays: light green
    [210, 80, 205],  // long/double arrays: magenta
    [20, 120, 160],  // native (non-VM): petrol
    [120, 125, 205], // kind 6 (undefined): periwinkle
];
const HELD: [[u8; 3]; 6] = [
    [255, 150, 0],   // soft: orange
    [245, 215, 40],  // weak: yellow
    [245, 135, 170], // phantom: pink
    [215, 35, 35],   // pending finalization: red
    [140, 85, 45],   // marked, about to be swept: brown
    [210, 200, 160], // solidity 7 (undefined): beige
];
const FREE: [u8; 3] = [28, 28, 38];
/// Neutral grey for memory the VM did not report.
pub const GAP_COLOUR: [u8; 3] = [150, 150, 150];

fn kind_bits(kind: Kind) -> u8 {
    match kind {
        Kind::Object => 0,
        Kind::ClassObject => 1,
        Kind::Array1 => 2,
        Kind::Array2 => 3,
        Kind::Array4 => 4,
        Kind::Array8 => 5,
        Kind::Native => 7,
        Kind::Other(n) => n & 7,
    }
}

fn solidity_bits(s: Solidity) -> u8 {
    match s {
        Solidity::Free => 0,
        Solidity::Hard => 1,
        Solidity::Soft => 2,
        Solidity::Weak => 3,
        Solidity::Phantom => 4,
        Solidity::Finalizable => 5,
        Solidity::Sweep => 6,
        Solidity::Other(n) => n & 7,
    }
}

impl Paint {
    pub fn of(state: HeapState) -> Paint {
        match state.solidity() {
            Solidity::Free => Paint::Free,
            Solidity::Hard => Paint::Hard(kind_bits(state.kind())),
            s => Paint::Held(solidity_bits(s)),
        }
    }

    /// Dense index in legend order, `0..PAINTS`.
    pub fn index(self) -> usize {
        match self {
            Paint::Hard(k) => usize::from(k & 7),
            Paint::Held(s) => 8 + usize::from(s.clamp(2, 7) - 2),
            Paint::Free => 14,
            Paint::Gap => 15,
        }
    }

    /// Inverse of [`Paint::index`] (indexes past the end give `Gap`).
    pub fn from_index(i: usize) -> Paint {
        match i {
            0..=7 => Paint::Hard(i as u8),
            8..=13 => Paint::Held(i as u8 - 6),
            14 => Paint::Free,
            _ => Paint::Gap,
        }
    }

    pub fn colour(self) -> [u8; 3] {
        match self {
            Paint::Hard(k) => HARD[usize::from(k & 7)],
            Paint::Held(s) => HELD[usize::from(s.clamp(2, 7) - 2)],
            Paint::Free => FREE,
            Paint::Gap => GAP_COLOUR,
        }
    }

    pub fn label(self) -> String {
        match self {
            Paint::Hard(k) => format!("hard: {}", kind_label(k)),
            Paint::Held(s) => solidity_label(s),
            Paint::Free => "free".to_string(),
            Paint::Gap => "not reported (gap)".to_string(),
        }
    }
}

/// The colour of a unit in this state (pure: depends on solidity and, for hard references,
/// kind; never on the partial or unused bits).
pub fn colour(state: HeapState) -> [u8; 3] {
    Paint::of(state).colour()
}

/// A reader's name for a solidity value (the design document's wording, shortened).
pub fn solidity_label(bits: u8) -> String {
    match bits {
        0 => "free".into(),
        1 => "hard".into(),
        2 => "soft".into(),
        3 => "weak".into(),
        4 => "phantom".into(),
        5 => "pending finalization".into(),
        6 => "marked (to be swept)".into(),
        n => format!("solidity {n}"),
    }
}

/// A reader's name for a kind value.
pub fn kind_label(bits: u8) -> String {
    match bits {
        0 => "object".into(),
        1 => "class object".into(),
        2 => "byte/boolean array".into(),
        3 => "char/short array".into(),
        4 => "object/int/float array".into(),
        5 => "long/double array".into(),
        7 => "native (non-VM)".into(),
        n => format!("kind {n}"),
    }
}

/// [`solidity_label`] for the decoder's enum.
pub fn solidity_name(s: Solidity) -> String {
    solidity_label(solidity_bits(s))
}

/// [`kind_label`] for the decoder's enum.
pub fn kind_name(k: Kind) -> String {
    kind_label(kind_bits(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_to_paints() {
        let cases = [
            (0x00, Paint::Free, "free"),
            (0x28, Paint::Free, "free"), // kind bits of free runs are ignored
            (0x01, Paint::Hard(0), "hard: object"),
            (0x81, Paint::Hard(0), "hard: object"), // partial flag ignored
            (0x41, Paint::Hard(0), "hard: object"), // unused bit ignored
            (0x09, Paint::Hard(1), "hard: class object"),
            (0x11, Paint::Hard(2), "hard: byte/boolean array"),
            (0x19, Paint::Hard(3), "hard: char/short array"),
            (0x21, Paint::Hard(4), "hard: object/int/float array"),
            (0x29, Paint::Hard(5), "hard: long/double array"),
            (0x31, Paint::Hard(6), "hard: kind 6"),
            (0x39, Paint::Hard(7), "hard: native (non-VM)"),
            (0x02, Paint::Held(2), "soft"),
            (0x12, Paint::Held(2), "soft"), // one colour per weaker solidity
            (0x03, Paint::Held(3), "weak"),
            (0x04, Paint::Held(4), "phantom"),
            (0x05, Paint::Held(5), "pending finalization"),
            (0x06, Paint::Held(6), "marked (to be swept)"),
            (0x07, Paint::Held(7), "solidity 7"),
        ];
        for (byte, paint, label) in cases {
            let st = HeapState(byte);
            assert_eq!(Paint::of(st), paint, "{byte:#04x}");
            assert_eq!(paint.label(), label, "{byte:#04x}");
            assert_eq!(colour(st), paint.colour(), "{byte:#04x}");
        }
    }

    #[test]
    fn every_paint_has_its_own_colour_and_index() {
        let all: Vec<Paint> = (0..PAINTS).map(Paint::from_index).collect();
        for (i, p) in all.iter().enumerate() {
            assert_eq!(p.index(), i);
        }
        for (i, a) in all.iter().enumerate() {
            assert_ne!(a.colour(), BACKGROUND, "{a:?}");
            for b in &all[i + 1..] {
                let (ca, cb) = (a.colour(), b.colour());
                let dist: i32 = (0..3).map(|c| (i32::from(ca[c]) - i32::from(cb[c])).abs()).sum();
                assert!(dist >= 60, "{a:?} and {b:?} are too alike: {ca:?} vs {cb:?}");
            }
        }
    }

    #[test]
    fn names_of_decoder_enums() {
        assert_eq!(solidity_name(Solidity::Finalizable), "pending finalization");
        assert_eq!(solidity_name(Solidity::Other(7)), "solidity 7");
        assert_eq!(kind_name(Kind::Array8), "long/double array");
        assert_eq!(kind_name(Kind::Other(6)), "kind 6");
    }
}
