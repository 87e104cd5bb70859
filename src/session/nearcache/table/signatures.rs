//! The signatures of the types the near cache keeps answers about: learnt from Signature
//! answers, ClassPrepare events and ClassesBySignature replies (and remembered, within a
//! bound, for types with no answer kept yet), so a ClassUnload drops the types of its own
//! signature, and a lasting class's id is known.

use bytes::Bytes;

use super::{jdwp_string, NearCache, MAX_PENDING, MAX_SEEN_SIGNATURES, MAX_SIGNATURE_LEN};
use crate::jdwp::reader::Reader;

impl NearCache {
    /// Type `t` has signature `sig` (a ClassPrepare event, a ClassesBySignature answer):
    /// a ClassUnload of another signature need not drop it, and a lasting class's id is kept.
    pub fn saw_signature(&mut self, t: u64, sig: &[u8]) {
        self.lasting.saw(t, sig);
        self.note_signature(t, sig);
    }

    fn note_signature(&mut self, t: u64, sig: &[u8]) {
        if sig.len() > MAX_SIGNATURE_LEN {
            return;
        }
        let sig = Bytes::copy_from_slice(sig);
        if self.types.contains_key(&t) {
            self.learn_signature(t, sig);
            return;
        }
        if self.seen.len() >= MAX_SEEN_SIGNATURES {
            self.seen.clear();
        }
        self.seen.insert(t, sig);
    }

    /// A ClassesBySignature command (its data: the signature) went out under `proxy_id`.
    pub(super) fn signature_query(&mut self, proxy_id: u32, conn: u64, data: &[u8]) {
        let Some(sig) = jdwp_string(&mut Reader::new(data)) else { return };
        if self.signature_queries.len() < MAX_PENDING && sig.len() <= MAX_SIGNATURE_LEN {
            self.signature_queries.insert(proxy_id, (conn, Bytes::copy_from_slice(sig), self.lasting.disposals()));
        }
    }

    /// The reply to a ClassesBySignature: classes, then (refTypeTag, typeID, status) each.
    pub(super) fn signature_answer(&mut self, proxy_id: u32, conn: u64, error: u16, answer: &[u8]) {
        let Some((asker, sig, disposals)) = self.signature_queries.remove(&proxy_id) else { return };
        let Some(size) = self.sizes.map(|s| s.reference_type).filter(|_| asker == conn && error == 0) else { return };
        let mut r = Reader::new(answer);
        let Ok(n) = r.u32("classes") else { return };
        for _ in 0..n.min(MAX_SEEN_SIGNATURES as u32) {
            let (Ok(_tag), Ok(t), Ok(_status)) = (r.u8("refTypeTag"), r.id(size, "typeID"), r.u32("status")) else { return };
            if disposals == self.lasting.disposals() {
                self.lasting.saw(t, &sig);
            }
            self.note_signature(t, &sig);
        }
    }

    pub(super) fn learn_signature(&mut self, t: u64, sig: Bytes) {
        let info = self.types.entry(t).or_default();
        if info.signature.as_ref() == Some(&sig) {
            return;
        }
        if let Some(old) = info.signature.replace(sig.clone()) {
            if let Some(s) = self.by_signature.get_mut(&old) {
                s.remove(&t);
            }
        }
        self.by_signature.entry(sig).or_default().insert(t);
    }
}
