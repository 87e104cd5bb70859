//! The proxy acting as a DDM server on behalf of `jdwpmux threads|heap|exit|features`:
//! requests sent to the VM, answers gathered from replies and from the chunks the VM pushes.
//!
//! Each chunk goes in a packet of its own: the document plans multi-chunk packets but says
//! VMs need not implement them, and Dalvik and ART read only the first chunk of a packet.
//! The reply to each packet is matched to whoever asked (see `dialect::Ask`): a FAIL chunk
//! or a JDWP error in it ends that request at once with the VM's code and message, unless a
//! fallback handles it. The requests, their layouts and what a refusal does:
//!
//! | request | design document | later Dalvik, ART | on FAIL or a JDWP error |
//! | --- | --- | --- | --- |
//! | THEN `u1 on` | same | same | the thread viewers are told |
//! | THST | `u4 interval`; status pushed every interval | empty; one status per request | the other form is tried (`thst_plan`); both refused: the viewers are told |
//! | HPIF `u1 when` | same | same | `heap` fails with it |
//! | HPSG/NHSG `u1 when, u1 what` | same | same | `heap` fails with it; "off" refused is logged |
//! | HPGC (empty) | not in the document: answered empty, no GC | runs a GC | `heap --gc` fails with it |
//! | FEAT (empty) | not in the document: answered empty | the feature list | `features` fails with it; an empty answer is shown as "no feature list" |
//! | EXIT `u4 status` | same | same; the VM halts, usually without a reply | `exit` fails with it; a reply, the connection dropping or silence for its deadline is success |
//! | REAE/REAQ | not in the document | allocation tracking | never sent by the proxy (a debugger's pass through untouched) |
//!
//! HELO and DBGD are the identification and clean-up requests (`proxy_requests`).

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::actor::Session;
use super::ddm_types::{Completion, DdmAnswer, DdmCommandError, DdmRequest, Outcome, Refusal, ThreadUpdate, ThreadWatcher, Waiter};
use super::dialect::{Ask, AskFor};
use super::purpose::{Purpose, PROXY_REQUEST_TIMEOUT};
use super::thst_plan::{ThstForm, ThstStep, THST_INTERVAL};
use crate::ddm::{decode_chunk, split_chunks, Chunk, ChunkType, Dir};
use crate::jdwp::packet::{DDM_CMD, DDM_CMD_SET};
use crate::jdwp::Packet;

/// The first FAIL chunk in a reply payload.
fn fail_in(payload: &[u8]) -> Option<Refusal> {
    let c = split_chunks(payload, None).filter_map(Result::ok).find(|c| c.ty == ChunkType::FAIL)?;
    Some(match decode_chunk(c.ty, c.data, Dir::FromVm, true) {
        Ok(Chunk::Fail { code, message }) => Refusal::Fail { code, message },
        _ => Refusal::Fail { code: 0, message: "(malformed FAIL chunk)".into() },
    })
}

impl Session {
    fn ddm_usable(&self) -> Result<(), DdmCommandError> {
        match (self.vm.ready, self.vm.ddm_aware) {
            (true, Some(true)) => Ok(()),
            (true, _) => Err(DdmCommandError::NotDdm(self.cfg.name.clone())),
            (false, _) => Err(DdmCommandError::NotReady(self.cfg.name.clone())),
        }
    }

    /// Sends one chunk in a packet of its own and remembers who waits for its reply.
    fn ask(&mut self, what: AskFor, chunk: &Chunk) -> bool {
        let Ok(payload) = chunk.encode() else { return false };
        let Some(id) = self.send_proxy_id(Purpose::Control, DDM_CMD_SET, DDM_CMD, &payload) else { return false };
        self.dialect.asks.insert(id, Ask { what, chunk: chunk.chunk_type(), sent: Instant::now() });
        true
    }

    pub(super) fn on_ddm_request(&mut self, req: DdmRequest) {
        if let Err(e) = self.ddm_usable() {
            let _ = req.reply.send(Err(e));
            return;
        }
        let id = self.dialect.next_waiter;
        self.dialect.next_waiter += 1;
        let sent = req.chunks.iter().filter(|c| self.ask(AskFor::Waiter(id), c)).count();
        let waiter = Waiter {
            id,
            wanted: req.wait_for.into_iter().collect(),
            got: Vec::new(),
            unanswered: sent,
            completion: req.completion,
            deadline: Instant::now() + req.timeout,
            timeout: req.timeout,
            reply: req.reply,
        };
        if waiter.wanted.is_empty() && waiter.completion != Completion::ReplyOrGone {
            self.answer_waiter(waiter, Outcome::Complete);
        } else {
            self.ddm_waiters.push(waiter);
        }
    }

