//! Writer behaviour: drops when the queue is full, start errors, size limit, write errors.

use super::*;

#[tokio::test]
async fn full_channel_drops_are_counted() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let opts = CaptureOptions {
        channel_capacity: 2,
        ..CaptureOptions::default()
    };
    let h =
        Capture::start(dir.path().join("d.jsonl"), None, opts).unwrap_or_else(|e| panic!("{e}"));
    let c = conn(1, Leg::Debugger, 1, 2);
    // The current-thread runtime cannot run the writer until we await: exactly 2 fit.
    for _ in 0..10 {
        h.record(Record::Open {
            time: SystemTime::now(),
            conn: c.clone(),
        });
    }
    assert_eq!(h.clone().dropped(), 8);
    let summary = h.close().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((summary.records_written, summary.dropped), (2, 8));
    assert!(matches!(h.close().await, Err(CaptureError::AlreadyClosed)));
}

#[tokio::test]
async fn start_errors_are_reported_at_once() {
    let bad = Capture::start(
        "/nonexistent-dir-for-jdwpmux/x.pcapng",
        None,
        CaptureOptions::default(),
    );
    assert!(matches!(bad, Err(CaptureError::Create { .. })), "{bad:?}");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let unknown = Capture::start(dir.path().join("x.txt"), None, CaptureOptions::default());
    assert!(matches!(unknown, Err(CaptureError::UnknownFormat(_))));
    let tiny = Capture::start(
        dir.path().join("x.jsonl"),
        None,
        CaptureOptions {
            snaplen: 10,
            ..CaptureOptions::default()
        },
    );
    assert!(matches!(tiny, Err(CaptureError::Snaplen(10))));
    assert!(matches!("pcap".parse::<Format>(), Ok(Format::Pcapng)));
    assert!(matches!(
        "xml".parse::<Format>(),
        Err(CaptureError::UnknownFormatName(_))
    ));
}

#[test]
fn start_outside_a_runtime_is_an_error() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = Capture::start(dir.path().join("x.jsonl"), None, CaptureOptions::default());
    assert!(matches!(r, Err(CaptureError::NoRuntime)));
}

#[tokio::test]
async fn max_bytes_stops_writing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("m.jsonl");
    let opts = CaptureOptions {
        max_bytes: Some(400),
        ..CaptureOptions::default()
    };
    let h = Capture::start(&path, None, opts).unwrap_or_else(|e| panic!("{e}"));
    let s = Session::build();
    for r in &s.records {
        h.record(r.clone());
    }
    let summary = h.close().await.unwrap_or_else(|e| panic!("{e}"));
    let size = std::fs::metadata(&path)
        .map(|m| m.len())
        .unwrap_or(u64::MAX);
    assert!(summary.limit_reached);
    assert!(
        size <= 400 && size == summary.bytes_written && summary.records_written >= 1,
        "{summary:?} size {size}"
    );
}

#[tokio::test]
async fn write_errors_stop_writing_but_not_the_caller() {
    if !Path::new("/dev/full").exists() {
        println!("skipping: /dev/full is not available");
        return;
    }
    let h = Capture::start("/dev/full", Some(Format::Jsonl), CaptureOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let c = conn(1, Leg::Debugger, 1, 2);
    h.record(Record::Open {
        time: SystemTime::now(),
        conn: c.clone(),
    });
    tokio::task::yield_now().await;
    for _ in 0..100 {
        h.record(Record::Close {
            time: SystemTime::now(),
            conn: c.clone(),
        });
    }
    let summary = h.close().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(summary.write_error.is_some(), "{summary:?}");
    assert_eq!(summary.dropped, 0);
}
