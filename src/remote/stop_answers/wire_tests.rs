use super::plan::Gathered;
use super::relay::Answers;
use super::wire::*;
use super::Key;
use proptest::prelude::*;

fn sample() -> Answers {
    Answers {
        event_id: 9,
        suspend_policy: 2,
        thread: 0x51,
        answers: vec![
            Gathered { key: Key::new(11, 1, vec![0, 0, 0, 0, 0, 0, 0, 0x51]), reply: b"\0\0\0\x04main".to_vec() },
            Gathered { key: Key::new(1, 7, vec![]), reply: vec![] },
        ],
        absent: vec![],
    }
}

#[test]
fn answers_round_trip_byte_for_byte() {
    let bytes = encode(&sample()).unwrap();
    assert_eq!(&bytes[..15], &[0, 0, 0, 9, 2, 0, 0, 0, 0, 0, 0, 0, 0x51, 0, 2]);
    assert_eq!(decode(&bytes), Ok(sample()));
}

#[test]
fn what_is_short_long_or_over_the_bounds_is_refused() {
    let bytes = encode(&sample()).unwrap();
    for n in 0..bytes.len() {
        assert!(decode(&bytes[..n]).is_err(), "cut at {n}");
    }
    let mut more = bytes.clone();
    more.push(0);
    assert!(decode(&more).is_err(), "one byte after the answers");
    more.push(0);
    assert_eq!(decode(&more), Err(WireError::Trailing(2)), "an empty absent list is never written");
    let mut many = bytes[..13].to_vec();
    many.extend_from_slice(&((MAX_ANSWERS + 1) as u16).to_be_bytes());
    assert_eq!(decode(&many), Err(WireError::TooMany(MAX_ANSWERS + 1)));
    assert_eq!(decode(&vec![0; MAX_WIRE + 1]), Err(WireError::TooLarge(MAX_WIRE + 1)));
    let mut big = sample();
    big.answers[0].reply = vec![1; MAX_WIRE];
    assert!(matches!(encode(&big), Err(WireError::TooLarge(_))), "the encoder refuses what the decoder would");
    let mut lots = sample();
    lots.answers = vec![lots.answers[1].clone(); MAX_ANSWERS + 1];
    assert_eq!(encode(&lots), Err(WireError::TooMany(MAX_ANSWERS + 1)));
}

#[test]
fn absent_answers_follow_the_answers_and_only_when_there_are_some() {
    let without = encode(&sample()).unwrap();
    let mut a = sample();
    a.absent = vec![Key::new(2, 12, vec![0, 0, 0, 0, 0, 0, 0, 9]), Key::new(6, 5, vec![7; 16])];
    let with = encode(&a).unwrap();
    assert_eq!(&with[..without.len()], &without[..], "protocol 5's payload, then the list");
    assert_eq!(&with[without.len()..without.len() + 4], &[0, 2, 2, 12]);
    assert_eq!(decode(&with), Ok(a.clone()));
    for n in without.len() + 1..with.len() {
        assert!(decode(&with[..n]).is_err(), "cut at {n}");
    }
    a.absent = vec![Key::new(2, 12, vec![]); MAX_ANSWERS + 1];
    assert_eq!(encode(&a), Err(WireError::TooMany(MAX_ANSWERS + 1)));
}

proptest! {
    #[test]
    fn any_bytes_decode_or_are_refused_and_what_decodes_encodes_back(b in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(a) = decode(&b) {
            prop_assert_eq!(encode(&a).unwrap(), b);
        }
    }

    #[test]
    fn any_answers_round_trip(
        ev in any::<u32>(), policy in any::<u8>(), thread in any::<u64>(),
        list in prop::collection::vec((any::<u8>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..40), prop::collection::vec(any::<u8>(), 0..80)), 0..20),
        absent in prop::collection::vec((any::<u8>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..40)), 0..5),
    ) {
        let answers = list.into_iter().map(|(s, c, d, r)| Gathered { key: Key::new(s, c, d), reply: r }).collect();
        let absent = absent.into_iter().map(|(s, c, d)| Key::new(s, c, d)).collect();
        let a = Answers { event_id: ev, suspend_policy: policy, thread, answers, absent };
        prop_assert_eq!(decode(&encode(&a).unwrap()), Ok(a));
    }
}
