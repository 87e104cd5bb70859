//! When a process on this machine started: the 22nd field of /proc/PID/stat, in clock ticks
//! since boot. The current VM by default is the newest JVM (`Registry::current`).

/// The start time in a /proc/PID/stat line. The command name (2nd field) is in parentheses
/// and may itself hold spaces and parentheses: the fields are counted after its last `)`.
pub(super) fn start_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // After the name: state (3rd field) ... starttime (22nd).
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// When process `pid` started, if it runs (and /proc shows it).
pub(super) fn of_pid(pid: u32) -> Option<u64> {
    start_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_22nd_field_counted_after_the_command_name() {
        let line = "4242 (java) S 1 4242 4242 0 -1 4194560 123 0 0 0 50 7 0 0 20 0 31 0 987654 4000000000 30000 18446744073709551615 1 1 0 0 0 0 0 4096 16796879 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(start_ticks(line), Some(987654));
        // A name with spaces and a `)` of its own.
        let odd = "7 (my ) app) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0";
        assert_eq!(start_ticks(odd), Some(555));
        assert_eq!(start_ticks("7 (java) S 1 2 3"), None);
        assert_eq!(start_ticks("garbage"), None);
    }

    #[test]
    fn this_process_started_before_a_child_it_starts() {
        let me = of_pid(std::process::id()).expect("our own start");
        let mut child = std::process::Command::new("sleep").arg("5").spawn().expect("sleep runs");
        let started = of_pid(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(started.is_some_and(|c| c >= me), "{started:?} after {me}");
        assert_eq!(of_pid(u32::MAX), None);
    }
}
