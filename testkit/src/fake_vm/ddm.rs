//! The fake VM's DDM side: answers H->V chunks (HELO, FEAT, DBGD, THEN, THST, HPIF, HPSG/NHSG,
//! HPGC, EXIT) and sends the V->H chunks a real ART VM would send after them; in the
//! document's layout (`document`), what the design document says instead.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::super::ddm::*;
use super::super::wire::*;
use super::jdwp::Action;
use super::state::{Conn, DbgdReply, DdmLayout, FakeVmConfig, HeapRequest, Shared};

pub const HEAP_MAX: u32 = 256 << 20;
pub const HEAP_SIZE: u32 = 16 << 20;
pub const HEAP_ALLOCATED: u32 = 8 << 20;
pub const HEAP_OBJECTS: u32 = 12345;

/// The THST entries the fake VM reports for `cfg`: thread i (0-based) has state 1 (running)
/// for i = 0 else 2 (sleeping), sysTid pid + i, utime 10 * (i + 1), stime i + 1.
pub fn thst_entries(cfg: &FakeVmConfig) -> Vec<ThstEntry> {
    cfg.threads
        .iter()
        .enumerate()
        .map(|(i, t)| ThstEntry {
            tid: t.ddm_id,
            state: if i == 0 { 1 } else { 2 },
            sys_tid: cfg.pid + i as u32,
            utime: 10 * (i as u32 + 1),
            stime: i as u32 + 1,
            is_daemon: t.daemon,
        })
        .collect()
}

/// The THST entries now: [`thst_entries`] with the states a test set over the defaults.
pub(super) fn live_thst_entries(shared: &Shared) -> Vec<ThstEntry> {
    let mut entries = thst_entries(&shared.cfg);
    shared.read(|s| entries.iter_mut().for_each(|e| e.state = s.thread_states.get(&e.tid).copied().unwrap_or(e.state)));
    entries
}

/// The one heap the fake VM reports in HPIF, with `reason` = the request's `when`.
pub fn heap_info(reason: u8) -> HeapInfo {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    HeapInfo {
        heap_id: HEAP_ID,
        timestamp_ms: ms,
        reason,
        max: HEAP_MAX,
        size: HEAP_SIZE,
        allocated: HEAP_ALLOCATED,
        objects: HEAP_OBJECTS,
    }
}

pub(super) fn fail_chunk(code: u32, msg: &str) -> Chunk {
    let mut d = Vec::new();
    d.put_u32(code);
    put_ddm_string(&mut d, msg);
    Chunk::new(b"FAIL", d)
}

