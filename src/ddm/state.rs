//! `ClientData`: what we know about one VM, kept up to date by feeding it every decoded
//! chunk (either direction) with [`ClientData::apply`].
//!
//! Early app names ("<pre-initialized>" or empty) mean "not known yet" and never overwrite a
//! known value. Heap maps are assembled between HPST/HPEN (NHST/NHEN) and only the last
//! complete map per heap id is kept, behind an `Arc` so cloning a snapshot is cheap.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::heapmap::{HeapMap, HeapMapBuilder};
use super::info::{BootStage, HeapInfo};
use super::model::Chunk;
use super::threads::ThreadState;

/// Most threads tracked per VM; THCR/THST for more are ignored (a VM cannot grow us forever).
pub const MAX_THREADS: usize = 65_536;

const PRE_INITIALIZED: &str = "<pre-initialized>";

/// One thread as far as we know it; fields stay `None` until some chunk tells them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadInfo {
    pub name: Option<String>,
    pub state: Option<ThreadState>,
    pub suspended: Option<bool>,
    pub sys_tid: Option<u32>,
    pub utime: Option<u32>,
    pub stime: Option<u32>,
    pub daemon: Option<bool>,
}

/// The last FAIL chunk the VM sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailInfo {
    pub code: u32,
    pub message: String,
}

/// Live per-VM state.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClientData {
    pub protocol_version: Option<u32>,
    pub pid: Option<u32>,
    pub vm_ident: Option<String>,
    pub app_name: Option<String>,
    pub user_id: Option<u32>,
    pub package_name: Option<String>,
    pub abi: Option<String>,
    pub jvm_flags: Option<String>,
    pub native_debuggable: Option<bool>,
    /// Reason of the last WAIT (0 = waiting for a debugger) until [`ClientData::clear_waiting`].
    pub wait_reason: Option<u8>,
    /// From the last FEAT reply.
    pub features: Option<Vec<String>>,
    pub boot_stage: Option<BootStage>,
    pub threads: BTreeMap<u32, ThreadInfo>,
    /// From HPIF, per heap id.
    pub heap_infos: BTreeMap<u32, HeapInfo>,
    /// Last complete HPST..HPEN map per heap id.
    #[serde(serialize_with = "ser_maps")]
    pub heap_maps: BTreeMap<u32, Arc<HeapMap>>,
    /// Last complete NHST..NHEN map per heap id.
    #[serde(serialize_with = "ser_maps")]
    pub native_heap_maps: BTreeMap<u32, Arc<HeapMap>>,
    pub last_fail: Option<FailInfo>,
    /// THCR/THNM/THST entries ignored because `MAX_THREADS` threads are tracked already.
    #[serde(skip)]
    pub threads_ignored: u64,
    #[serde(skip)]
    heaps_in_progress: HeapMapBuilder,
}

// serde's `rc` feature is not enabled in the crate, so Arc values are written by hand.
fn ser_maps<S: serde::Serializer>(m: &BTreeMap<u32, Arc<HeapMap>>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().map(|(k, v)| (k, &**v)))
}

/// `None` for names that only mean "not known yet".
fn known(name: &str) -> Option<String> {
    (!name.is_empty() && name != PRE_INITIALIZED).then(|| name.to_string())
}

fn set_if_known(slot: &mut Option<String>, name: &str) {
    if let Some(n) = known(name) {
        *slot = Some(n);
    }
}

impl ClientData {
    pub fn new() -> Self {
        ClientData::default()
    }

    /// The VM said it waits for a debugger (WAIT reason 0) and nothing has cleared it.
    pub fn is_waiting_for_debugger(&self) -> bool {
        self.wait_reason == Some(0)
    }

    /// Call when a debugger attaches (the VM sends no "done waiting" chunk).
    pub fn clear_waiting(&mut self) {
        self.wait_reason = None;
    }

    /// A short name for logs: package or app name, else `pid N`, else `?`.
    pub fn label(&self) -> String {
        match (self.package_name.as_ref().or(self.app_name.as_ref()), self.pid) {
            (Some(name), Some(pid)) => format!("{name} (pid {pid})"),
            (Some(name), None) => name.clone(),
            (None, Some(pid)) => format!("pid {pid}"),
            (None, None) => "?".to_string(),
        }
    }

