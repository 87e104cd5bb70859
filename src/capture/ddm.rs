//! The little of DDM the capture code needs: walking the chunk headers of a DDM payload
//! (`u4 type, u4 length, data`) to list them. Full chunk decoding is the proxy's job and
//! plugs in through [`super::ChunkDecoder`].

use crate::jdwp::names::{DDM_CHUNK_COMMAND, DDM_COMMAND_SET};

/// Size of a chunk header: 4-byte type, 4-byte big-endian length.
pub const CHUNK_HEADER_LEN: usize = 8;

/// True for the DDM command (set 0xC7, command 1).
pub fn is_ddm(set: u8, cmd: u8) -> bool {
    set == DDM_COMMAND_SET && cmd == DDM_CHUNK_COMMAND
}

/// "HELO" for printable types, "0x01020304" otherwise.
pub fn chunk_type_name(t: [u8; 4]) -> String {
    if t.iter().all(|b| b.is_ascii_graphic()) {
        t.iter().map(|&b| char::from(b)).collect()
    } else {
        format!("0x{:08x}", u32::from_be_bytes(t))
    }
}

/// (type, declared length) of every chunk whose header is present, even when its data
/// was cut off by the snaplen.
pub fn chunk_headers(payload: &[u8]) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut rest = payload;
    while let Some(h) = rest.get(..CHUNK_HEADER_LEN) {
        let len = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        out.push((chunk_type_name([h[0], h[1], h[2], h[3]]), len));
        let skip = CHUNK_HEADER_LEN.saturating_add(len as usize);
        rest = rest.get(skip..).unwrap_or(&[]);
    }
    out
}

/// Default JSON `chunks` value: `[{type, length}, ...]`.
pub fn chunk_summaries(payload: &[u8]) -> Vec<serde_json::Value> {
    chunk_headers(payload)
        .into_iter()
        .map(|(ty, length)| serde_json::json!({ "type": ty, "length": length }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(ty: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut v = ty.to_vec();
        v.extend_from_slice(&(data.len() as u32).to_be_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn lists_chunks_and_tolerates_truncation() {
        let mut p = chunk(b"HELO", &[0, 0, 0, 1]);
        p.extend(chunk(b"FEAT", &[]));
        p.extend(chunk(b"THEN", &[7; 100]));
        let want = vec![
            ("HELO".to_string(), 4),
            ("FEAT".into(), 0),
            ("THEN".into(), 100),
        ];
        assert_eq!(chunk_headers(&p), want);
        // Cut inside the last chunk's data: its header still counts.
        assert_eq!(chunk_headers(&p[..30]), want);
        // Cut inside the last header: it is left out.
        assert_eq!(chunk_headers(&p[..22]), want[..2].to_vec());
        assert_eq!(chunk_headers(&[]), vec![]);
        let json = chunk_summaries(&p[..12]);
        assert_eq!(json, vec![serde_json::json!({"type": "HELO", "length": 4})]);
    }

    #[test]
    fn type_names_and_ddm_detection() {
        assert_eq!(chunk_type_name(*b"APNM"), "APNM");
        assert_eq!(chunk_type_name([0, 1, 2, 3]), "0x00010203");
        assert!(is_ddm(0xC7, 1));
        assert!(!is_ddm(0xC7, 2));
        assert!(!is_ddm(1, 1));
    }

    #[test]
    fn huge_declared_length_does_not_overflow() {
        let p = chunk(b"XXXX", &[]);
        let mut big = p[..4].to_vec();
        big.extend_from_slice(&u32::MAX.to_be_bytes());
        big.extend_from_slice(&p);
        assert_eq!(chunk_headers(&big), vec![("XXXX".to_string(), u32::MAX)]);
    }
}
