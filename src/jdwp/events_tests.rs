use proptest::prelude::*;

use super::kind::*;
use super::*;
use crate::jdwp::reader::put_id;

const HOTSPOT: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
/// Odd sizes, so a field read with the wrong size shows.
const ODD: IdSizes = IdSizes { field: 3, method: 5, object: 4, reference_type: 6, frame: 2 };

/// Writes one event of `kind` the way a VM does, with `thread` and filler for the other fields.
fn event(kind: u8, request: u32, thread: u64, s: &IdSizes, text: &str) -> Vec<u8> {
    let mut d = vec![kind];
    d.extend_from_slice(&request.to_be_bytes());
    let location = |d: &mut Vec<u8>| {
        d.push(1);
        put_id(d, 0x77, s.reference_type);
        put_id(d, 0x55, s.method);
        d.extend_from_slice(&9u64.to_be_bytes());
    };
    let string = |d: &mut Vec<u8>| {
        d.extend_from_slice(&(text.len() as u32).to_be_bytes());
        d.extend_from_slice(text.as_bytes());
    };
    let tagged_object = |d: &mut Vec<u8>| {
        d.push(b'L');
        put_id(d, 0x42, s.object);
    };
    if kind == CLASS_UNLOAD {
        string(&mut d);
        return d;
    }
    if kind == VM_DEATH {
        return d;
    }
    put_id(&mut d, thread, s.object);
    match kind {
        SINGLE_STEP | BREAKPOINT | METHOD_ENTRY | METHOD_EXIT => location(&mut d),
        METHOD_EXIT_WITH_RETURN_VALUE => {
            location(&mut d);
            d.push(b'J');
            d.extend_from_slice(&7u64.to_be_bytes());
        }
        EXCEPTION => {
            location(&mut d);
            tagged_object(&mut d);
            location(&mut d);
        }
        CLASS_PREPARE => {
            d.push(1);
            put_id(&mut d, 0x66, s.reference_type);
            string(&mut d);
            d.extend_from_slice(&7u32.to_be_bytes());
        }
        FIELD_ACCESS | FIELD_MODIFICATION => {
            location(&mut d);
            d.push(1);
            put_id(&mut d, 0x66, s.reference_type);
            put_id(&mut d, 0x44, s.field);
            tagged_object(&mut d);
            if kind == FIELD_MODIFICATION {
                d.push(b's');
                put_id(&mut d, 0x43, s.object);
            }
        }
        MONITOR_CONTENDED_ENTER | MONITOR_CONTENDED_ENTERED | MONITOR_WAIT | MONITOR_WAITED => {
            tagged_object(&mut d);
            location(&mut d);
            if kind == MONITOR_WAIT {
                d.extend_from_slice(&1000u64.to_be_bytes());
            } else if kind == MONITOR_WAITED {
                d.push(1);
            }
        }
        _ => {}
    }
    d
}

fn composite(policy: u8, events: &[Vec<u8>]) -> Vec<u8> {
    let mut d = vec![policy];
    d.extend_from_slice(&(events.len() as u32).to_be_bytes());
    events.iter().for_each(|e| d.extend_from_slice(e));
    d
}

const KINDS: [u8; 18] = [
    SINGLE_STEP, BREAKPOINT, EXCEPTION, THREAD_START, THREAD_DEATH, CLASS_PREPARE, CLASS_UNLOAD, FIELD_ACCESS,
    FIELD_MODIFICATION, METHOD_ENTRY, METHOD_EXIT, METHOD_EXIT_WITH_RETURN_VALUE, MONITOR_CONTENDED_ENTER,
    MONITOR_CONTENDED_ENTERED, MONITOR_WAIT, MONITOR_WAITED, VM_START, VM_DEATH,
];

#[test]
fn every_kind_is_read_to_its_end_with_its_thread() {
    for sizes in [HOTSPOT, ODD] {
        let evs: Vec<Vec<u8>> = KINDS.iter().enumerate().map(|(i, k)| event(*k, i as u32 + 1, 0x1000 + i as u64, &sizes, "LMain;")).collect();
        let data = composite(suspend::ALL, &evs);
        let c = parse_composite(&data, &sizes).unwrap();
        assert_eq!(c.suspend_policy, suspend::ALL);
        assert_eq!(c.events.len(), KINDS.len());
        for (i, (e, k)) in c.events.iter().zip(KINDS).enumerate() {
            assert_eq!((e.kind, e.request_id), (k, i as u32 + 1));
            assert_eq!(&data[e.range.clone()], &evs[i][..], "bytes of {k}");
            let has_thread = !matches!(k, CLASS_UNLOAD | VM_DEATH);
            assert_eq!(e.thread, has_thread.then_some(0x1000 + i as u64), "thread of {k}");
        }
        assert_eq!(encode_composite(c.suspend_policy, &data, &c.events), data, "all events re-encode to the same bytes");
    }
}

