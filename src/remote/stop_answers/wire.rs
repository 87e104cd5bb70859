//! A stop's answers as bytes, for the stream from the far side to the near side. Strict both
//! ways: every count and length is checked against what is left and against the bounds
//! before anything is allocated, the payload is read to its last byte, and what the decoder
//! would refuse the encoder refuses too.
//!
//! ```text
//! u32 event id | u8 suspend policy | u64 thread | u16 count
//! count x ( u8 command set | u8 command | u32 n | n bytes data | u32 m | m bytes reply data )
//! [ u16 absent | absent x ( u8 command set | u8 command | u32 n | n bytes data ) ]
//! ```
//!
//! The second list, commands the VM answered ABSENT_INFORMATION (far-link protocol 6), is
//! written only when it is not empty: a payload without it is what protocols 3 to 5 send.

use super::plan::Gathered;
use super::relay::Answers;
use super::Key;
use crate::jdwp::reader::Reader;

pub use super::MAX_ANSWERS;
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
    if a.absent.len() > MAX_ANSWERS {
        return Err(WireError::TooMany(a.absent.len()));
    }
    out.extend_from_slice(&(a.answers.len() as u16).to_be_bytes());
    for g in &a.answers {
        put_key_head(&mut out, &g.key);
        for part in [&g.key.data, &g.reply] {
            put_part(&mut out, part)?;
        }
    }
    if !a.absent.is_empty() {
        out.extend_from_slice(&(a.absent.len() as u16).to_be_bytes());
        for key in &a.absent {
            put_key_head(&mut out, key);
            put_part(&mut out, &key.data)?;
        }
    }
    Ok(out)
}

fn put_key_head(out: &mut Vec<u8>, key: &Key) {
    out.push(key.set);
    out.push(key.cmd);
}

/// A length and its bytes, within [`MAX_WIRE`] (the whole payload too).
fn put_part(out: &mut Vec<u8>, part: &[u8]) -> Result<(), WireError> {
    if part.len() > MAX_WIRE || out.len() + 4 + part.len() > MAX_WIRE {
        return Err(WireError::TooLarge(out.len() + 4 + part.len()));
    }
    out.extend_from_slice(&(part.len() as u32).to_be_bytes());
    out.extend_from_slice(part);
    Ok(())
}

/// A u16 count, within [`MAX_ANSWERS`].
fn count(r: &mut Reader<'_>, what: &'static str) -> Result<usize, WireError> {
    let b = r.bytes(2, what)?;
    let n = usize::from(u16::from_be_bytes([b[0], b[1]]));
    if n > MAX_ANSWERS {
        return Err(WireError::TooMany(n));
    }
    Ok(n)
}

/// A command's set, command and data.
fn key(r: &mut Reader<'_>) -> Result<Key, WireError> {
    let set = r.u8("command set")?;
    let cmd = r.u8("command")?;
    let n = r.u32("data length")? as usize;
    Ok(Key::new(set, cmd, r.bytes(n, "data")?.to_vec()))
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
    let n = count(&mut r, "count")?;
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let key = key(&mut r)?;
        let m = r.u32("reply length")? as usize;
        let reply = r.bytes(m, "reply")?.to_vec();
        answers.push(Gathered { key, reply });
    }
    let mut absent = Vec::new();
    if r.remaining() > 0 {
        let n = count(&mut r, "absent")?;
        if n == 0 {
            // An empty list is never written: the encoder leaves it out.
            return Err(WireError::Trailing(r.remaining() + 2));
        }
        for _ in 0..n {
            absent.push(key(&mut r)?);
        }
    }
    if r.remaining() > 0 {
        return Err(WireError::Trailing(r.remaining()));
    }
    Ok(Answers { event_id, suspend_policy, thread, answers, absent })
}
