//! Reads a Chrome trace event file the way a viewer does and checks what Perfetto and
//! chrome://tracing need: it parses, every "B" has its "E" on the same track (nested), and
//! timestamps never go back within a track. Used by the trace unit and integration tests.

use std::collections::HashMap;

/// One slice as read back: its track, name, start and end (µs) and merged arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    pub pid: u64,
    pub tid: u64,
    pub name: String,
    pub start: f64,
    pub end: f64,
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// What a trace holds.
#[derive(Debug, Clone, Default)]
pub struct TraceSummary {
    pub slices: Vec<Slice>,
    /// (pid, tid, name, args) of every instant.
    pub instants: Vec<(u64, u64, String, serde_json::Value)>,
    /// Track names by (pid, tid), process names by pid.
    pub threads: HashMap<(u64, u64), String>,
    pub processes: HashMap<u64, String>,
}

pub fn check_trace(text: &str) -> Result<TraceSummary, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let events = v["traceEvents"].as_array().ok_or("no traceEvents array")?;
    let mut out = TraceSummary::default();
    let mut stacks: HashMap<(u64, u64), Vec<Slice>> = HashMap::new();
    let mut last_ts: HashMap<(u64, u64), f64> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let ph = e["ph"].as_str().ok_or(format!("event {i} without ph: {e}"))?;
        let pid = e["pid"].as_u64().ok_or(format!("event {i} without pid: {e}"))?;
        let tid = e["tid"].as_u64().ok_or(format!("event {i} without tid: {e}"))?;
        let track = (pid, tid);
        let name = e["name"].as_str().unwrap_or_default().to_string();
        if ph == "M" {
            let n = e["args"]["name"].as_str().unwrap_or_default().to_string();
            match name.as_str() {
                "process_name" => drop(out.processes.insert(pid, n)),
                "thread_name" => drop(out.threads.insert(track, n)),
                _ => {}
            }
            continue;
        }
        let ts = e["ts"].as_f64().ok_or(format!("event {i} without ts: {e}"))?;
        let last = last_ts.entry(track).or_insert(f64::MIN);
        if ts < *last {
            return Err(format!("event {i} goes back in time on track {track:?}: {ts} after {last}"));
        }
        *last = ts;
        if !out.threads.contains_key(&track) {
            return Err(format!("event {i} on a track with no name: {e}"));
        }
        let args = e["args"].as_object().cloned().unwrap_or_default();
        match ph {
            "B" => stacks.entry(track).or_default().push(Slice { pid, tid, name, start: ts, end: f64::NAN, args }),
            "E" => {
                let mut s = stacks.get_mut(&track).and_then(|s| s.pop()).ok_or(format!("event {i}: an end without a begin on {track:?}"))?;
                s.end = ts;
                s.args.extend(args);
                out.slices.push(s);
            }
            "i" | "I" => out.instants.push((pid, tid, name, serde_json::Value::Object(args))),
            other => return Err(format!("event {i}: unexpected phase {other}")),
        }
    }
    for (track, s) in stacks {
        if let Some(open) = s.first() {
            return Err(format!("slice {:?} on {track:?} never ends", open.name));
        }
    }
    Ok(out)
}
