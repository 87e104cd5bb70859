//! How much a session reads from its VM at a time, and when it lets others run.
//!
//! Idle VMs keep small reads (a thousand of them add up); a VM streaming a large reply gets
//! reads that double up to `MAX_READ`: fewer, larger reads and writes cost less CPU per MB
//! than socat's 64 KiB. And while a VM sends without pause (a DDM flood, a huge reply), every
//! read is ready at once, so the session task would never give the runtime a chance to poll
//! for other sockets (the debugger's request, other VMs): tokio's own budget forces that only
//! after 128 reads, up to 64 MiB here, a 480 ms stall measured in the DDM flood bench. The
//! session yields after every `YIELD_AFTER` bytes instead.

/// Read size of a session whose last read was small.
pub(super) const IDLE_READ: usize = 4096;
/// Largest read size, reached by doubling while reads fill the buffer.
pub(super) const MAX_READ: usize = 512 * 1024;
/// Bytes read from the VM after which the session lets other sockets and tasks run.
pub(super) const YIELD_AFTER: usize = 256 * 1024;

pub(super) struct ReadPacing {
    size: usize,
    since_yield: usize,
}

impl Default for ReadPacing {
    fn default() -> Self {
        ReadPacing { size: IDLE_READ, since_yield: 0 }
    }
}

impl ReadPacing {
    /// How many bytes of room to offer the next read.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Room for the next read when `body_left` bytes of a large packet are still to come:
    /// enough for all of them (up to `MAX_READ`), so a packet is read in as few reads as
    /// the VM's writes allow instead of growing from 4 KiB.
    pub fn size_for(&self, body_left: usize) -> usize {
        self.size().max(body_left.min(MAX_READ))
    }

    /// Takes note of a read of `got` bytes into `offered` bytes of room; true when the
    /// session should yield before reading again.
    pub fn after_read(&mut self, got: usize, offered: usize) -> bool {
        self.size = next_read_size(self.size, got, offered);
        self.since_yield += got;
        if self.since_yield >= YIELD_AFTER {
            self.since_yield = 0;
            return true;
        }
        false
    }
}

/// The next read size: doubled while reads fill what was offered, back to small when a
/// read is small, kept otherwise.
fn next_read_size(size: usize, got: usize, offered: usize) -> usize {
    if got >= offered {
        (size * 2).clamp(IDLE_READ, MAX_READ)
    } else if got < IDLE_READ {
        IDLE_READ
    } else {
        size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_size_grows_while_reads_fill_and_falls_back_when_small() {
        let mut size = IDLE_READ;
        let mut seen = vec![size];
        for _ in 0..12 {
            size = next_read_size(size, size, size);
            seen.push(size);
        }
        assert_eq!(seen[..4], [4096, 8192, 16384, 32768]);
        assert_eq!(size, MAX_READ);
        assert_eq!(next_read_size(MAX_READ, MAX_READ / 2, MAX_READ), MAX_READ, "a half read keeps the size");
        assert_eq!(next_read_size(MAX_READ, 100, MAX_READ), IDLE_READ, "a small read shrinks it");
        // The buffer may offer more than asked: filling that is what counts.
        assert_eq!(next_read_size(IDLE_READ, IDLE_READ, 3 * IDLE_READ), IDLE_READ);
    }

    #[test]
    fn a_large_packet_in_progress_gets_room_for_its_rest() {
        let p = ReadPacing::default();
        assert_eq!(p.size_for(0), IDLE_READ);
        assert_eq!(p.size_for(100), IDLE_READ);
        assert_eq!(p.size_for(130_000), 130_000);
        assert_eq!(p.size_for(200 << 20), MAX_READ);
    }

    #[test]
    fn yields_once_per_yield_after_bytes() {
        let mut p = ReadPacing::default();
        let (mut yields, mut total, mut since) = (0, 0, 0);
        // 10 MiB in reads that fill what they are offered.
        while total < 10 * 1024 * 1024 {
            let n = p.size();
            total += n;
            since += n;
            if p.after_read(n, n) {
                assert!(since >= YIELD_AFTER, "yielded after only {since} bytes");
                yields += 1;
                since = 0;
            }
            assert!(since < YIELD_AFTER, "{since} bytes read without a yield");
        }
        assert_eq!(p.size(), MAX_READ);
        assert!(yields >= total / MAX_READ - 1, "{yields} yields for {total} bytes");
        // Small reads from an idle VM: no yield for a long while.
        let mut idle = ReadPacing::default();
        assert!(!(0..60).any(|_| idle.after_read(100, IDLE_READ)));
        assert_eq!(idle.size(), IDLE_READ);
    }
}
