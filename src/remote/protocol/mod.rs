//! The stream between jdwpmux near the IDE and jdwpmux on the VM's host (the "far side"):
//! one ordered byte stream (carried by the user's ssh) holding many JDWP connections, which
//! survives the stream being cut and made again.
//!
//! - [`frame`]: frames, their kinds and the header rules (what is numbered, what belongs to a
//!   channel, each kind's maximum length). Pure.
//! - [`payload`]: each kind's payload to bytes and back, strict both ways. Pure.
//! - [`codec`]: the sans-I/O `Decoder`/`Encoder` over them. Pure, fuzzed
//!   (`fuzzing::farlink`).
//! - [`squeeze`]: big Data frames compressed when that makes them smaller (protocol 5),
//!   inflated under a bound. Pure.
//! - [`figures`]: what a near link reports of itself (`stats`): Data frames each way and its
//!   replay buffer, now and the most held. Pure.
//! - [`liveness`]: when a side Pings, and when it takes a silent connection for dead. Pure.
//! - [`hello`]: the versions both sides speak, and what a near side's Hello gets from the
//!   far side (new session, resumed, taken over, refused). Pure, table-tested.
//! - [`ready`]: the line a far side prints when it is ready, written and read. Pure.
//! - [`resume`]: what each side keeps so a cut loses nothing and repeats nothing: sent and
//!   not yet acknowledged (bounded), received, what to replay after a reconnect. Pure.
//!
//! # Decisions the rest builds on
//! - **A channel is one JDWP connection the far side holds to one VM**, opened by the near
//!   side by the VM's key from the far side's VM list. Its Data frames carry that
//!   connection's bytes in order, the JDWP handshake included: the far side relays them
//!   verbatim (under protocol 3, for a near side that asked, with a stop's answers put in
//!   as packets of their own, see below), and the near side's session multiplexes debuggers
//!   onto the channel as it does onto a VM socket. Data is cut into frames of at most
//!   [`frame::MAX_DATA`] bytes wherever the reads fell, not at packet boundaries, so a
//!   200 MiB reply streams through with bounded memory.
//! - **Numbered frames and link frames.** VM lists, Open/Opened/Close and Data are numbered
//!   per direction (1, 2, 3 ...), kept by the sender until acknowledged, and replayed after
//!   a cut: they are delivered exactly once, in order, across any number of connections.
//!   Hello, Bye, Ack, Ping and Pong belong to one connection and are never replayed. The
//!   kind's number says which it is (1..=15 link, 16..=127 numbered), so the rule holds for
//!   kinds added later.
//! - **Every header carries an ack**: the last numbered frame received from the other
//!   direction. Acks ride on whatever goes the other way; an Ack frame is for when nothing
//!   does. Hello's ack is where the other side's replay starts.
//! - **Versions**: a Hello names the protocol versions its side speaks and the binary's
//!   version; the far side picks the highest both speak (`remote::protocol::hello::agree`) and
//!   answers with it alone (min = max), or says Bye (`Version`) with a line saying what it
//!   speaks. A kind is only sent when the agreed version has it; an unknown kind is refused
//!   before its payload is read. This jdwpmux speaks 2 to 6 on both sides, so either side
//!   of protocol 2 and a new one agree on 2.
//! - **Protocol history**: 1, the first; 2, each VM of a list carries its agent's bind
//!   address (a VM list of 1 does not decode as one of 2, so the two do not talk); 3, the
//!   near side's Hello says whether it wants a stop's answers gathered (`Hello::gather`, in
//!   the byte a far side's Hello says `resumed` in, which a far side of 2 reads and ignores
//!   from a near side, so the near side's Hello is the same bytes to both), and a far side
//!   that agreed on 3 with a near side that asked puts them in the channel's Data. No new
//!   frame kind: the answers travel as a JDWP command packet inside the channel's stream
//!   (`remote::stop_answers::inband`: command set 0xF0, command 1, an id of `remote::stop_answers::FAR_IDS`), just
//!   before the stop's event. 4, the VM list says where each VM runs on its host (a
//!   container's name, a pod, a network namespace): a new numbered kind, `VmListPlaced` (the
//!   list of 2 with a text after each VM), sent instead of `VmList` to a near side that
//!   agreed on 4; a near side of 3 still gets `VmList`, without places. 5, either side may
//!   send a Data frame of at least `squeeze::MIN_SQUEEZE` bytes compressed, as a `DataZ`
//!   frame (a new numbered kind), when that makes it smaller: big answers (a class list, a
//!   long string) cost their bandwidth on a thin link. A DataZ frame decodes to the
//!   `Body::Data` it was made from, so only the codec knows it; the resume table keeps the
//!   Data frame, and a replay to a peer of 4 (a near side that came back older) sends it
//!   plain. A peer of 4 never gets one. 6, a stop's gathered answers (and a class lookup's)
//!   may end with a list of the commands the VM answered ABSENT_INFORMATION that the near
//!   cache keeps (`remote::stop_answers::wire`): a far side sends it only to a near side that agreed on 6,
//!   and asks the VM for what only that list can carry (a class's SourceDebugExtension) only
//!   then.
//! - **Sessions**: the far side names a session with a random id and a secret token, given in
//!   its first Hello over the (ssh-authenticated, 0700-folder) stream; a near side that comes
//!   back presents both and is recognised. A wrong token or an unknown session is a Bye, and
//!   the near side then starts a new session (its channels are gone).
//! - **Resume** (see [`resume`]): both sides keep what they sent until acknowledged, the
//!   far side up to a byte limit past which it stops reading its VMs (so a long cut leaves
//!   the VMs waiting on their sockets, as a slow debugger would, and costs bounded memory).
//!   Each side acks within a few milliseconds, or at once after many frames. The near side
//!   uses the same `Resume` table for what it sends (commands to the VMs).
//! - **Liveness** is judged by both sides alike ([`liveness`]): each Pings a quiet connection
//!   and drops one it heard nothing on for half the granted hold (at most 20 s). The near
//!   side then reconnects; the far side's hold runs from when it last heard the near side, so
//!   a cut link (which ends no socket on the host: sshd keeps its end while TCP retries)
//!   releases the VMs a hold after the cut, not after TCP gives up. The near side keeps the
//!   same clock (`remote::near::timing::release_after`, a little early), so it says the VMs are
//!   let go without a word from the far side.
//! - **For hiding round trips** (answers gathered at a stop, protocol 3): the far side reads
//!   the JDWP stream of a gathering channel (to see stop events, `remote::stop_answers::relay`), sends its
//!   own commands to the VM in an id range the near side's sessions never use (their
//!   replies never reach the near side), and puts what it gathered in that channel's stream
//!   as one packet, between the VM's packets, before the stop's event (or before the reply
//!   to a class lookup, with the class data read for it and suspend policy NONE: a near side
//!   of protocol 3 or 4 keeps such class data in its cache as any gathered answer's). Being in the
//!   channel's bytes, a gathered answer is ordered with the VM's own: the near side knows
//!   exactly which replies and events came before it, which is what "nothing since could
//!   have changed it" is judged by, and a cut's replay and the local socket carry it as
//!   they carry the VM's bytes.
//! - **Strict decoding**: every payload is read to its last byte, texts are UTF-8 within
//!   named maxima, reason and status codes a later version may add are kept as `Other(n)`.
//!   A frame the decoder would refuse, the encoder refuses too and writes nothing.

pub mod codec;
pub mod figures;
pub mod frame;
pub mod hello;
pub mod liveness;
pub mod payload;
pub mod ready;
pub mod resume;
pub mod squeeze;

pub use codec::{CodecError, FarCodec};
pub use frame::{Body, Frame, Kind};
