//! jdwpspy-style packet logs: at debug level one line per packet (direction, id, command
//! name, length; replies with their command and latency), at trace level a hex dump too.

use std::time::Duration;

use tracing::{debug, enabled, trace, Level};

use crate::jdwp::names;
use crate::jdwp::Header;

/// Bytes shown in a trace-level hex dump.
pub const HEX_DUMP_MAX: usize = 256;

/// Whether packet lines are wanted at all (cheap: the answer is cached per call site).
pub fn wanted() -> bool {
    enabled!(Level::DEBUG)
}

/// Logs one packet. `dir` reads like "dbg->vm"; `answers` is the command a reply answers.
pub fn packet(dir: &str, bytes: &[u8], orig_id: Option<u32>, answers: Option<(u8, u8)>, latency: Option<Duration>) {
    let Some(h) = Header::parse(bytes) else { return };
    let ids = match orig_id {
        Some(o) if o != h.id => format!("id={} dbg_id={o}", h.id),
        _ => format!("id={}", h.id),
    };
    if h.is_reply() {
        let what = answers.map_or_else(|| "?".to_string(), |(s, c)| names::display_command(s, c));
        let lat = latency.map_or_else(String::new, |l| format!(" latency={}us", l.as_micros()));
        debug!("{dir} reply {ids} {what} error={} len={}{lat}", names::display_error(h.error_code()), h.length);
    } else {
        debug!("{dir} {ids} {} len={}", names::display_command(h.cmd_set(), h.cmd()), h.length);
    }
    if enabled!(Level::TRACE) {
        trace!("{dir} {}", hex_dump(&bytes[..bytes.len().min(HEX_DUMP_MAX)]));
    }
}

/// `0000: 00 00 00 0b ...` lines of 16 bytes.
pub fn hex_dump(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (i, row) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&format!("\n  {:04x}: {}", i * 16, hex.join(" ")));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_dump_rows() {
        let d = super::hex_dump(&(0u8..18).collect::<Vec<_>>());
        assert_eq!(d, "\n  0000: 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n  0010: 10 11");
    }
}
