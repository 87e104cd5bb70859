//! Human-facing views of what the DDM decoder ([`crate::ddm`]) collected about a VM:
//! - [`render_png`]: a heap map (HPSG/HPSO or NHSG) as a PNG picture with title and legend;
//! - [`heap_summary`]: the text of `jdwpmux heap SELECTOR` (HPIF figures and, when a map was
//!   captured, bytes per solidity and per kind);
//! - [`threads_table`] and [`threads_header`]: a `top`-like table of the VM's threads.
//!
//! Everything here is pure formatting of decoded data: no I/O, and text that came from the
//! VM (thread names) is made printable before it reaches a terminal.

pub mod font;
mod heap_layout;
pub mod heap_png;
pub mod heap_text;
mod heap_title;
pub mod palette;
pub mod threads_table;
pub mod units;

pub use heap_png::{
    encode_png, layout, render_image, render_layout, render_png, Image, Layout, LegendEntry, MAX_IMAGE_SIDE,
    MAX_MAP_SIDE,
};
pub use heap_text::heap_summary;
pub use palette::{colour, Paint};
pub use threads_table::{threads_header, threads_table};
pub use units::human_bytes;

/// What can go wrong while producing a view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// The `png` encoder refused the image.
    #[error("PNG encoding of a {width}x{height} image failed: {message}")]
    Png { width: u32, height: u32, message: String },

    /// An image with no pixels, or larger than we ever draw.
    #[error("image of {width}x{height} pixels is empty or exceeds {max}x{max}")]
    ImageSize { width: u32, height: u32, max: u32 },
}
