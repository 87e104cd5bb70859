//! What travels on the stream between the near and the far side: frames, their kinds, the
//! fixed header, and the rules every frame obeys whatever its payload (which kinds are
//! numbered, which belong to a channel, how long each may be).
//!
//! The header (26 bytes, big-endian like JDWP):
//! ```text
//!  0  u32  payload length (checked against the kind's maximum before anything is buffered)
//!  4  u8   kind
//!  5  u8   flags (none defined yet: must be 0)
//!  6  u32  channel (0: the link itself; else one JDWP connection held by the far side)
//! 10  u64  seq     (0 on link frames; 1, 2, 3 ... on numbered frames, per direction)
//! 18  u64  ack     (every numbered frame of the other direction up to this one has arrived)
//! ```
//!
//! The kind space is split by number so that what a kind is (numbered and replayed, or a
//! link frame that lives and dies with one connection) is known from its range alone:
//! 1..=15 link frames, 16..=127 numbered frames, the rest unassigned. A new kind takes a
//! number in its range and comes with a new protocol version (protocol 3 added none: a
//! stop's answers travel inside a channel's Data); a peer never sends a kind the agreed version lacks, and a decoder refuses a kind
//! it does not know as an error before reading its payload, so an old peer fails cleanly.

use bytes::Bytes;

/// Bytes of the fixed frame header.
pub const HEADER_LEN: usize = 26;
/// The largest Data payload: the far side cuts what it reads from a VM into pieces of at
/// most this, so one frame never holds the link for long and the decoder never buffers more.
pub const MAX_DATA: usize = 64 * 1024;
/// The most VMs one list carries (a host runs a few; this bounds a hostile far side).
pub const MAX_VMS: usize = 512;
/// The largest payload of any kind (the VM list; see `max_payload`).
pub const MAX_PAYLOAD: usize = 4 * 1024 * 1024;
/// Bytes of a reason text (Bye, open results, Close).
pub const MAX_TEXT: usize = 512;
/// Bytes of a binary version string in Hello.
pub const MAX_VERSION: usize = 64;
/// Bytes of a VM's user name and of its main class, jar or module.
pub const MAX_NAME: usize = 512;
/// Bytes of a VM's command line. A wire limit of the protocol, so fixed here rather than
/// borrowed from the scan; the far side checks that what its scan keeps fits
/// (`remote::far::vms`).
pub const MAX_COMMAND: usize = 4096;

/// The first bytes of every Hello: a stream that starts otherwise is not this protocol.
pub const MAGIC: [u8; 8] = *b"JDWPMUXF";

/// A frame's kind, as its number on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Hello = 1,
    Bye = 2,
    Ack = 3,
    Ping = 4,
    Pong = 5,
    VmList = 16,
    Open = 17,
    Opened = 18,
    Close = 19,
    Data = 20,
    /// The VM list with where each VM runs (a container, a pod, a network namespace):
    /// protocol 4. A near side of protocol 3 is sent `VmList`.
    VmListPlaced = 21,
    /// A Data frame's bytes compressed (`super::squeeze`): protocol 5. It decodes to the
    /// `Body::Data` it was made from; nothing but the codec sees this kind.
    DataZ = 22,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::Hello,
        Kind::Bye,
        Kind::Ack,
        Kind::Ping,
        Kind::Pong,
        Kind::VmList,
        Kind::Open,
        Kind::Opened,
        Kind::Close,
        Kind::Data,
        Kind::VmListPlaced,
        Kind::DataZ,
    ];

    /// The kind numbered `n`, if this protocol has one.
    pub fn from_u8(n: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u8 == n)
    }

    /// Numbered frames (16..=127) are counted, acknowledged and replayed after a cut; link
    /// frames (1..=15) belong to one connection and are never replayed.
    pub fn numbered(self) -> bool {
        (16..=127).contains(&(self as u8))
    }

    /// Frames of one channel carry its id; the others carry 0.
    pub fn on_channel(self) -> bool {
        matches!(self, Kind::Open | Kind::Opened | Kind::Close | Kind::Data | Kind::DataZ)
    }

    /// The payload length this kind may announce: checked on the header, before buffering.
    pub fn max_payload(self) -> usize {
        match self {
            Kind::Hello => 8 + 1 + 2 + 2 + 2 + MAX_VERSION + 16 + 16 + 4 + 1,
            Kind::Bye | Kind::Opened | Kind::Close => 1 + 2 + MAX_TEXT,
            Kind::Ack => 0,
            Kind::Ping | Kind::Pong => 8,
            Kind::VmList | Kind::VmListPlaced => MAX_PAYLOAD,
            Kind::Open => 4,
            Kind::Data => MAX_DATA,
            // Sent only when smaller than the Data frame it stands for.
            Kind::DataZ => MAX_DATA - 1,
        }
    }
}

