//! Decoding chunk data into [`Chunk`], and whole DDM packet payloads into lists of chunks.
//!
//! The direction picks the layout where a type means different things each way (a HELO to
//! the VM carries the server version, one from the VM describes the VM). Whether the packet
//! is a reply only matters for zero-length chunks: in a reply they mean "nothing to say".

use super::chunk::{split_chunks, ChunkType};
use super::error::DdmError;
use super::heap::parse_segment;
use super::info::{head_of, parse_apnm, parse_artt, parse_helo, parse_hpif, parse_string_list, Blob, BootStage};
use super::model::{Chunk, Dir};
use super::reader::Reader;
use super::threads::{parse_stkl, parse_thst};
use super::zlib::unwrap_zlib;

/// Decodes every chunk of a DDM payload (JDWP command set 0xC7, command 1), in order.
///
/// `payload_is_prefix_of = Some(total)` says `payload` is only the first bytes of a
/// `total`-byte payload: a huge or unknown chunk cut by that boundary comes back as
/// [`Chunk::Truncated`]. The first malformed chunk yields an `Err` (naming the chunk type
/// and the numbers) as the last element; the rest of that payload is skipped.
pub fn decode_payload(
    payload: &[u8],
    dir: Dir,
    is_reply: bool,
    payload_is_prefix_of: Option<usize>,
) -> Vec<Result<Chunk, DdmError>> {
    let mut out = Vec::new();
    for raw in split_chunks(payload, payload_is_prefix_of) {
        let item = match raw {
            Err(e) => Err(e),
            Ok(raw) if raw.truncated => Ok(Chunk::Truncated {
                ty: raw.ty,
                declared_len: raw.declared_len,
                have: raw.data.len(),
                head: head_of(raw.data),
            }),
            Ok(raw) => decode_chunk(raw.ty, raw.data, dir, is_reply),
        };
        let stop = item.is_err();
        out.push(item);
        if stop {
            break;
        }
    }
    out
}

/// Decodes one chunk's data (the bytes after its 8-byte header). Errors are wrapped in
/// [`DdmError::InChunk`] naming the type and length.
pub fn decode_chunk(ty: ChunkType, data: &[u8], dir: Dir, is_reply: bool) -> Result<Chunk, DdmError> {
    decode_inner(ty, data, dir, is_reply, true)
}

fn decode_inner(ty: ChunkType, data: &[u8], dir: Dir, is_reply: bool, allow_zlib: bool) -> Result<Chunk, DdmError> {
    decode_body(ty, data, dir, is_reply, allow_zlib).map_err(|source| DdmError::InChunk {
        ty,
        len: u32::try_from(data.len()).unwrap_or(u32::MAX),
        source: Box::new(source),
    })
}

/// Types whose VM-side form has no fixed fields (empty or opaque): a zero-length one of
/// these is just that, not an "empty reply".
fn vm_form_may_be_empty(ty: ChunkType) -> bool {
    matches!(
        ty,
        ChunkType::DBGD
            | ChunkType::HPGC
            | ChunkType::HPDS
            | ChunkType::REAL
            | ChunkType::NHGT
            | ChunkType::MPSE
            | ChunkType::SPSE
            | ChunkType::VURT
            | ChunkType::VUOP
            | ChunkType::DTRC
            | ChunkType::TEST
    )
}