    fn answer_waiter(&self, w: Waiter, outcome: Outcome) {
        let _ = w.reply.send(Ok(DdmAnswer { chunks: w.got, state: self.vm.ddm_state.clone(), outcome }));
    }

    /// The reply to one of the proxy's DDM requests (`Purpose::Control`).
    pub(super) fn on_control_reply(&mut self, p: &Packet) {
        let code = p.header().error_code();
        let refusal = if code != 0 {
            Some(Refusal::Jdwp(code))
        } else {
            // Its chunks first: they complete waiters as pushed chunks do.
            self.on_ddm_payload(p.data(), true, true);
            fail_in(p.data())
        };
        let Some(ask) = self.dialect.asks.remove(&p.id()) else {
            if let Some(r) = refusal {
                warn!(refusal = %r, "the VM refused a DDM request nobody waits for any more");
            }
            return;
        };
        match (ask.what, refusal) {
            (AskFor::Waiter(id), r) => self.waiter_replied(id, ask.chunk, r),
            (AskFor::Thst(form), Some(r)) => self.thst_refused(form, r),
            (AskFor::ThreadsOn, Some(r)) => {
                // Nothing to turn off again.
                self.vm.threads_on = false;
                self.fail_viewers(DdmCommandError::Refused { chunk: ask.chunk, refusal: r });
            }
            (AskFor::Nobody, Some(r)) => warn!(chunk = %ask.chunk, refusal = %r, "the VM refused a DDM request"),
            (_, None) => {}
        }
    }

    fn waiter_replied(&mut self, id: u64, chunk: ChunkType, refusal: Option<Refusal>) {
        let Some(i) = self.ddm_waiters.iter().position(|w| w.id == id) else {
            // Answered already (or a request nobody waits on, like "heap segments off").
            if let Some(refusal) = refusal {
                warn!(%chunk, %refusal, "the VM refused a DDM request");
            }
            return;
        };
        if let Some(refusal) = refusal {
            info!(%chunk, %refusal, "the VM refused a DDM request");
            let w = self.ddm_waiters.remove(i);
            let _ = w.reply.send(Err(DdmCommandError::Refused { chunk, refusal }));
            return;
        }
        let w = &mut self.ddm_waiters[i];
        w.unanswered = w.unanswered.saturating_sub(1);
        let outcome = match w.completion {
            _ if w.unanswered > 0 => return,
            Completion::ReplyOrGone => Outcome::Acknowledged,
            Completion::ChunksOrEmptyReplies if !w.wanted.is_empty() => Outcome::AnsweredEmpty,
            _ => return,
        };
        let w = self.ddm_waiters.remove(i);
        self.answer_waiter(w, outcome);
    }

    // ----- thread viewers -----

    pub(super) fn on_watch_threads(&mut self, interval: Duration, tx: mpsc::Sender<ThreadUpdate>) {
        if let Err(e) = self.ddm_usable() {
            debug!(error = %e, "refusing a thread viewer");
            let _ = tx.try_send(Err(e));
            return;
        }
        self.thread_watchers.push(ThreadWatcher { tx, interval, next: Instant::now() });
        self.poll_threads();
    }

    /// Keeps thread updates going while viewers watch, and turns them off after the last.
    pub(super) fn poll_threads(&mut self) {
        self.thread_watchers.retain(|w| !w.tx.is_closed());
        if self.thread_watchers.is_empty() {
            self.threads_off();
            return;
        }
        if self.ddm_usable().is_err() {
            return;
        }
        if !self.vm.threads_on {
            // THEN makes the VM name every thread (THCR); also after a reconnect.
            info!("thread updates on");
            self.vm.threads_on = true;
            self.ask(AskFor::ThreadsOn, &Chunk::Then { enable: true });
        }
        let now = Instant::now();
        if !self.thread_watchers.iter().any(|w| w.next <= now) {
            return;
        }
        let step = self.dialect.thst.due();
        self.take_thst_step(step);
        if self.dialect.thst.form() == ThstForm::Poll {
            for w in self.thread_watchers.iter_mut().filter(|w| w.next <= now) {
                w.next = now + w.interval;
            }
        }
    }

    fn threads_off(&mut self) {
        let step = self.dialect.thst.stop();
        self.take_thst_step(step);
        if self.vm.threads_on {
            info!("thread updates off: no viewer left");
            self.ask(AskFor::Nobody, &Chunk::Then { enable: false });
            self.vm.threads_on = false;
        }
    }

    fn take_thst_step(&mut self, step: ThstStep) {
        match step {
            ThstStep::Nothing | ThstStep::GiveUp => {}
            ThstStep::PollNow => {
                self.ask(AskFor::Thst(ThstForm::Poll), &Chunk::ThstRequest { interval_ms: None });
            }
            ThstStep::SetInterval(0) => {
                self.ask(AskFor::Nobody, &Chunk::ThstRequest { interval_ms: Some(0) });
            }
            ThstStep::SetInterval(ms) => {
                self.ask(AskFor::Thst(ThstForm::Interval), &Chunk::ThstRequest { interval_ms: Some(ms) });
            }
        }
    }

