//! DDM chunks as JSON values, for captures and `decode --json`.

use super::{decode_payload, Dir};

/// Decodes a DDM payload into one JSON object per chunk (an `error` object for a bad one).
/// The signature is the capture writer's `ChunkDecoder`.
pub fn chunks_json(payload: &[u8], from_vm: bool, is_reply: bool) -> Vec<serde_json::Value> {
    chunks_json_prefix(payload, from_vm, is_reply, None)
}

/// As [`chunks_json`] for a payload that may be the first bytes of a `prefix_of`-byte one.
pub fn chunks_json_prefix(payload: &[u8], from_vm: bool, is_reply: bool, prefix_of: Option<usize>) -> Vec<serde_json::Value> {
    let dir = if from_vm { Dir::FromVm } else { Dir::ToVm };
    decode_payload(payload, dir, is_reply, prefix_of)
        .into_iter()
        .map(|item| match item {
            Ok(chunk) => serde_json::to_value(&chunk).unwrap_or(serde_json::Value::Null),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn chunks_become_objects_with_a_type() {
        let payload = super::super::encode_chunk(super::super::ChunkType::THDE, &[0, 0, 0, 7]);
        let v = super::chunks_json(&payload, true, false);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0]["type"], "THDE");
        let bad = super::chunks_json(&[b'T', b'H', b'D', b'E', 0, 0, 0, 9], true, false);
        assert!(bad[0]["error"].is_string());
    }
}
