//! Encoding [`Chunk`]s back to bytes: the requests the proxy sends (HELO, DBGD, THEN, THST,
//! HPIF, HPSG/NHSG, HPGC, EXIT, FEAT, STKL, ...) and, for tests and fake VMs, the VM's chunks.
//! Opaque chunks can only be encoded when their summary still holds all their bytes.

use super::chunk::{encode_chunk, ChunkType};
use super::error::DdmError;
use super::heap::encode_segment;
use super::info::Blob;
use super::model::Chunk;
use super::reader::{utf16_len, Writer};
use super::zlib::wrap_zlib;

impl Chunk {
    /// The whole chunk: `u4 type, u4 length, data`.
    pub fn encode(&self) -> Result<Vec<u8>, DdmError> {
        Ok(encode_chunk(self.chunk_type(), &self.encode_data()?))
    }

    /// Just the data after the chunk header.
    pub fn encode_data(&self) -> Result<Vec<u8>, DdmError> {
        use Chunk::*;
        let ty = self.chunk_type();
        let mut w = Writer::new();
        match self {
            HeloRequest { version } => {
                w.put_u4(*version);
            }
            HeloReply(h) => {
                w.put_u4(h.version).put_u4(h.pid);
                w.put_u4(utf16_len(&h.vm_ident)).put_u4(utf16_len(&h.app_name));
                w.put_utf16(&h.vm_ident).put_utf16(&h.app_name);
                // Optional fields are positional: stop at the first one missing.
                if let Some(user) = h.user_id {
                    w.put_u4(user);
                    if let Some(abi) = &h.abi {
                        w.put_string(abi);
                        if let Some(flags) = &h.jvm_flags {
                            w.put_string(flags);
                            if let Some(nd) = h.native_debuggable {
                                w.put_u1(u8::from(nd));
                                if let Some(pkg) = &h.package_name {
                                    w.put_string(pkg);
                                    if let Some(stage) = h.boot_stage {
                                        w.put_u4(stage.0);
                                        // A newer VM's fields, not kept: as many zeros,
                                        // so the count survives a round trip.
                                        for _ in 0..h.trailing_bytes {
                                            w.put_u1(0);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Apnm { app_name, user_id, package_name } => {
                w.put_string(app_name);
                if let Some(user) = user_id {
                    w.put_u4(*user);
                    if let Some(pkg) = package_name {
                        w.put_string(pkg);
                    }
                }
            }
            Wait { reason } => {
                w.put_u1(*reason);
            }
            Then { enable } | Reae { enable } | ReaqReply { enabled: enable } => {
                w.put_u1(u8::from(*enable));
            }
            Vugl { enable } => {
                w.put_u4(u32::from(*enable));
            }
            Thcr { tid, name } | Thnm { tid, name } => {
                w.put_u4(*tid).put_string(name);
            }
            Thde { tid } | StklRequest { tid } => {
                w.put_u4(*tid);
            }
            ThstRequest { interval_ms } => {
                if let Some(ms) = interval_ms {
                    w.put_u4(*ms);
                }
            }
            ThstReply(st) => super::encode_vm::thst(&mut w, st),
            StklReply(st) => super::encode_vm::stkl(&mut w, st),
            HpifRequest { when } => {
                w.put_u1(*when);
            }
            HpifReply { heaps } => super::encode_vm::hpif(&mut w, heaps),
            HpsgRequest { when, what } | NhsgRequest { when, what } => {
                w.put_u1(*when).put_u1(*what);
            }
            Hpsg(s) | Hpso(s) | Nhsg(s) => {
                w.put_bytes(&encode_segment(s));
            }
            Hpst { heap_id } | Hpen { heap_id } | Nhst { heap_id } | Nhen { heap_id } => {
                w.put_u4(*heap_id);
            }
            HpduRequest { file } => {
                w.put_string(file);
            }
            HpduReply { result } | MpreReply { result } => {
                w.put_u1(*result);
            }
            MprqReply { mode } => {
                w.put_u1(*mode);
            }
            Mprs { buffer_size, flags, file } => {
                w.put_u4(*buffer_size).put_u4(*flags).put_string(file);
            }
            Mpss { buffer_size, flags } => {
                w.put_u4(*buffer_size).put_u4(*flags);
            }
            Spss { buffer_size, flags, interval_us } => {
                w.put_u4(*buffer_size).put_u4(*flags).put_u4(*interval_us);
            }
            VulwReply { windows: list } | FeatReply { features: list } => {
                w.put_u4(u32::try_from(list.len()).unwrap_or(u32::MAX));
                for s in list {
                    w.put_string(s);
                }
            }
            Vurt { op, rest } | Vuop { op, rest } => {
                w.put_u4(*op).put_bytes(whole(ty, rest)?);
            }
            Hpds(b) | Real(b) | Nhgt(b) | Mpse(b) | Spse(b) | VurtReply(b) | VuopReply(b) | Dtrc(b) | Test(b) => {
                w.put_bytes(whole(ty, b)?);
            }
            Stag { stage } => {
                w.put_u4(stage.0);
            }
            Artt { version, timings } => super::encode_vm::artt(&mut w, *version, timings),
            Exit { status } => {
                w.put_u4(*status as u32);
            }
            Fail { code, message } => {
                w.put_u4(*code).put_string(message);
            }
            Compressed { inner, .. } => {
                if inner.is_compressed() {
                    return Err(DdmError::NestedZlib);
                }
                w.put_bytes(&wrap_zlib(inner.chunk_type(), &inner.encode_data()?));
            }
            Unknown { len, head, .. } => {
                if *len as usize != head.len() {
                    return Err(DdmError::NotEncodable { ty, why: "only the head of the data was kept" });
                }
                w.put_bytes(head);
            }
            Truncated { .. } => {
                return Err(DdmError::NotEncodable { ty, why: "seen through a prefix of its packet" });
            }
            Dbgd | Hpgc | HpdsRequest | ReaqRequest | RealRequest | NhgtRequest | MpreRequest | MpseRequest
            | SpseRequest | MprqRequest | VulwRequest | FeatRequest | EmptyReply { .. } => {}
        }
        Ok(w.into_vec())
    }
}

/// The blob's bytes, if the summary still holds all of them.
fn whole(ty: ChunkType, b: &Blob) -> Result<&[u8], DdmError> {
    if b.len as usize == b.head.len() {
        Ok(&b.head)
    } else {
        Err(DdmError::NotEncodable { ty, why: "only the head of the data was kept" })
    }
}

/// Several chunks in one payload.
pub fn encode_payload(chunks: &[Chunk]) -> Result<Vec<u8>, DdmError> {
    let mut out = Vec::new();
    for c in chunks {
        out.extend_from_slice(&c.encode()?);
    }
    Ok(out)
}
