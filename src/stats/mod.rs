//! Traffic figures people can read at a glance: per debugger and per command, how many
//! requests, how many bytes each way, and how long the replies took (p50/p90/p99/max from
//! fixed-size histograms); DDM chunks by type; error replies by name; answers given from the
//! near cache and its hit rate; per far link, the Data frames each way and how many went
//! compressed.
//!
//! Pure and cheap: the session feeds it one call per request and one per reply (a hash
//! lookup and a few increments), so it stays on in every daemon; `decode --stats` feeds it
//! from a capture. Both render the same [`StatsReport`], as text tables or JSON.

pub mod histogram;
pub mod link;
pub mod near;
pub mod report;
pub mod routine;
pub mod table;

pub use histogram::LatencyHistogram;
pub use link::{LinkReport, SqueezeReport};
pub use near::{NearReport, NearRow, NearStats};
pub use report::{format_bytes, format_us, ChunkRow, CommandRow, ErrorRow, SourceReport, StatsReport, VmReport};
pub use table::{TrafficStats, Who};

/// Set to `off` to stop the daemon counting (only to measure what counting costs).
pub const STATS_ENV: &str = "JDWPMUX_STATS";

/// Whether a daemon's sessions count traffic: always, unless [`STATS_ENV`] is `off`.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(STATS_ENV).map_or(true, |v| v != "off"))
}
