//! DDM chunk payloads the fake VM sends and the tests check: HELO, FEAT, APNM, THCR, THST (real
//! layout), HPIF and the heap-segment run pattern. Builders and parsers live together so a test
//! can compute exactly what the fake VM put on the wire.

use super::wire::{put_ddm_string, BufMut, Reader, WireError};

/// The modern fields ART appends to a HELO reply, in wire order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeloModern {
    pub user_id: u32,
    pub abi: String,
    pub jvm_flags: String,
    pub native_debuggable: bool,
    pub package_name: String,
    pub boot_stage: [u8; 4],
}

/// A HELO reply. `modern_fields` says how many of the six appended fields are on the wire
/// (0..=6; a prefix that ends on a field boundary), taken from `modern`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helo {
    pub version: u32,
    pub pid: u32,
    pub vm_ident: String,
    pub app_name: String,
    pub modern: Option<HeloModern>,
    pub modern_fields: usize,
}

impl Helo {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let ident: Vec<u16> = self.vm_ident.encode_utf16().collect();
        let app: Vec<u16> = self.app_name.encode_utf16().collect();
        out.put_u32(self.version);
        out.put_u32(self.pid);
        out.put_u32(ident.len() as u32);
        out.put_u32(app.len() as u32);
        ident.iter().chain(app.iter()).for_each(|u| out.put_u16(*u));
        if let Some(m) = &self.modern {
            let n = self.modern_fields;
            if n >= 1 {
                out.put_u32(m.user_id);
            }
            if n >= 2 {
                put_ddm_string(&mut out, &m.abi);
            }
            if n >= 3 {
                put_ddm_string(&mut out, &m.jvm_flags);
            }
            if n >= 4 {
                out.put_u8(u8::from(m.native_debuggable));
            }
            if n >= 5 {
                put_ddm_string(&mut out, &m.package_name);
            }
            if n >= 6 {
                out.extend_from_slice(&m.boot_stage);
            }
        }
        out
    }

    /// Parses a HELO reply; fields missing at the end are filled with defaults and counted in
    /// `modern_fields`.
    pub fn parse(data: &[u8]) -> Result<Helo, WireError> {
        let mut r = Reader::new(data);
        let version = r.u4()?;
        let pid = r.u4()?;
        let ident_len = r.u4()? as usize;
        let app_len = r.u4()? as usize;
        let vm_ident = r.utf16(ident_len)?;
        let app_name = r.utf16(app_len)?;
        let mut helo = Helo { version, pid, vm_ident, app_name, modern: None, modern_fields: 0 };
        if r.is_empty() {
            return Ok(helo);
        }
        let mut m = HeloModern {
            user_id: 0,
            abi: String::new(),
            jvm_flags: String::new(),
            native_debuggable: false,
            package_name: String::new(),
            boot_stage: [0; 4],
        };
        let mut n = 0;
        // Each step reads one field; stop at the first clean end.
        for step in 0..6 {
            if r.is_empty() {
                break;
            }
            match step {
                0 => m.user_id = r.u4()?,
                1 => m.abi = r.ddm_string()?,
                2 => m.jvm_flags = r.ddm_string()?,
                3 => m.native_debuggable = r.u1()? != 0,
                4 => m.package_name = r.ddm_string()?,
                _ => m.boot_stage = r.ty4()?,
            }
            n += 1;
        }
        helo.modern = Some(m);
        helo.modern_fields = n;
        Ok(helo)
    }
}

/// FEAT reply: `u4 count, {string}*`.
pub fn feat_payload(features: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32(features.len() as u32);
    features.iter().for_each(|f| put_ddm_string(&mut out, f));
    out
}

pub fn parse_feat(data: &[u8]) -> Result<Vec<String>, WireError> {
    let mut r = Reader::new(data);
    let n = r.u4()?;
    (0..n).map(|_| r.ddm_string()).collect()
}

/// APNM as ART sends it: `string appName, u4 userId, string packageName`.
pub fn apnm_payload(app_name: &str, user_id: u32, package_name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_ddm_string(&mut out, app_name);
    out.put_u32(user_id);
    put_ddm_string(&mut out, package_name);
    out
}

/// THCR / THNM: `u4 threadId, string name`.
pub fn thcr_payload(tid: u32, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32(tid);
    put_ddm_string(&mut out, name);
    out
}

pub fn parse_thcr(data: &[u8]) -> Result<(u32, String), WireError> {
    let mut r = Reader::new(data);
    Ok((r.u4()?, r.ddm_string()?))
}

/// One entry of a real-layout THST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThstEntry {
    pub tid: u32,
    pub state: u8,
    pub sys_tid: u32,
    pub utime: u32,
    pub stime: u32,
    pub is_daemon: bool,
}

pub const THST_HEADER_LEN: u8 = 4;
pub const THST_BYTES_PER_ENTRY: u8 = 18;