    fn thst_refused(&mut self, form: ThstForm, refusal: Refusal) {
        let watching = !self.thread_watchers.is_empty();
        match self.dialect.thst.refused(form, watching) {
            ThstStep::GiveUp => {
                warn!(%refusal, "the VM refused both forms of THST");
                self.fail_viewers(DdmCommandError::Refused { chunk: ChunkType::THST, refusal });
            }
            step => {
                let next = self.dialect.thst.form();
                info!(refused = ?form, %refusal, trying = ?next, "the VM refused a THST request; trying the other layout");
                for w in &mut self.thread_watchers {
                    w.restart();
                }
                self.take_thst_step(step);
            }
        }
    }

    /// Tells every thread viewer why no snapshots will come, and lets them go.
    fn fail_viewers(&mut self, e: DdmCommandError) {
        for w in self.thread_watchers.drain(..) {
            let _ = w.tx.try_send(Err(e.clone()));
        }
        self.threads_off();
    }

    /// Hands a thread snapshot to the viewers it is for.
    fn deliver_threads(&mut self) {
        if self.thread_watchers.is_empty() {
            return;
        }
        let now = Instant::now();
        // Pushed status comes every THST_INTERVAL: each viewer gets it at its own pace.
        let paced = self.dialect.thst.form() == ThstForm::Interval;
        let snapshot = self.vm.ddm_state.clone();
        for w in &mut self.thread_watchers {
            if paced {
                if w.next > now + THST_INTERVAL / 2 {
                    continue;
                }
                w.next = now + w.interval;
            }
            let _ = w.tx.try_send(Ok(snapshot.clone()));
        }
    }

    /// Offers a decoded chunk from the VM to whoever waits for it.
    pub(super) fn offer_ddm_chunk(&mut self, chunk: &Chunk) {
        let chunk = chunk.uncompressed();
        if let Chunk::ThstReply(_) = chunk {
            self.dialect.thst.status_arrived();
            self.deliver_threads();
        }
        if self.ddm_waiters.is_empty() {
            return;
        }
        let ty = chunk.chunk_type();
        let mut done = Vec::new();
        for (i, w) in self.ddm_waiters.iter_mut().enumerate() {
            if w.wanted.remove(&ty) {
                w.got.push(chunk.clone());
                if w.wanted.is_empty() {
                    done.push(i);
                }
            }
        }
        for i in done.into_iter().rev() {
            let w = self.ddm_waiters.remove(i);
            self.answer_waiter(w, Outcome::Complete);
        }
    }

    /// Answers waiters whose time is up, and all of them when the VM is lost.
    pub(super) fn expire_ddm_waiters(&mut self, all: bool) {
        let now = Instant::now();
        if all {
            self.dialect.asks.clear();
        } else {
            // Requests never answered (ART's early path answers an empty result with nothing).
            self.dialect.asks.retain(|_, a| now.duration_since(a.sent) < PROXY_REQUEST_TIMEOUT);
        }
        let (late, keep): (Vec<_>, Vec<_>) = self.ddm_waiters.drain(..).partition(|w| all || w.deadline <= now);
        self.ddm_waiters = keep;
        for w in late {
            match (w.completion, all) {
                (Completion::ReplyOrGone, true) => self.answer_waiter(w, Outcome::VmLeft),
                (Completion::ReplyOrGone, false) => self.answer_waiter(w, Outcome::NoAnswer),
                (_, true) => drop(w.reply.send(Err(DdmCommandError::Gone))),
                (_, false) => drop(w.reply.send(Err(DdmCommandError::Timeout(w.timeout)))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(list: &[Chunk]) -> Vec<u8> {
        crate::ddm::encode_payload(list).unwrap()
    }

    #[test]
    fn a_fail_chunk_in_a_reply_is_found() {
        let fail = Chunk::Fail { code: 3, message: "THST request too short".into() };
        let cases: Vec<(Vec<u8>, Option<Refusal>)> = vec![
            (Vec::new(), None),
            (chunks(&[Chunk::FeatReply { features: vec!["x".into()] }]), None),
            (chunks(std::slice::from_ref(&fail)), Some(Refusal::Fail { code: 3, message: "THST request too short".into() })),
            (chunks(&[Chunk::Dbgd, fail]), Some(Refusal::Fail { code: 3, message: "THST request too short".into() })),
            (b"FAIL\0\0\0\x02xx".to_vec(), Some(Refusal::Fail { code: 0, message: "(malformed FAIL chunk)".into() })),
        ];
        for (payload, want) in cases {
            assert_eq!(fail_in(&payload), want, "{payload:?}");
        }
    }
}
