//! The proxy's own requests as the actor records them: what each one is for (`Purpose`, with
//! the steps of the clean-up), how long one may go unanswered, and where the late IDSizes
//! request stands on a connection. Sending them and reading their replies is
//! `proxy_requests`; this file imports nothing of the session, so the actor, the VM side and
//! the DDM commands can all name these types.

use std::time::Duration;

/// Proxy requests unanswered after this long are given up (DBGD is often never answered).
/// Generous: a thousand VMs starting at once on a small machine answer slowly, and giving
/// up on HELO too early would mark a DDM-aware VM as not DDM-aware for good.
pub const PROXY_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a proxy request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Version,
    IdSizes,
    Helo,
    Dbgd,
    /// A DDM request for a control command; its answer is read from the decoded chunks.
    Control,
    /// Part of the clean-up after the last debugger left.
    Cleanup(CleanupStep),
    /// Done on a debugger's behalf while others stay: a translated resume, a Clear or an
    /// EnableCollection of a departed debugger.
    Share,
    /// An EventRequest.Set (of this event kind) of a debugger that left while the others stay,
    /// sent before it left and answered after: the request the VM granted is cleared.
    LeftSet(u8),
    /// IDSizes asked when a debugger first set an event request and the sizes were unknown:
    /// events cannot be split between debuggers without them.
    LateIdSizes,
    /// The proxy's ClassUnload request, so the near cache learns of unloaded classes.
    UnloadWatch,
    /// A VM fact every debugger asks at attach (CapabilitiesNew), asked with the
    /// identification so the first debugger's ask is answered near too.
    Seed(u8, u8),
}

/// Where the proxy's late IDSizes request stands on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateSizes {
    NotAsked,
    /// Asked and not answered: events wait for the answer, as they wait for Set replies.
    Pending,
    /// Answered (or never will be): asked once per connection.
    Settled,
}

/// One request of the clean-up after the last debugger left a DDM-aware VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupStep {
    IdSizes,
    ClearEvent,
    AllThreads,
    SuspendCount(u64),
    Resume,
}