fn decode_body(ty: ChunkType, data: &[u8], dir: Dir, is_reply: bool, allow_zlib: bool) -> Result<Chunk, DdmError> {
    use Chunk::*;
    let to_vm = dir == Dir::ToVm;
    if is_reply && !to_vm && data.is_empty() && ty.is_known() && !vm_form_may_be_empty(ty) {
        return Ok(EmptyReply { ty });
    }
    let r = &mut Reader::new(data);
    let blob = |r: &mut Reader<'_>| Blob::of(r.rest());
    let chunk = match ty {
        ChunkType::HELO if to_vm => HeloRequest { version: r.u4("server version")? },
        ChunkType::HELO => HeloReply(Box::new(parse_helo(r)?)),
        ChunkType::DBGD => Dbgd,
        ChunkType::APNM => {
            let (app_name, user_id, package_name) = parse_apnm(r)?;
            Apnm { app_name, user_id, package_name }
        }
        ChunkType::WAIT => Wait { reason: r.u1("reason")? },
        ChunkType::THEN => Then { enable: r.u1("enable")? != 0 },
        ChunkType::THCR => Thcr { tid: r.u4("thread id")?, name: r.string("thread name")? },
        ChunkType::THNM => Thnm { tid: r.u4("thread id")?, name: r.string("thread name")? },
        ChunkType::THDE => Thde { tid: r.u4("thread id")? },
        ChunkType::THST if to_vm => {
            ThstRequest { interval_ms: if r.is_empty() { None } else { Some(r.u4("interval")?) } }
        }
        ChunkType::THST => ThstReply(parse_thst(r.rest())?),
        ChunkType::STKL if to_vm => StklRequest { tid: r.u4("thread id")? },
        ChunkType::STKL => StklReply(parse_stkl(r)?),
        ChunkType::HPIF if to_vm => HpifRequest { when: r.u1("when")? },
        ChunkType::HPIF => HpifReply { heaps: parse_hpif(r)? },
        ChunkType::HPSG if to_vm => HpsgRequest { when: r.u1("when")?, what: r.u1("what")? },
        ChunkType::HPSG => Hpsg(parse_segment(r.rest())?),
        ChunkType::HPSO => Hpso(parse_segment(r.rest())?),
        ChunkType::NHSG if to_vm => NhsgRequest { when: r.u1("when")?, what: r.u1("what")? },
        ChunkType::NHSG => Nhsg(parse_segment(r.rest())?),
        ChunkType::HPST => Hpst { heap_id: r.u4("heap id")? },
        ChunkType::HPEN => Hpen { heap_id: r.u4("heap id")? },
        ChunkType::NHST => Nhst { heap_id: r.u4("heap id")? },
        ChunkType::NHEN => Nhen { heap_id: r.u4("heap id")? },
        ChunkType::HPGC => Hpgc,
        ChunkType::HPDU if to_vm => HpduRequest { file: r.string("file")? },
        ChunkType::HPDU => HpduReply { result: r.u1("result")? },
        ChunkType::HPDS if to_vm => HpdsRequest,
        ChunkType::HPDS => Hpds(blob(r)),
        ChunkType::REAE => Reae { enable: r.u1("enable")? != 0 },
        ChunkType::REAQ if to_vm => ReaqRequest,
        ChunkType::REAQ => ReaqReply { enabled: r.u1("enabled")? != 0 },
        ChunkType::REAL if to_vm => RealRequest,
        ChunkType::REAL => Real(blob(r)),
        ChunkType::NHGT if to_vm => NhgtRequest,
        ChunkType::NHGT => Nhgt(blob(r)),
        ChunkType::MPRS => {
            Mprs { buffer_size: r.u4("buffer size")?, flags: r.u4("flags")?, file: r.string("file")? }
        }
        ChunkType::MPRE if to_vm => MpreRequest,
        ChunkType::MPRE => MpreReply { result: r.u1("result")? },
        ChunkType::MPSS => Mpss { buffer_size: r.u4("buffer size")?, flags: r.u4("flags")? },
        ChunkType::SPSS => Spss {
            buffer_size: r.u4("buffer size")?,
            flags: r.u4("flags")?,
            interval_us: r.u4("interval")?,
        },
        ChunkType::MPSE if to_vm => MpseRequest,
        ChunkType::MPSE => Mpse(blob(r)),
        ChunkType::SPSE if to_vm => SpseRequest,
        ChunkType::SPSE => Spse(blob(r)),
        ChunkType::MPRQ if to_vm => MprqRequest,
        ChunkType::MPRQ => MprqReply { mode: r.u1("mode")? },
        ChunkType::VULW if to_vm => VulwRequest,
        ChunkType::VULW => VulwReply { windows: parse_string_list(r, "window name")? },
        ChunkType::VURT if to_vm => Vurt { op: r.u4("op")?, rest: blob(r) },
        ChunkType::VURT => VurtReply(blob(r)),
        ChunkType::VUOP if to_vm => Vuop { op: r.u4("op")?, rest: blob(r) },
        ChunkType::VUOP => VuopReply(blob(r)),
        ChunkType::VUGL => Vugl { enable: r.u4("enable")? != 0 },
        ChunkType::FEAT if to_vm => FeatRequest,
        ChunkType::FEAT => FeatReply { features: parse_string_list(r, "feature")? },
        ChunkType::STAG => Stag { stage: BootStage(r.u4("stage")?) },
        ChunkType::ARTT => {
            let (version, timings) = parse_artt(r)?;
            Artt { version, timings }
        }
        // System.exit takes an int.
        ChunkType::EXIT => Exit { status: r.u4("status")? as i32 },
        ChunkType::FAIL => Fail { code: r.u4("code")?, message: r.string("message")? },
        ChunkType::DTRC => Dtrc(blob(r)),
        ChunkType::TEST => Test(blob(r)),
        ChunkType::ZLIB => decode_zlib(r.rest(), dir, is_reply, allow_zlib)?,
        _ => Unknown { ty, len: u32::try_from(data.len()).unwrap_or(u32::MAX), head: head_of(r.rest()) },
    };
    r.expect_empty("the last field")?;
    Ok(chunk)
}

fn decode_zlib(data: &[u8], dir: Dir, is_reply: bool, allow_zlib: bool) -> Result<Chunk, DdmError> {
    if !allow_zlib {
        return Err(DdmError::NestedZlib);
    }
    let (h, inflated) = unwrap_zlib(data)?;
    if h.original_type == ChunkType::ZLIB {
        return Err(DdmError::NestedZlib);
    }
    let inner = decode_inner(h.original_type, &inflated, dir, is_reply, false)?;
    Ok(Chunk::Compressed { compressed_len: h.compressed_len, original_len: h.original_len, inner: Box::new(inner) })
}
