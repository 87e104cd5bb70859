//! A stop's answers as bytes, for the stream from the far side to the near side. Strict both
//! ways: every count and length is checked against what is left and against the bounds
//! before anything is allocated, the payload is read to its last byte, and what the decoder
//! would refuse the encoder refuses too.
//!
//! ```text
//! u32 event id | u8 suspend policy | u64 thread | u16 count
//! count x ( u8 command set | u8 command | u32 n | n bytes data | u32 m | m bytes reply data )
//! ```

use super::plan::Gathered;
use super::relay::Answers;
use super::Key;
use crate::jdwp::reader::Reader;

/// The most answers one stop carries.
pub const MAX_ANSWERS: usize = 256;
/// The largest payload: a plan's kept bytes are bounded well below this.
pub const MAX_WIRE: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("gathered answers: {0}")]
    Read(#[from] crate::jdwp::reader::ReadError),
    #[error("gathered answers: {0} answers (at most {MAX_ANSWERS})")]
    TooMany(usize),
    #[error("gathered answers: {0} bytes (at most {MAX_WIRE})")]
    TooLarge(usize),
    #[error("gathered answers: {0} bytes after the last answer")]
    Trailing(usize),
}

/// The payload for `a`.
pub fn encode(a: &Answers) -> Result<Vec<u8>, WireError> {
    if a.answers.len() > MAX_ANSWERS {
        return Err(WireError::TooMany(a.answers.len()));
    }
    let mut out = Vec::new();
    out.extend_from_slice(&a.event_id.to_be_bytes());
    out.push(a.suspend_policy);
    out.extend_from_slice(&a.thread.to_be_bytes());
    out.extend_from_slice(&(a.answers.len() as u16).to_be_bytes());
    for g in &a.answers {
        out.push(g.key.set);
        out.push(g.key.cmd);
        for part in [&g.key.data, &g.reply] {
            if part.len() > MAX_WIRE {
                return Err(WireError::TooLarge(part.len()));
            }
            out.extend_from_slice(&(part.len() as u32).to_be_bytes());
            out.extend_from_slice(part);
        }
        if out.len() > MAX_WIRE {
            return Err(WireError::TooLarge(out.len()));
        }
    }
    Ok(out)
}

/// The answers in a payload.
pub fn decode(payload: &[u8]) -> Result<Answers, WireError> {
    if payload.len() > MAX_WIRE {
        return Err(WireError::TooLarge(payload.len()));
    }
    let mut r = Reader::new(payload);
    let event_id = r.u32("event id")?;
    let suspend_policy = r.u8("suspend policy")?;
    let thread = r.id(8, "thread")?;
    let count = r.bytes(2, "count")?;
    let count = usize::from(u16::from_be_bytes([count[0], count[1]]));
    if count > MAX_ANSWERS {
        return Err(WireError::TooMany(count));
    }
    let mut answers = Vec::with_capacity(count);
    for _ in 0..count {
        let set = r.u8("command set")?;
        let cmd = r.u8("command")?;
        let n = r.u32("data length")? as usize;
        let data = r.bytes(n, "data")?.to_vec();
        let m = r.u32("reply length")? as usize;
        let reply = r.bytes(m, "reply")?.to_vec();
        answers.push(Gathered { key: Key::new(set, cmd, data), reply });
    }
    if r.remaining() > 0 {
        return Err(WireError::Trailing(r.remaining()));
    }
    Ok(Answers { event_id, suspend_policy, thread, answers })
}