/// Which side a Hello comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side near the IDE: it connects, opens channels, resumes.
    Near = 1,
    /// The side on the VM's host: it holds the VM connections.
    Far = 2,
}

/// A far-side session's name and the secret that proves a near side may resume it.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionKey {
    pub id: [u8; 16],
    pub token: [u8; 16],
}

impl SessionKey {
    /// All zeros: the near side asks for a new session.
    pub fn is_none(&self) -> bool {
        self.id == [0; 16]
    }

    /// Whether `other` names the same session with the same token, compared in constant time
    /// so a local peer cannot guess the token byte by byte from timing.
    pub fn matches(&self, other: &SessionKey) -> bool {
        let diff = self.id.iter().chain(&self.token).zip(other.id.iter().chain(&other.token)).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        diff == 0 && !self.is_none()
    }
}

impl std::fmt::Debug for SessionKey {
    /// The id only: the token is a secret and never goes to a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id: String = self.id[..4].iter().map(|b| format!("{b:02x}")).collect();
        write!(f, "SessionKey({id}..)")
    }
}

/// The first frame each side sends on a new connection. Its header's `ack` says the last
/// numbered frame this side has received in the session (0 for a new session): the other
/// side replays everything after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub role: Role,
    /// The protocol versions this side speaks (the far side answers with the one chosen:
    /// min = max).
    pub proto_min: u16,
    pub proto_max: u16,
    /// The binary's version, for the line that explains a refusal; a near side adds where it
    /// runs, `0.1.0 (laptop pid 4242)` (`remote::near::link::near_name`), which a far side
    /// quotes to a second near side it refuses. Text for lines only: no side parses it.
    pub binary: String,
    /// The session to resume (near side; zero for a new one), or the session this is (far).
    pub session: SessionKey,
    /// How long the far side holds VM connections without a near side, in seconds: what the
    /// near side asks for, and what the far side grants.
    pub hold_secs: u32,
    /// Far side only: the session asked for was resumed (else it is new, and every channel of
    /// an earlier session is gone).
    pub resumed: bool,
    /// Near side only: it wants a stop's answers gathered (protocol 3; see `farlink`'s
    /// protocol history). On the wire it is the byte the far side's `resumed` takes, so a
    /// near side's Hello reads the same to a far side of protocol 2, which ignores that byte
    /// from a near side; the encoder refuses a Hello that sets the other side's flag.
    pub gather: bool,
}

/// Why a side ends the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByeReason {
    /// No protocol version in common.
    Version,
    /// The session to resume is not known (it ended, or the far side restarted).
    UnknownSession,
    /// The resume token does not match the session.
    BadToken,
    /// Another near side took the session over.
    Replaced,
    /// The far side is ending (its hold ran out, or it was told to stop).
    ShuttingDown,
    /// The other side broke the protocol.
    Protocol,
    /// The far side serves another near side, connected now (the text names it): a new
    /// session would take its VMs from under its debuggers. Try again later.
    Busy,
    /// A reason a later version added: the text says what it is.
    Other(u8),
}

/// What became of an Open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenStatus {
    Ok,
    /// The far side knows no VM with that key (it went away).
    NoSuchVm,
    /// The far side could not connect to the VM's agent.
    ConnectFailed,
    Other(u8),
}

/// Why a channel ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The near side is done with it.
    Done,
    /// The VM closed its connection (it exited, or its agent dropped the debugger).
    VmClosed,
    /// No near side came back within the hold time.
    HoldExpired,
    /// Something went wrong on the connection; the text says what.
    Error,
    Other(u8),
}

/// A JVM the far side found on its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmInfo {
    /// The far side's name for it: stable while the VM runs, never reused in a session; the
    /// near side opens channels by it.
    pub key: u32,
    pub pid: u32,
    /// The port its agent listens on (0: not known).
    pub port: u16,
    pub listening: bool,
    pub attached: bool,
    /// `suspend=y` and `main` has not started; None when that cannot be told.
    pub waiting: Option<bool>,
    /// It runs in another network namespace than the far side.
    pub other_net: bool,
    /// The address its agent listens on (its socket's, else the one it was given; None: not
    /// known), so the near side marks an agent on all addresses as a scan would. Protocol 2.
    pub bind: Option<std::net::IpAddr>,
    /// The owner's name ("" when not known).
    pub user: String,
    /// What it runs, and what kind of name that is.
    pub main: Option<(MainKind, String)>,
    /// Empty when the far side can reach it; else why not.
    pub unreachable: String,
    /// Its command line, for filters (never shown: it may hold secrets).
    pub command: String,
    /// Where it runs on its host, as `list` shows it (`container billing-api (podman)`, `pod
    /// shop/orders-5f7c`, `netns NAME`); empty on the host itself, or from a far side of
    /// protocol 3. Protocol 4.
    pub place: String,
}

