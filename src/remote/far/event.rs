//! What a channel's task tells the session: in a file of its own, as both the plain relay
//! (`channel`) and the gathering one (`gathering`) send it.

use bytes::Bytes;

use crate::remote::protocol::frame::{CloseReason, OpenStatus};

/// What a channel's task tells the session.
#[derive(Debug)]
pub enum Event {
    Opened { channel: u32, result: Result<(), (OpenStatus, String)> },
    Data { channel: u32, bytes: Bytes },
    Closed { channel: u32, reason: CloseReason, text: String },
}
