use super::invoked::{Invoked, STRING_VALUE};
use super::plan::Gathered;
use super::relay::Answers;
use super::Key;
use crate::jdwp::events::{suspend, IdSizes};

const S8: IdSizes = IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 };
const INVOKE: u32 = 70;
const STRING: u64 = 0x5A;
const VALUE: &[u8] = b"\0\0\0\x0fLedger(ann, 0)!";

fn string_key(id: u64) -> Key {
    Key::new(10, 1, id.to_be_bytes().to_vec())
}

fn answers(string: u64) -> Answers {
    Answers { event_id: INVOKE, suspend_policy: suspend::NONE, thread: 0, answers: vec![Gathered { key: string_key(string), reply: VALUE.to_vec() }], absent: vec![] }
}

/// ObjectReference.InvokeMethod's reply: the returned value (tagged) and no exception.
fn invoke_reply(tag: u8, id: u64) -> Vec<u8> {
    [&[tag][..], &id.to_be_bytes(), b"L", &0u64.to_be_bytes()].concat()
}

fn value(i: &Invoked, id: u64) -> Option<Vec<u8>> {
    i.lookup(STRING_VALUE.0, STRING_VALUE.1, &id.to_be_bytes())
}

/// At a stop of every thread, the invoke written and its String's answer arrived (the
/// invoke in flight); its reply not read yet.
fn arrived_at_stop() -> Invoked {
    let mut i = Invoked::default();
    i.event(suspend::ALL, [], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6)]);
    i
}

#[test]
fn the_string_is_served_once_the_invokes_reply_named_it() {
    let mut i = arrived_at_stop();
    assert_eq!(value(&i, STRING), None, "the debugger has not had the invoke's reply yet");
    assert_eq!(i.replied(INVOKE, 0, &invoke_reply(b's', STRING)), None);
    assert_eq!(value(&i, STRING), Some(VALUE.to_vec()));
    assert_eq!(value(&i, STRING), Some(VALUE.to_vec()), "names no object: served again");
    assert_eq!(value(&i, STRING + 1), None, "another string's id: the VM's");
    assert_eq!(i.lookup(9, 1, &STRING.to_be_bytes()), None, "another command on the same id");
    // Reads that allocate nothing keep it (IntelliJ pins what it shows first).
    i.command(71, 9, 7, &STRING.to_be_bytes(), &S8);
    i.command(72, 11, 1, &[0; 8], &S8);
    assert_eq!(value(&i, STRING), Some(VALUE.to_vec()));
}

#[test]
fn an_invoke_that_returned_another_string_or_failed_serves_nothing() {
    for (error, reply) in [(0, invoke_reply(b's', STRING + 1)), (0, invoke_reply(b'L', STRING)), (20, Vec::new()), (0, invoke_reply(b's', STRING)[..5].to_vec())] {
        let mut i = arrived_at_stop();
        i.replied(INVOKE, error, &reply);
        assert_eq!(value(&i, STRING), None, "error {error}, {reply:?}");
        assert_eq!(value(&i, STRING + 1), None);
    }
    // A threw: the value is no String returned.
    let mut i = arrived_at_stop();
    i.replied(INVOKE, 0, &[&[b's'][..], &STRING.to_be_bytes(), b"L", &0x77u64.to_be_bytes()].concat());
    assert_eq!(value(&i, STRING), None);
}

#[test]
fn anything_that_may_run_code_or_allocate_drops_it() {
    // (id, set, cmd): resumes, an invoke, an allocation, a field written, an unknown command.
    for (set, cmd) in [(1, 9), (11, 3), (9, 6), (3, 3), (1, 11), (4, 1), (9, 3), (1, 14), (64, 1)] {
        let mut i = arrived_at_stop();
        i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
        i.command(80, set, cmd, &[0; 8], &S8);
        assert_eq!(value(&i, STRING), None, "({set}, {cmd})");
    }
    let mut i = arrived_at_stop();
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    i.event(suspend::ALL, [], &S8);
    assert_eq!(value(&i, STRING), None, "an event: a thread ran");
}

#[test]
fn only_while_every_thread_is_known_suspended() {
    // A stop of the event's thread alone: the others run and may collect the string.
    let mut i = Invoked::default();
    i.event(suspend::EVENT_THREAD, [], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(!i.serving());
    // A stop of every thread while a Resume was in flight: the VM may handle it after.
    let mut i = Invoked::default();
    i.event(suspend::ALL, [(1, 9)], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(!i.serving());
    // Resumed and suspended by command since the stop: not known (a thread may have started).
    let mut i = Invoked::default();
    i.event(suspend::ALL, [], &S8);
    i.command(60, 1, 9, &[], &S8);
    i.command(61, 1, 8, &[], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(!i.serving());
    // An earlier invoke at the same stop keeps every thread suspended.
    let mut i = Invoked::default();
    i.event(suspend::ALL, [], &S8);
    i.command(60, 9, 6, &[], &S8);
    i.replied(60, 0, &invoke_reply(b'I', 7));
    i.command(INVOKE, 9, 6, &[], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(i.serving());
}

#[test]
fn a_command_in_flight_when_it_came_may_have_run_after_the_reading() {
    let mut i = Invoked::default();
    i.event(suspend::ALL, [], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    i.command(61, 1, 11, &[], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6), (61, 1, 11)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(!i.serving(), "a CreateString in flight allocates");
    let mut i = Invoked::default();
    i.event(suspend::ALL, [], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    i.command(61, 11, 1, &[0; 8], &S8);
    i.arrived(&answers(STRING), S8, [(INVOKE, 9, 6), (61, 11, 1)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(i.serving(), "a read in flight changes nothing");
}

#[test]
fn answers_of_a_stop_or_of_class_data_are_not_taken() {
    let mut i = Invoked::default();
    i.event(suspend::ALL, [], &S8);
    i.command(INVOKE, 9, 6, &[], &S8);
    let mut a = answers(STRING);
    a.suspend_policy = suspend::ALL;
    i.arrived(&a, S8, [(INVOKE, 9, 6)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(!i.serving());
    let mut a = answers(STRING);
    a.answers = vec![Gathered { key: Key::new(2, 14, STRING.to_be_bytes().to_vec()), reply: vec![0; 4] }];
    i.arrived(&a, S8, [(INVOKE, 9, 6)]);
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    assert!(!i.serving());
}

#[test]
fn the_vms_own_reply_where_asked_anyway_is_compared() {
    let mut i = arrived_at_stop();
    i.replied(INVOKE, 0, &invoke_reply(b's', STRING));
    i.command(80, 1, 9, &[], &S8);
    assert!(!i.serving(), "resumed: the debugger's asking goes to the VM");
    i.command(81, 10, 1, &STRING.to_be_bytes(), &S8);
    i.command(82, 10, 1, &STRING.to_be_bytes(), &S8);
    i.command(83, 10, 1, &(STRING + 1).to_be_bytes(), &S8);
    assert_eq!(i.replied(81, 0, VALUE), None, "the same value");
    assert_eq!(i.replied(83, 0, b"\0\0\0\x01x"), None, "another string: nothing to compare");
    let d = i.replied(82, 0, b"\0\0\0\x01x").expect("a difference");
    assert_eq!((d.key, d.answer, d.vm_error, d.vm_reply), (string_key(STRING), VALUE.to_vec(), 0, b"\0\0\0\x01x".to_vec()));
    // Collected after the answer was dropped: the VM's truth, no defect.
    i.command(84, 10, 1, &STRING.to_be_bytes(), &S8);
    assert_eq!(i.replied(84, 20, &[]), None);
}
