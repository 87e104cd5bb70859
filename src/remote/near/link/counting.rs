//! The Data frames each connection carried, each way, and how many went compressed: summed
//! over the link's connections for `NearLink::figures`, and said in the log when one ends.
//! With them the replay buffer (the resume table's unacknowledged frames) now, and the most
//! it held since the link started (`protocol::figures::ReplayHeld`, a pure table).

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

    /// Every connection's Data frames so far and the replay buffer, to `NearLink::figures`,
    /// when they changed. Called at each turn of the task's loop, so the high-water mark sees
    /// the level after every event the task handles (a stream's write, an open, what was read).
    pub(super) fn publish_figures(&mut self) {
        let squeezed = self.squeezed_before.plus(this_connection(self.rd.as_ref(), self.wr.as_ref()));
        let replay_moved = self.figures_said.replay.note(self.resume.out.unacked_bytes(), self.resume.out.unacked_frames());
        if replay_moved || squeezed != self.figures_said.squeezed {
            self.figures_said.squeezed = squeezed;
            self.figures_tx.send_replace(self.figures_said);
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
