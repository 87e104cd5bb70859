//! The Data frames each connection carried, each way, and how many went compressed: summed
//! over the link's connections for `NearLink::squeezed`, and said in the log when one ends.

use tracing::info;

use super::{ReadSide, Task, WriteSide};
use crate::remote::protocol::squeeze::LinkSqueeze;

impl Task {
    /// The connection of `rd` and `wr` ends: its Data frames count with those before, and
    /// the log says what it carried compressed.
    pub(super) fn retire(&mut self, rd: &ReadSide, wr: Option<&WriteSide>) {
        self.squeezed_before = self.squeezed_before.plus(this_connection(Some(rd), wr));
        say_squeezed(rd, wr);
    }

    /// Every connection's Data frames so far, to `NearLink::squeezed`, when they changed.
    pub(super) fn publish_squeezed(&mut self) {
        let now = self.squeezed_before.plus(this_connection(self.rd.as_ref(), self.wr.as_ref()));
        if now != self.squeezed_said {
            self.squeezed_said = now;
            self.squeezed_tx.send_replace(now);
        }
    }
}

/// The Data frames of the connection up, each way (none when there is none).
fn this_connection(rd: Option<&ReadSide>, wr: Option<&WriteSide>) -> LinkSqueeze {
    LinkSqueeze { sent: wr.map(|w| w.squeezed).unwrap_or_default(), received: rd.map(|r| r.squeezed).unwrap_or_default() }
}

/// What the connection that ends carried compressed, each way (a line when it did).
fn say_squeezed(rd: &ReadSide, wr: Option<&WriteSide>) {
    let (inn, out) = (rd.squeezed, wr.map(|w| w.squeezed).unwrap_or_default());
    if inn.squeezed > 0 || out.squeezed > 0 {
        info!(in_frames = inn.squeezed, in_raw = inn.raw, in_wire = inn.wire, out_frames = out.squeezed, out_raw = out.raw, out_wire = out.wire, "compressed on the link: from the far side {} bytes came as {}, to it {} as {}", inn.raw, inn.wire, out.raw, out.wire);
    }
}

#[cfg(test)]
#[path = "counting_tests.rs"]
mod tests;