pub(super) fn handle_ddm(shared: &Arc<Shared>, conn: &Arc<Conn>, pkt: &Packet) -> Vec<Action> {
    let cfg = &shared.cfg;
    let chunks = match pkt.chunks() {
        Ok(c) => c,
        Err(e) => {
            let payload = encode_chunks(&[fail_chunk(1, &e.to_string())]);
            return vec![Action::Reply(Packet::reply(pkt.id, ERR_NONE, payload))];
        }
    };
    let mut answer: Vec<Chunk> = Vec::new();
    let mut after: Vec<Packet> = Vec::new();
    let mut no_reply = false;
    let document = cfg.layout == DdmLayout::Document;
    for c in &chunks {
        let first = c.data.first().copied();
        if &c.ty == b"THST" {
            let interval = c.reader().u4().ok();
            shared.with(|s| s.thst_requests.push(interval));
        }
        if let Some((code, msg)) = shared.read(|s| s.fail_chunks.get(&c.ty).cloned()) {
            answer.push(fail_chunk(code, &msg));
            continue;
        }
        if document && !super::document::knows(&c.ty) {
            // The document: unknown types get an empty answer.
            continue;
        }
        match &c.ty {
            b"HELO" => {
                shared.with(|s| s.helo_count += 1);
                let helo = Helo {
                    version: 1,
                    pid: cfg.pid,
                    vm_ident: cfg.vm_ident.clone(),
                    app_name: cfg.app_name.clone(),
                    modern: cfg.helo_modern.clone(),
                    modern_fields: cfg.helo_modern_fields,
                };
                answer.push(Chunk::new(b"HELO", helo.encode()));
            }
            b"FEAT" => answer.push(Chunk::new(b"FEAT", feat_payload(&cfg.features))),
            b"DBGD" => {
                shared.with(|s| s.dbgd_count += 1);
                no_reply |= cfg.dbgd_reply == DbgdReply::NoReply;
            }
            // The design says THCR may precede the THEN reply; we send them after it.
            b"THEN" if first.unwrap_or(1) != 0 => {
                for t in &cfg.threads {
                    after.push(conn.ddm_packet(&[Chunk::new(b"THCR", thcr_payload(t.ddm_id, &t.name))]));
                }
            }
            b"THST" if document => answer.extend(super::document::thst_request(shared, conn, &c.data)),
            b"THST" => after.push(conn.ddm_packet(&[Chunk::new(b"THST", thst_payload(&live_thst_entries(shared)))])),
            b"HPIF" => match first.unwrap_or(1) {
                1 => answer.push(Chunk::new(b"HPIF", hpif_payload(&[heap_info(1)]))),
                when => shared.with(|s| s.hpif_when = when),
            },
            b"HPSG" | b"NHSG" => {
                let req = HeapRequest { ty: c.ty, when: first.unwrap_or(0), what: c.data.get(1).copied().unwrap_or(0) };
                shared.with(|s| {
                    if &c.ty == b"HPSG" {
                        s.hpsg = (req.when, req.what);
                    } else {
                        s.nhsg = (req.when, req.what);
                    }
                    s.heap_requests.push(req);
                });
            }
            b"HPGC" => after.extend(gc_output(shared, conn)),
            b"EXIT" => {
                let status = c.reader().u4().unwrap_or(0);
                shared.with(|s| s.exit_status = Some(status));
                // The VM halts: no reply, the connection drops.
                return vec![Action::Close];
            }
            // The design: unknown types get an empty answer.
            _ => {}
        }
    }
    let mut actions = Vec::new();
    if !((no_reply || cfg.silent_empty_ddm) && answer.is_empty()) {
        actions.push(Action::Reply(Packet::reply(pkt.id, ERR_NONE, encode_chunks(&answer))));
    }
    actions.extend(after.into_iter().map(Action::Send));
    actions
}

/// What a GC makes the VM send: HPIF when asked for "next/every GC", then the Java heap
/// (HPST, HPSG or HPSO pieces, HPEN) and native heap (NHST, NHSG, NHEN) when enabled.
fn gc_output(shared: &Shared, conn: &Conn) -> Vec<Packet> {
    let (hpif_when, hpsg, nhsg) = shared.with(|s| {
        s.gc_count += 1;
        let w = s.hpif_when;
        if w == 2 {
            s.hpif_when = 0;
        }
        (w, s.hpsg, s.nhsg)
    });
    let mut out = Vec::new();
    if hpif_when == 2 || hpif_when == 3 {
        out.push(conn.ddm_packet(&[Chunk::new(b"HPIF", hpif_payload(&[heap_info(hpif_when)]))]));
    }
    let id_chunk = |ty: &[u8; 4], heap: u32| Chunk::new(ty, heap.to_be_bytes().to_vec());
    if hpsg.0 != 0 {
        let seg_ty = if hpsg.1 == 1 { b"HPSO" } else { b"HPSG" };
        out.push(conn.ddm_packet(&[id_chunk(b"HPST", HEAP_ID)]));
        for p in java_heap_pieces() {
            out.push(conn.ddm_packet(&[Chunk::new(seg_ty, p.encode())]));
        }
        out.push(conn.ddm_packet(&[id_chunk(b"HPEN", HEAP_ID)]));
    }
    if nhsg.0 != 0 {
        out.push(conn.ddm_packet(&[id_chunk(b"NHST", NATIVE_HEAP_ID)]));
        for p in native_heap_pieces() {
            out.push(conn.ddm_packet(&[Chunk::new(b"NHSG", p.encode())]));
        }
        out.push(conn.ddm_packet(&[id_chunk(b"NHEN", NATIVE_HEAP_ID)]));
    }
    out
}