/// The kind of name `VmInfo::main` holds (as `discovery::jvms::cmdline::MainName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainKind {
    Class = 1,
    Jar = 2,
    Module = 3,
}

/// A frame's payload, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Hello(Hello),
    Bye { reason: ByeReason, text: String },
    /// Nothing to say but the header's `ack`.
    Ack,
    /// Liveness and round-trip time: the other side answers with a Pong of the same stamp.
    Ping(u64),
    Pong(u64),
    /// Every VM the far side knows now: each list replaces the one before.
    VmList(Vec<VmInfo>),
    /// The same, each VM with its `place` (protocol 4).
    VmListPlaced(Vec<VmInfo>),
    /// Connect the frame's channel to the VM with this key.
    Open { vm: u32 },
    Opened { status: OpenStatus, text: String },
    Close { reason: CloseReason, text: String },
    /// Bytes of the channel's JDWP connection, in order (its handshake included).
    Data(Bytes),
}

impl Body {
    pub fn kind(&self) -> Kind {
        match self {
            Body::Hello(_) => Kind::Hello,
            Body::Bye { .. } => Kind::Bye,
            Body::Ack => Kind::Ack,
            Body::Ping(_) => Kind::Ping,
            Body::Pong(_) => Kind::Pong,
            Body::VmList(_) => Kind::VmList,
            Body::VmListPlaced(_) => Kind::VmListPlaced,
            Body::Open { .. } => Kind::Open,
            Body::Opened { .. } => Kind::Opened,
            Body::Close { .. } => Kind::Close,
            Body::Data(_) => Kind::Data,
        }
    }
}

/// One frame: the header's numbers and the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub channel: u32,
    pub seq: u64,
    pub ack: u64,
    pub body: Body,
}

/// A header that breaks a rule, found before its payload is read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    #[error("{kind:?} frame of {len} bytes exceeds its maximum of {max}")]
    TooLong { kind: Kind, len: u32, max: usize },
    #[error("{kind:?} frame with flags {flags:#04x} (none are defined)")]
    Flags { kind: Kind, flags: u8 },
    #[error("{kind:?} frame on channel {channel} (it belongs {})", if kind.on_channel() { "to a channel" } else { "to the link" })]
    Channel { kind: Kind, channel: u32 },
    #[error("{kind:?} frame with sequence number {seq} ({})", if kind.numbered() { "numbered frames start at 1" } else { "link frames carry 0" })]
    Seq { kind: Kind, seq: u64 },
}

/// The header fields, parsed and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub len: u32,
    pub kind: Kind,
    pub channel: u32,
    pub seq: u64,
    pub ack: u64,
}

impl Header {
    /// Parses and checks a header; None when fewer than `HEADER_LEN` bytes are there.
    pub fn parse(b: &[u8]) -> Option<Result<Header, HeaderError>> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let channel = u32::from_be_bytes([b[6], b[7], b[8], b[9]]);
        let seq = u64::from_be_bytes([b[10], b[11], b[12], b[13], b[14], b[15], b[16], b[17]]);
        let ack = u64::from_be_bytes([b[18], b[19], b[20], b[21], b[22], b[23], b[24], b[25]]);
        let Some(kind) = Kind::from_u8(b[4]) else { return Some(Err(HeaderError::UnknownKind(b[4]))) };
        Some(check(kind, len as usize, b[5], channel, seq).map(|()| Header { len, kind, channel, seq, ack }))
    }

    /// The header's bytes, without an allocation.
    pub fn put(&self, out: &mut [u8; HEADER_LEN]) {
        out[0..4].copy_from_slice(&self.len.to_be_bytes());
        out[4] = self.kind as u8;
        out[5] = 0;
        out[6..10].copy_from_slice(&self.channel.to_be_bytes());
        out[10..18].copy_from_slice(&self.seq.to_be_bytes());
        out[18..26].copy_from_slice(&self.ack.to_be_bytes());
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_be_bytes());
        out.push(self.kind as u8);
        out.push(0);
        out.extend_from_slice(&self.channel.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
    }
}

/// The rules every frame of `kind` obeys, on the way in and on the way out.
pub fn check(kind: Kind, len: usize, flags: u8, channel: u32, seq: u64) -> Result<(), HeaderError> {
    if len > kind.max_payload() {
        return Err(HeaderError::TooLong { kind, len: u32::try_from(len).unwrap_or(u32::MAX), max: kind.max_payload() });
    }
    if flags != 0 {
        return Err(HeaderError::Flags { kind, flags });
    }
    if kind.on_channel() != (channel != 0) {
        return Err(HeaderError::Channel { kind, channel });
    }
    if kind.numbered() != (seq != 0) {
        return Err(HeaderError::Seq { kind, seq });
    }
    Ok(())
}
