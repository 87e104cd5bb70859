//! The relay's VM side: what the VM sends, passed on to the near side, held at a stop (or a
//! class lookup, a prepare request, a class's first command, an invoke returning a String)
//! while the plan's own commands are answered, and released with the answers first.

use std::time::Instant;

use super::*;

impl Relay {
    /// Bytes from the VM, read at `now`.
    pub fn from_vm(&mut self, mut bytes: &[u8], now: Instant) -> Vec<Out> {
        let mut out = Vec::new();
        if self.vm_handshake_left > 0 {
            let n = self.vm_handshake_left.min(bytes.len());
            self.vm_handshake_left -= n;
            self.for_near(&mut out, &bytes[..n]);
            bytes = &bytes[n..];
            if self.vm_handshake_left == 0 && self.gather {
                self.sizes_id = Some(self.send_own(&mut out, &Key::new(1, 7, Vec::new())));
            }
        }
        while !bytes.is_empty() {
            if self.policy_next && !matches!(self.reading, Reading::Header(_)) {
                self.policy_next = false;
                self.vm_wide.event(bytes[0]);
            }
            match &mut self.reading {
                Reading::Stream(left) => {
                    let n = (*left).min(bytes.len());
                    *left -= n;
                    let done = *left == 0;
                    self.for_near(&mut out, &bytes[..n]);
                    bytes = &bytes[n..];
                    if done {
                        self.reading = Reading::Header(Vec::new());
                    }
                }
                Reading::Skip(left) => {
                    let n = (*left).min(bytes.len());
                    *left -= n;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        self.reading = Reading::Header(Vec::new());
                    }
                }
                Reading::Whole(buf, left) => {
                    let n = (*left).min(bytes.len());
                    buf.extend_from_slice(&bytes[..n]);
                    *left -= n;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        let Reading::Whole(buf, _) = std::mem::replace(&mut self.reading, Reading::Header(Vec::new())) else { continue };
                        self.on_whole(&mut out, buf, now);
                    }
                }
                Reading::Header(head) => {
                    let n = (HEADER_LEN - head.len()).min(bytes.len());
                    head.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                    let Some(h) = Header::parse(head) else { continue };
                    let head = std::mem::take(head);
                    let len = (h.length as usize).max(HEADER_LEN);
                    let rest = len - HEADER_LEN;
                    let own = h.is_reply() && FAR_IDS.contains(&h.id);
                    let event = !h.is_reply() && h.cmd_set() == EVENT_CMD_SET && h.cmd() == EVENT_COMPOSITE;
                    self.policy_next = event && rest > 0;
                    let lookup = h.is_reply() && !own && self.take_lookup(h.id);
                    let invoke = h.is_reply() && !own && take(&mut self.invokes, h.id);
                    let planned = (event || lookup || invoke) && self.gather && self.hold.is_none() && self.sizes.is_some() && len <= MAX_EVENT;
                    self.reading = if own && len > MAX_OWN_REPLY {
                        self.own_reply(&mut out, h.id, u16::MAX, &[]);
                        Reading::Skip(rest)
                    } else if own || planned {
                        self.invoke_reply = (planned && invoke).then_some(h.id);
                        Reading::Whole(head, rest)
                    } else {
                        self.for_near(&mut out, &head);
                        Reading::Stream(rest)
                    };
                    if rest == 0 {
                        match std::mem::replace(&mut self.reading, Reading::Header(Vec::new())) {
                            Reading::Whole(buf, _) => self.on_whole(&mut out, buf, now),
                            Reading::Stream(_) | Reading::Skip(_) | Reading::Header(_) => {}
                        }
                    }
                }
            }
        }
        out
    }

    /// VM bytes for the near side: held behind a stop being gathered, else sent.
    fn for_near(&mut self, out: &mut Vec<Out>, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match &mut self.hold {
            Some(h) => {
                h.held.extend_from_slice(bytes);
                if h.held.len() > HOLD_BYTES {
                    self.release(out, false);
                }
            }
            None => match out.last_mut() {
                Some(Out::ToNear(b)) => b.extend_from_slice(bytes),
                _ => out.push(Out::ToNear(bytes.to_vec())),
            },
        }
    }

    fn on_whole(&mut self, out: &mut Vec<Out>, packet: Vec<u8>, now: Instant) {
        let Some(h) = Header::parse(&packet) else { return };
        let data = &packet[HEADER_LEN..];
        if h.is_reply() && FAR_IDS.contains(&h.id) {
            self.own_reply(out, h.id, h.error_code(), data);
            return;
        }
        // An event taken whole: a stop starts a hold; a class lookup's reply too (its class
        // data is read); anything else goes on.
        let Some(sizes) = self.sizes else { return self.for_near(out, &packet) };
        let planned = if h.is_reply() && self.invoke_reply.take() == Some(h.id) {
            (h.error_code() == 0).then(|| super::super::plan::invoked_string(data, &sizes)).flatten().map(|s| Plan::at_invoke(s, sizes, self.limits, &mut self.known))
        } else if h.is_reply() {
            (h.error_code() == 0).then(|| self.lookup_plan(data, sizes)).flatten()
        } else {
            Plan::at_stop(data, sizes, self.limits, &mut self.known)
        };
        let Some((plan, first)) = planned else { return self.for_near(out, &packet) };
        self.hold = Some(Hold { plan, event_id: h.id, ids: HashMap::new(), held: packet, deadline: now + HOLD_TIME });
        self.send_plan(out, first);
    }

    /// Whether `id` is a class lookup of the near side's awaiting its reply (forgotten now).
    fn take_lookup(&mut self, id: u32) -> bool {
        take(&mut self.lookups, id)
    }

    /// Sends the plan's new commands, each with its position in the plan.
    pub(super) fn send_plan(&mut self, out: &mut Vec<Out>, keys: Vec<(usize, Key)>) {
        for (n, key) in keys {
            let id = self.send_own(out, &key);
            if let Some(h) = &mut self.hold {
                h.ids.insert(id, n);
            }
        }
        if self.hold.as_ref().is_some_and(|h| h.plan.done()) {
            self.release(out, true);
        }
    }

    fn own_reply(&mut self, out: &mut Vec<Out>, id: u32, error: u16, data: &[u8]) {
        if Some(id) == self.sizes_id {
            self.sizes_id = None;
            self.sizes = if error == 0 { IdSizes::parse(data) } else { None };
            return;
        }
        // A reply of a hold given up is dropped.
        let Some(h) = &mut self.hold else { return };
        let Some(n) = h.ids.remove(&id) else { return };
        let next = h.plan.on_reply(n, error, data, &mut self.known);
        self.send_plan(out, next);
    }

    /// Ends the hold: the answers (when the plan finished) and then the held bytes.
    pub(super) fn release(&mut self, out: &mut Vec<Out>, finished: bool) {
        let Some(h) = self.hold.take() else { return };
        if finished {
            let (policy, thread) = (h.plan.suspend_policy(), h.plan.thread());
            let (answers, absent) = h.plan.gathered_all();
            if !answers.is_empty() || !absent.is_empty() {
                out.push(Out::Gathered(Answers { event_id: h.event_id, suspend_policy: policy, thread, answers, absent }));
            }
        }
        self.for_near(out, &h.held);
    }
}

/// Whether `id` is in `ids` (removed now).
fn take(ids: &mut std::collections::VecDeque<u32>, id: u32) -> bool {
    match ids.iter().position(|l| *l == id) {
        Some(at) => {
            ids.remove(at);
            true
        }
        None => false,
    }
}