    fn thread(&mut self, tid: u32) -> Option<&mut ThreadInfo> {
        // Length first: below the limit (always, in practice) a THST entry costs one lookup.
        if self.threads.len() >= MAX_THREADS && !self.threads.contains_key(&tid) {
            self.threads_ignored += 1;
            return None;
        }
        Some(self.threads.entry(tid).or_default())
    }

    /// Updates the state from one decoded chunk; chunks that say nothing about the VM's
    /// state (requests, opaque data) are ignored.
    pub fn apply(&mut self, chunk: &Chunk) {
        use Chunk::*;
        match chunk {
            Compressed { inner, .. } => self.apply(inner),
            HeloReply(h) => {
                self.protocol_version = Some(h.version);
                self.pid = Some(h.pid);
                set_if_known(&mut self.vm_ident, &h.vm_ident);
                set_if_known(&mut self.app_name, &h.app_name);
                if h.user_id.is_some() {
                    self.user_id = h.user_id;
                }
                if let Some(abi) = &h.abi {
                    set_if_known(&mut self.abi, abi);
                }
                if let Some(flags) = &h.jvm_flags {
                    self.jvm_flags = Some(flags.clone());
                }
                if h.native_debuggable.is_some() {
                    self.native_debuggable = h.native_debuggable;
                }
                if let Some(pkg) = &h.package_name {
                    set_if_known(&mut self.package_name, pkg);
                }
                if h.boot_stage.is_some() {
                    self.boot_stage = h.boot_stage;
                }
            }
            Apnm { app_name, user_id, package_name } => {
                set_if_known(&mut self.app_name, app_name);
                if user_id.is_some() {
                    self.user_id = *user_id;
                }
                if let Some(pkg) = package_name {
                    set_if_known(&mut self.package_name, pkg);
                }
            }
            Wait { reason } => self.wait_reason = Some(*reason),
            FeatReply { features } => self.features = Some(features.clone()),
            Stag { stage } => self.boot_stage = Some(*stage),
            Thcr { tid, name } => {
                if let Some(t) = self.thread(*tid) {
                    t.name = Some(name.clone());
                    // The document: threads from THCR are "initializing" until a THST.
                    t.state.get_or_insert(ThreadState::INITIALIZING);
                }
            }
            Thnm { tid, name } => {
                if let Some(t) = self.thread(*tid) {
                    t.name = Some(name.clone());
                }
            }
            Thde { tid } => {
                self.threads.remove(tid);
            }
            ThstReply(st) => {
                for e in &st.threads {
                    let Some(t) = self.thread(e.tid) else { continue };
                    t.state = Some(e.state);
                    // Keep what an older report said when this layout lacks a field.
                    t.suspended = e.suspended.or(t.suspended);
                    t.sys_tid = e.sys_tid.or(t.sys_tid);
                    t.utime = e.utime.or(t.utime);
                    t.stime = e.stime.or(t.stime);
                    t.daemon = e.daemon.or(t.daemon);
                }
            }
            HpifReply { heaps } => {
                for h in heaps {
                    self.heap_infos.insert(h.heap_id, *h);
                }
            }
            Hpst { heap_id } => self.heaps_in_progress.start(false, *heap_id),
            Nhst { heap_id } => self.heaps_in_progress.start(true, *heap_id),
            Hpsg(seg) | Hpso(seg) => self.heaps_in_progress.add(false, seg.clone()),
            Nhsg(seg) => self.heaps_in_progress.add(true, seg.clone()),
            Hpen { heap_id } => {
                if let Some(map) = self.heaps_in_progress.finish(false, *heap_id) {
                    self.heap_maps.insert(*heap_id, Arc::new(map));
                }
            }
            Nhen { heap_id } => {
                if let Some(map) = self.heaps_in_progress.finish(true, *heap_id) {
                    self.native_heap_maps.insert(*heap_id, Arc::new(map));
                }
            }
            Fail { code, message } => self.last_fail = Some(FailInfo { code: *code, message: message.clone() }),
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
