//! What the lean fake VMs ([`super::lean`]) put on the wire besides plain replies (framed,
//! like their headers read, by [`crate::wire`]): the byte pattern of every array region,
//! and DDM as an Android VM sends it (the HELO reply, THST pushed as a VM->proxy command in
//! the 17-byte-entry layout real VMs use).

use crate::consts::{DDM_CMD, DDM_SET, SET_VM, VM_ALL_THREADS, VM_ID_SIZES, VM_VERSION};
use crate::reader::utf16be;
use crate::wire::frame;

pub const VERSION: (u8, u8) = (SET_VM, VM_VERSION);
pub const ID_SIZES: (u8, u8) = (SET_VM, VM_ID_SIZES);
pub const ALL_THREADS: (u8, u8) = (SET_VM, VM_ALL_THREADS);
pub const STRING_VALUE: (u8, u8) = (10, 1);
pub const ARRAY_GET_VALUES: (u8, u8) = (13, 2);
pub const DDM: (u8, u8) = (DDM_SET, DDM_CMD);
/// The tag of a byte array's values.
pub const TAG_BYTE: u8 = b'B';

/// THST header: u1 headerLen, u1 bytesPerEntry, u2 count.
pub const THST_HEADER_LEN: u8 = 4;
/// Per thread: u4 tid, u1 state, u4 sysTid, u4 utime, u4 stime.
pub const THST_ENTRY_LEN: u8 = 17;

/// The byte at index `i` of every array the benchmark reads (the debuggee and the fake VMs
/// fill them so): cheap to check at memory speed. Inlined across crates: the benchmark
/// builds the regions it expects from it byte by byte.
#[inline]
pub fn pattern_byte(i: u64) -> u8 {
    i as u8
}

/// One chunk: type, u4 length, data.
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(8 + data.len());
    c.extend_from_slice(kind);
    c.extend_from_slice(&(data.len() as u32).to_be_bytes());
    c.extend_from_slice(data);
    c
}

/// HELO reply payload of fake VM `k` (one chunk): version 1, pid, vm ident and app name
/// (UTF-16BE, lengths in UTF-16 units).
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
    frame(id, 0, DDM.0, DDM.1, &chunk(b"THST", &thst_data(threads, seq)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Reader;
    use crate::wire::{reply_frame, Header, BULK_MAX_PACKET_LEN, HEADER_LEN};

    #[test]
    fn thst_packet_layout() {
        for threads in [0u16, 1, 8, 300] {
            let p = thst_packet(0x8000_0001, threads, 7);
            let h = Header::parse(p[..HEADER_LEN].try_into().unwrap(), BULK_MAX_PACKET_LEN).unwrap();
            assert_eq!((h.id, h.is_reply(), h.a, h.b, h.len as usize), (0x8000_0001, false, 0xC7, 1, p.len()));
            let mut r = Reader::new(&p[HEADER_LEN..]);
            assert_eq!(r.bytes(4).unwrap(), b"THST");
            let len = r.u4().unwrap() as usize;
            assert_eq!(len, 4 + 17 * usize::from(threads));
            assert_eq!(r.bytes(4).unwrap(), &[4, 17, (threads >> 8) as u8, threads as u8]);
            assert_eq!(r.remaining(), 17 * usize::from(threads));
        }
    }

    #[test]
    fn helo_reply_layout() {
        let c = helo_reply(3);
        let mut r = Reader::new(&c);
        assert_eq!(r.bytes(4).unwrap(), b"HELO");
        assert_eq!(r.u4().unwrap() as usize, c.len() - 8);
        assert_eq!((r.u4().unwrap(), r.u4().unwrap()), (1, 10_003));
        let (vm, app) = (r.u4().unwrap() as usize, r.u4().unwrap() as usize);
        assert_eq!(r.utf16(vm).unwrap(), "Dalvik v2.1.0 (jdwpmux bench)");
        assert_eq!(r.utf16(app).unwrap(), "bench.app3");
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn packets_are_what_the_kit_decodes() {
        use crate::wire::{try_decode, Chunk, Packet};
        let r = reply_frame(7, 99, b"xy");
        assert_eq!(try_decode(&r, 1 << 20).unwrap(), Some((Packet::reply(7, 99, b"xy".to_vec()), r.len())));
        let t = thst_packet(0x8000_0002, 2, 1);
        let want = Packet::ddm(0x8000_0002, &[Chunk::new(b"THST", thst_data(2, 1))]);
        assert_eq!(try_decode(&t, 1 << 20).unwrap(), Some((want, t.len())));
    }

}