/// Real-VM THST: `u1 headerLen=4, u1 bytesPerEntry=18, u2 count`, then per entry
/// `u4 tid, u1 state, u4 sysTid, u4 utime, u4 stime, u1 isDaemon`.
pub fn thst_payload(entries: &[ThstEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u8(THST_HEADER_LEN);
    out.put_u8(THST_BYTES_PER_ENTRY);
    out.put_u16(entries.len() as u16);
    for e in entries {
        out.put_u32(e.tid);
        out.put_u8(e.state);
        out.put_u32(e.sys_tid);
        out.put_u32(e.utime);
        out.put_u32(e.stime);
        out.put_u8(u8::from(e.is_daemon));
    }
    out
}

/// The design document's THST: `u4 count`, then per thread `u4 tid, u1 state, u1 suspended`.
pub fn thst_document_payload(entries: &[(u32, u8, bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32(entries.len() as u32);
    for (tid, state, suspended) in entries {
        out.put_u32(*tid);
        out.put_u8(*state);
        out.put_u8(u8::from(*suspended));
    }
    out
}

/// One heap as reported in HPIF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapInfo {
    pub heap_id: u32,
    pub timestamp_ms: u64,
    pub reason: u8,
    pub max: u32,
    pub size: u32,
    pub allocated: u32,
    pub objects: u32,
}

pub fn hpif_payload(heaps: &[HeapInfo]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32(heaps.len() as u32);
    for h in heaps {
        out.put_u32(h.heap_id);
        out.put_u64(h.timestamp_ms);
        out.put_u8(h.reason);
        out.put_u32(h.max);
        out.put_u32(h.size);
        out.put_u32(h.allocated);
        out.put_u32(h.objects);
    }
    out
}

pub fn parse_hpif(data: &[u8]) -> Result<Vec<HeapInfo>, WireError> {
    let mut r = Reader::new(data);
    let n = r.u4()?;
    (0..n)
        .map(|_| {
            Ok(HeapInfo {
                heap_id: r.u4()?,
                timestamp_ms: r.u8()?,
                reason: r.u1()?,
                max: r.u4()?,
                size: r.u4()?,
                allocated: r.u4()?,
                objects: r.u4()?,
            })
        })
        .collect()
}

/// One piece of heap segment data (HPSG/HPSO/NHSG).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapPiece {
    pub heap_id: u32,
    pub alloc_unit: u8,
    pub address: u32,
    pub offset: u32,
    /// `(state, units)` with units 1..=256; on the wire each run is `(state, units - 1)`.
    pub runs: Vec<(u8, u16)>,
}

impl HeapPiece {
    pub fn length_units(&self) -> u32 {
        self.runs.iter().map(|r| u32::from(r.1)).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_u32(self.heap_id);
        out.put_u8(self.alloc_unit);
        out.put_u32(self.address);
        out.put_u32(self.offset);
        out.put_u32(self.length_units());
        for (state, units) in &self.runs {
            out.put_u8(*state);
            out.put_u8(units.saturating_sub(1).min(255) as u8);
        }
        out
    }
}

pub const HEAP_ID: u32 = 1;
pub const NATIVE_HEAP_ID: u32 = 2;

/// The fake VM's known Java-heap pattern: the design document's example (8-byte units at
/// 0x10000, 0x400 units) sent as two pieces of 0x300 and 0x100 units.
pub fn java_heap_pieces() -> Vec<HeapPiece> {
    let p = |offset, runs| HeapPiece { heap_id: HEAP_ID, alloc_unit: 8, address: 0x10000, offset, runs };
    vec![
        // hard-ref object, class object, free: 256 units each
        p(0, vec![(0x01, 256), (0x09, 256), (0x00, 256)]),
        // byte array (kind 2, hard), then free: 128 units each
        p(0x300, vec![(0x11, 128), (0x00, 128)]),
    ]
}

/// The fake VM's native-heap pattern: one piece of 512 units, allocated (kind 7) then free.
pub fn native_heap_pieces() -> Vec<HeapPiece> {
    vec![HeapPiece {
        heap_id: NATIVE_HEAP_ID,
        alloc_unit: 16,
        address: 0x4000_0000,
        offset: 0,
        runs: vec![(0x39, 256), (0x00, 256)],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modern() -> HeloModern {
        HeloModern {
            user_id: 10,
            abi: "arm64-v8a".into(),
            jvm_flags: "-Xcheck:jni".into(),
            native_debuggable: true,
            package_name: "com.example".into(),
            boot_stage: *b"A_GO",
        }
    }

    #[test]
    fn helo_round_trips_every_prefix() {
        for n in 0..=6 {
            let h = Helo {
                version: 1,
                pid: 4242,
                vm_ident: "Dalvik v1".into(),
                app_name: "com.example".into(),
                modern: Some(modern()),
                modern_fields: n,
            };
            let back = Helo::parse(&h.encode()).unwrap();
            assert_eq!((back.pid, back.modern_fields), (4242, n));
            assert_eq!(back.app_name, "com.example");
            if n == 6 {
                assert_eq!(back.modern, Some(modern()));
            }
        }
    }

    #[test]
    fn heap_pieces_have_consistent_lengths() {
        let table = [(java_heap_pieces(), vec![0x300, 0x100]), (native_heap_pieces(), vec![512])];
        for (pieces, lens) in table {
            let got: Vec<u32> = pieces.iter().map(|p| p.length_units()).collect();
            assert_eq!(got, lens);
            for p in &pieces {
                assert_eq!(p.encode().len(), 17 + 2 * p.runs.len());
            }
        }
    }

    #[test]
    fn thst_layout_matches_header() {
        let e = ThstEntry { tid: 1, state: 1, sys_tid: 99, utime: 5, stime: 6, is_daemon: false };
        let b = thst_payload(&[e.clone(), e]);
        assert_eq!(&b[..4], &[4, 18, 0, 2]);
        assert_eq!(b.len(), 4 + 2 * 18);
    }
}