#[test]
fn a_part_holds_only_its_events_in_order_with_the_vms_policy() {
    let evs = [event(BREAKPOINT, 5, 1, &HOTSPOT, ""), event(SINGLE_STEP, 6, 1, &HOTSPOT, ""), event(METHOD_ENTRY, 7, 1, &HOTSPOT, "")];
    let data = composite(suspend::EVENT_THREAD, &evs);
    let c = parse_composite(&data, &HOTSPOT).unwrap();
    let part = encode_composite(c.suspend_policy, &data, [&c.events[0], &c.events[2]]);
    let back = parse_composite(&part, &HOTSPOT).unwrap();
    assert_eq!(back.suspend_policy, suspend::EVENT_THREAD);
    assert_eq!(back.events.iter().map(|e| e.request_id).collect::<Vec<_>>(), vec![5, 7]);
}

#[test]
fn malformed_composites_are_errors_not_panics() {
    let ok = composite(0, &[event(BREAKPOINT, 1, 1, &HOTSPOT, "")]);
    for cut in 0..ok.len() {
        assert!(parse_composite(&ok[..cut], &HOTSPOT).is_err(), "cut at {cut}");
    }
    let mut trailing = ok.clone();
    trailing.push(0);
    assert_eq!(parse_composite(&trailing, &HOTSPOT), Err(EventError::Trailing(1)));
    let unknown = composite(0, &[vec![3, 0, 0, 0, 1]]);
    assert_eq!(parse_composite(&unknown, &HOTSPOT), Err(EventError::UnknownKind(3)));
    let many = [0, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(parse_composite(&many, &HOTSPOT), Err(EventError::TooMany(u32::MAX)));
    assert_eq!(first_event(&ok), Some((0, BREAKPOINT, 1)));
    assert_eq!(first_event(&ok[..7]), None);
}

#[test]
fn id_sizes_round_trip_and_reject_nonsense() {
    assert_eq!(IdSizes::parse(&ODD.encode()), Some(ODD));
    let mut bad = HOTSPOT.encode();
    bad[11] = 9;
    assert_eq!(IdSizes::parse(&bad), None);
    assert_eq!(IdSizes::parse(&bad[..12]), None);
}

proptest! {
    /// Any sequence of events, with any id sizes: every event is found where it was written,
    /// and any subset re-encodes to a composite that reads back as that subset.
    #[test]
    fn composites_split_and_read_back(
        picks in prop::collection::vec((0usize..KINDS.len(), any::<u32>(), any::<u64>(), "[a-zA-Z;/]{0,12}", any::<bool>()), 0..12),
        sizes in (1usize..=8, 1usize..=8, 1usize..=8, 1usize..=8, 1usize..=8),
        policy in 0u8..3,
    ) {
        let s = IdSizes { field: sizes.0, method: sizes.1, object: sizes.2, reference_type: sizes.3, frame: sizes.4 };
        let mask = if s.object == 8 { u64::MAX } else { (1u64 << (8 * s.object)) - 1 };
        let evs: Vec<Vec<u8>> = picks.iter().map(|(k, r, t, text, _)| event(KINDS[*k], *r, *t & mask, &s, text)).collect();
        let data = composite(policy, &evs);
        let c = parse_composite(&data, &s).unwrap();
        prop_assert_eq!(c.events.len(), evs.len());
        let keep: Vec<&Event> = c.events.iter().zip(&picks).filter(|(_, p)| p.4).map(|(e, _)| e).collect();
        let part = encode_composite(policy, &data, keep.iter().copied());
        let back = parse_composite(&part, &s).unwrap();
        prop_assert_eq!(back.events.len(), keep.len());
        for (b, k) in back.events.iter().zip(keep) {
            prop_assert_eq!((b.kind, b.request_id, b.thread), (k.kind, k.request_id, k.thread));
            prop_assert_eq!(&part[b.range.clone()], &data[k.range.clone()]);
        }
    }

    #[test]
    fn any_bytes_parse_without_panicking(data in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_composite(&data, &HOTSPOT);
        let _ = parse_composite(&data, &ODD);
        let _ = first_event(&data);
    }
}
