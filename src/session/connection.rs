//! What belongs to one VM connection: its bytes and framing, the ids and purposes of what
//! is in flight, what is known of the VM on it, the sharing tables, the events and commands
//! kept back, leaving and settling, its capture. Made fresh on each connect (the old one is
//! dropped whole), so nothing of a previous connection can stay behind.
//!
//! What outlives a connection stays in `Session`: the debuggers waiting and their watchers,
//! the VM's id sizes, the events held for the next debugger and their drop count, the near
//! cache (told of each new connection), the figures, the dialect.

use std::collections::{HashMap, VecDeque};

use bytes::{Bytes, BytesMut};
use tokio::time::Instant;

use super::ids::IdTable;
use super::leaving::Leaving;
use super::purpose::{LateSizes, Purpose};
use super::sharing::Sharing;
use crate::jdwp::codec::JdwpCodec;
use crate::jdwp::Packet;

/// Where the body of a large VM packet goes.
pub(super) struct VmStream {
    /// The debuggers it goes to (connection numbers).
    pub to: Vec<u64>,
    /// For packets the proxy reads itself: the header, a bounded prefix, and the purpose.
    pub collect: Option<(crate::jdwp::Header, Vec<u8>, Option<Purpose>)>,
}

/// The state of one VM connection.
pub(super) struct Connection {
    pub ids: IdTable,
    pub purposes: HashMap<u32, Purpose>,
    /// Bytes queued for the VM.
    pub out: BytesMut,
    pub codec: JdwpCodec,
    /// Where the rest of a large packet from the VM goes.
    pub downstream: Option<VmStream>,
    pub ready: bool,
    pub ddm_aware: Option<bool>,
    /// Whether the proxy asked IDSizes on a debugger's first EventRequest.Set (the sizes were
    /// still unknown: an Android VM is identified with HELO alone), and whether that is answered.
    pub late_sizes: LateSizes,
    pub identify_pending: usize,
    /// The Version reply said Android: reconnect once the IDSizes reply is in too.
    pub android_by_version: bool,
    /// Serving, cleaning up after the last debugger, or to be reset (`leaving`).
    pub leaving: Leaving,
    /// Who owns which event request, suspension and pin.
    pub sharing: Sharing,
    /// Events kept back, in the VM's order, until the Sets in flight say whose they are.
    pub deferred_events: VecDeque<Packet>,
    /// A debugger whose large command is being streamed to the VM: nothing else may be
    /// written to the VM until its end, so whole packets wait in `deferred_writes`.
    pub upstream: Option<u64>,
    /// When that command last moved.
    pub upstream_progress: Instant,
    pub deferred_writes: Vec<(Bytes, Option<u32>)>,
    /// Capture of the VM leg of this connection.
    pub tap: Option<crate::capture::tap::Tap>,
    /// The VM's client state, as DDM says it.
    pub ddm_state: crate::ddm::ClientData,
    pub threads_on: bool,
    /// The relay that reads a stop's answers, on a connection to a VM the session reaches
    /// itself that answers near (`local_stops`); every byte to and from the VM passes it.
    pub stops: Option<super::local_stops::LocalStops>,
}

impl Default for Connection {
    fn default() -> Self {
        Connection {
            ids: IdTable::default(),
            purposes: HashMap::new(),
            out: BytesMut::new(),
            codec: JdwpCodec::default(),
            downstream: None,
            ready: false,
            ddm_aware: None,
            late_sizes: LateSizes::NotAsked,
            identify_pending: 0,
            android_by_version: false,
            leaving: Leaving::default(),
            sharing: Sharing::default(),
            deferred_events: VecDeque::new(),
            upstream: None,
            upstream_progress: Instant::now(),
            deferred_writes: Vec::new(),
            tap: None,
            ddm_state: Default::default(),
            threads_on: false,
            stops: None,
        }
    }
}
