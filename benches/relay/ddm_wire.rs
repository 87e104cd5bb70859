//! DDM chunks as the fake Android VM sends them: the HELO reply and THST pushed as a
//! VM->proxy command (command set 0xC7, command 1) in the layout real VMs use.

use crate::jdwp_ops::DDM;
use crate::wire::command;

/// THST header: u1 headerLen, u1 bytesPerEntry, u2 count.
pub const THST_HEADER_LEN: u8 = 4;
/// Per thread: u4 tid, u1 state, u4 sysTid, u4 utime, u4 stime.
pub const THST_ENTRY_LEN: u8 = 17;

/// One chunk: type, u4 length, data.
pub fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(8 + data.len());
    c.extend_from_slice(kind);
    c.extend_from_slice(&(data.len() as u32).to_be_bytes());
    c.extend_from_slice(data);
    c
}

fn utf16be(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(|u| u.to_be_bytes()).collect()
}

/// HELO reply payload of fake VM `k`: version 1, pid, vm ident and app name (UTF-16BE,
/// lengths in UTF-16 units).
pub fn helo_reply(k: usize) -> Vec<u8> {
    let ident = "Dalvik v2.1.0 (jdwpmux bench)";
    let app = format!("bench.app{k}");
    let mut d = Vec::new();
    d.extend_from_slice(&1u32.to_be_bytes());
    d.extend_from_slice(&(10_000 + k as u32).to_be_bytes());
    d.extend_from_slice(&(ident.encode_utf16().count() as u32).to_be_bytes());
    d.extend_from_slice(&(app.encode_utf16().count() as u32).to_be_bytes());
    d.extend_from_slice(&utf16be(ident));
    d.extend_from_slice(&utf16be(&app));
    chunk(b"HELO", &d)
}

/// THST data for `threads` threads; `seq` moves the CPU times along.
pub fn thst_data(threads: u16, seq: u32) -> Vec<u8> {
    let mut d = Vec::with_capacity(4 + usize::from(threads) * usize::from(THST_ENTRY_LEN));
    d.extend_from_slice(&[THST_HEADER_LEN, THST_ENTRY_LEN]);
    d.extend_from_slice(&threads.to_be_bytes());
    for t in 0..u32::from(threads) {
        d.extend_from_slice(&(t + 1).to_be_bytes());
        d.push(if t == 0 { 1 } else { 5 });
        d.extend_from_slice(&(2000 + t).to_be_bytes());
        d.extend_from_slice(&seq.wrapping_add(t).to_be_bytes());
        d.extend_from_slice(&(seq / 2).to_be_bytes());
    }
    d
}

/// A whole THST command packet from the VM.
pub fn thst_packet(id: u32, threads: u16, seq: u32) -> Vec<u8> {
    command(id, DDM.0, DDM.1, &chunk(b"THST", &thst_data(threads, seq)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Cursor, Header, HEADER_LEN};

    #[test]
    fn thst_packet_layout() {
        for threads in [0u16, 1, 8, 300] {
            let p = thst_packet(0x8000_0001, threads, 7);
            let mut h = [0u8; HEADER_LEN];
            h.copy_from_slice(&p[..HEADER_LEN]);
            let h = Header::parse(&h).unwrap();
            assert_eq!((h.id, h.is_reply(), h.a, h.b, h.len as usize), (0x8000_0001, false, 0xC7, 1, p.len()));
            let mut r = Cursor::new(&p[HEADER_LEN..]);
            assert_eq!(r.take(4).unwrap(), b"THST");
            let len = r.u32().unwrap() as usize;
            assert_eq!(len, 4 + 17 * usize::from(threads));
            assert_eq!(r.take(4).unwrap(), &[4, 17, (threads >> 8) as u8, threads as u8]);
            assert_eq!(r.remaining(), 17 * usize::from(threads));
        }
    }

    #[test]
    fn helo_reply_layout() {
        let c = helo_reply(3);
        let mut r = Cursor::new(&c);
        assert_eq!(r.take(4).unwrap(), b"HELO");
        assert_eq!(r.u32().unwrap() as usize, c.len() - 8);
        assert_eq!((r.u32().unwrap(), r.u32().unwrap()), (1, 10_003));
        let (vm, app) = (r.u32().unwrap() as usize, r.u32().unwrap() as usize);
        let vm_units = r.take(vm * 2).unwrap();
        assert_eq!(String::from_utf16_lossy(&vm_units.chunks(2).map(|b| u16::from_be_bytes([b[0], b[1]])).collect::<Vec<_>>()), "Dalvik v2.1.0 (jdwpmux bench)");
        let app_units: Vec<u16> = r.take(app * 2).unwrap().chunks(2).map(|b| u16::from_be_bytes([b[0], b[1]])).collect();
        assert_eq!(String::from_utf16_lossy(&app_units), "bench.app3");
        assert_eq!(r.remaining(), 0);
    }
}
