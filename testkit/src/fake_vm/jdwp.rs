//! The fake VM's packet dispatch and its JDWP command handlers (VirtualMachine, ThreadReference,
//! EventRequest), keeping suspend counts and event requests the way a real VM does.

use std::sync::Arc;

use super::super::wire::*;
use super::state::{Conn, EventRequestRecord, Shared};

/// What a handled packet makes the connection do, in order.
pub(super) enum Action {
    /// The reply to the packet being handled (subject to the configured reply delay).
    Reply(Packet),
    /// A VM-originated packet sent right away.
    Send(Packet),
    Close,
}

const ERR_ILLEGAL_ARGUMENT: u16 = 103;

/// Out-of-range numbers that crash HotSpot: tests assert the proxy never sends them.
fn is_forbidden(set: u8, cmd: u8) -> bool {
    (set >= 0x80 && set != DDM_SET) || cmd == 0 || cmd >= 0x80
}

pub(super) fn handle_packet(shared: &Arc<Shared>, conn: &Arc<Conn>, pkt: Packet) -> Vec<Action> {
    shared.with(|s| {
        s.received.push(pkt.clone());
        s.received_on.push(conn.id);
    });
    let (set, cmd) = match pkt.kind {
        Kind::Reply { error } => {
            // HotSpot drops a debugger that sends it a reply.
            let msg = format!("reply packet from the debugger side: id {} error {error}", pkt.id);
            shared.with(|s| s.protocol_errors.push(msg));
            return vec![Action::Close];
        }
        Kind::Command { set, cmd } => (set, cmd),
    };
    if is_forbidden(set, cmd) {
        shared.with(|s| s.forbidden.push(pkt.clone()));
        return vec![Action::Reply(Packet::reply(pkt.id, ERR_NOT_IMPLEMENTED, vec![]))];
    }
    if set == DDM_SET {
        if shared.cfg.ddm_aware && cmd == DDM_CMD {
            return super::ddm::handle_ddm(shared, conn, &pkt);
        }
        return vec![Action::Reply(Packet::reply(pkt.id, ERR_NOT_IMPLEMENTED, vec![]))];
    }
    handle_jdwp(shared, &pkt, set, cmd)
}

fn ok(id: u32, data: Vec<u8>) -> Vec<Action> {
    vec![Action::Reply(Packet::reply(id, ERR_NONE, data))]
}

fn err(id: u32, code: u16) -> Vec<Action> {
    vec![Action::Reply(Packet::reply(id, code, vec![]))]
}

fn handle_jdwp(shared: &Shared, pkt: &Packet, set: u8, cmd: u8) -> Vec<Action> {
    let id = pkt.id;
    let cfg = &shared.cfg;
    match (set, cmd) {
        (SET_VM, VM_VERSION) => {
            let mut d = Vec::new();
            let description = cfg.version_description.clone();
            put_jdwp_string(&mut d, &description.unwrap_or_else(|| format!("Fake VM for jdwpmux tests ({})", cfg.vm_name)));
            d.put_u32(1);
            d.put_u32(8);
            put_jdwp_string(&mut d, "0.0-fake");
            put_jdwp_string(&mut d, &cfg.vm_name);
            ok(id, d)
        }
        (SET_VM, VM_ID_SIZES) => {
            let mut d = Vec::new();
            (0..5).for_each(|_| d.put_u32(8));
            ok(id, d)
        }
        (SET_VM, VM_ALL_THREADS) => {
            let mut d = Vec::new();
            d.put_u32(cfg.threads.len() as u32);
            cfg.threads.iter().for_each(|t| d.put_u64(t.id));
            ok(id, d)
        }
        (SET_VM, VM_SUSPEND) => {
            shared.with(|s| s.suspend_all());
            ok(id, vec![])
        }
        (SET_VM, VM_RESUME) => {
            shared.with(|s| s.resume_all());
            ok(id, vec![])
        }
        (SET_VM, VM_DISPOSE) => {
            shared.with(|s| s.reset_debugger());
            vec![Action::Reply(Packet::reply(id, ERR_NONE, vec![])), Action::Close]
        }
        (SET_THREAD, THREAD_SUSPEND | THREAD_RESUME | THREAD_SUSPEND_COUNT) => thread_cmd(shared, pkt, cmd),
        (SET_OBJECT, OBJECT_DISABLE_COLLECTION | OBJECT_ENABLE_COLLECTION) => {
            let Ok(object) = pkt.reader().u8() else { return err(id, ERR_INVALID_OBJECT) };
            shared.with(|s| {
                let n = s.pins.entry(object).or_default();
                if cmd == OBJECT_DISABLE_COLLECTION {
                    *n += 1;
                } else {
                    *n = n.saturating_sub(1);
                }
                if *n == 0 {
                    s.pins.remove(&object);
                }
            });
            ok(id, vec![])
        }
        (SET_EVENT_REQUEST, ER_SET) => {
            let mut r = pkt.reader();
            let (Ok(kind), Ok(suspend_policy)) = (r.u1(), r.u1()) else {
                return err(id, ERR_ILLEGAL_ARGUMENT);
            };
            let modifiers = r.rest().to_vec();
            let req_id = shared.with(|s| {
                let req_id = s.next_request_id;
                s.next_request_id += 1;
                s.event_requests.push(EventRequestRecord { kind, id: req_id, suspend_policy, modifiers });
                req_id
            });
            ok(id, req_id.to_be_bytes().to_vec())
        }
        (SET_EVENT_REQUEST, ER_CLEAR) => {
            let mut r = pkt.reader();
            let (Ok(kind), Ok(req_id)) = (r.u1(), r.u4()) else {
                return err(id, ERR_ILLEGAL_ARGUMENT);
            };
            // Like HotSpot, clearing an unknown request is not an error.
            shared.with(|s| s.event_requests.retain(|e| !(e.kind == kind && e.id == req_id)));
            match cfg.clear_error {
                Some(code) => err(id, code),
                None => ok(id, vec![]),
            }
        }
        (SET_EVENT_REQUEST, ER_CLEAR_ALL_BREAKPOINTS) => {
            shared.with(|s| s.event_requests.retain(|e| e.kind != KIND_BREAKPOINT));
            ok(id, vec![])
        }
        // ReferenceType.SourceDebugExtension: as HotSpot answers for a class without an SMAP.
        (2, 12) => err(id, ERR_ABSENT_INFORMATION),
        _ => err(id, ERR_NOT_IMPLEMENTED),
    }
}

fn thread_cmd(shared: &Shared, pkt: &Packet, cmd: u8) -> Vec<Action> {
    let Some(idx) = pkt.reader().u8().ok().and_then(|t| shared.thread_index(t)) else {
        return err(pkt.id, ERR_INVALID_THREAD);
    };
    let count = shared.with(|s| {
        // Index is valid: thread_suspend is parallel to the configured threads.
        let c = &mut s.thread_suspend[idx];
        match cmd {
            THREAD_SUSPEND => *c += 1,
            THREAD_RESUME => *c = c.saturating_sub(1),
            _ => {}
        }
        *c
    });
    let data = if cmd == THREAD_SUSPEND_COUNT { count.to_be_bytes().to_vec() } else { vec![] };
    ok(pkt.id, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_numbers() {
        let table = [
            (1, 1, false),
            (DDM_SET, 1, false),
            (64, 100, false),
            (0x80, 1, true),
            (0xFF, 1, true),
            (1, 0, true),
            (1, 0x80, true),
            (DDM_SET, 0, true),
        ];
        for (set, cmd, want) in table {
            assert_eq!(is_forbidden(set, cmd), want, "({set}, {cmd})");
        }
    }
}
