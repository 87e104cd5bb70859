//! The JDWP wire format: handshake, packets, a streaming decoder, a bounded body reader and
//! the names of commands and errors, and which commands' answers never change
//! (`unchanging`). Pure code: no sockets, no tasks.

pub mod codec;
pub mod events;
pub mod handshake;
pub mod names;
pub mod packet;
pub mod reader;
pub mod unchanging;
pub mod version;

pub use codec::{CodecError, Frame, JdwpCodec};
pub use packet::{Header, Packet};
