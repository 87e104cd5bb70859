//! Parsers for the payloads adb sends (device lists, pid lists) and the pid-set diff that
//! turns two successive `track-jdwp` lists into VM added/removed events. Pure functions.

use std::collections::BTreeSet;

use super::AdbError;

/// How much of an offending line an error keeps (lines come from the network).
const MAX_QUOTED_LINE: usize = 80;

/// One line of a device list: the serial and the state string exactly as adb sent it
/// ("device", "offline", "unauthorized", "recovery", ...). Only "device" can be debugged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceEntry {
    pub serial: String,
    pub state: String,
}

impl DeviceEntry {
    /// True when adb can open services on the device (state "device").
    pub fn is_online(&self) -> bool {
        self.state == ONLINE_STATE
    }
}

/// The state adb reports for a device that is connected and authorized.
pub const ONLINE_STATE: &str = "device";

/// What changed between two pid lists of one device, both sorted ascending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PidDiff {
    pub added: Vec<u32>,
    pub removed: Vec<u32>,
}

fn quote(line: &str) -> String {
    line.chars().take(MAX_QUOTED_LINE).collect()
}

fn as_text(payload: &[u8]) -> Result<&str, AdbError> {
    std::str::from_utf8(payload).map_err(|e| AdbError::NotText { offset: e.valid_up_to() })
}

/// Parses `serial<TAB>state` lines (`host:devices`, `host:track-devices`). Lines of
/// `host:devices-l` (`serial<spaces>state key:value...`) parse too, keeping the first word
/// after the serial as the state; extra fields are ignored.
/// Blank lines are skipped; a line without a state is an error.
pub fn parse_devices(payload: &[u8]) -> Result<Vec<DeviceEntry>, AdbError> {
    let text = as_text(payload)?;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let (serial, state) = match line.split_once('\t') {
            // The tab form keeps the whole state: adb writes e.g. "no permissions (...)".
            Some((serial, rest)) => (serial.trim(), rest.trim()),
            None => {
                let trimmed = line.trim_start();
                let cut = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
                let (serial, rest) = trimmed.split_at(cut);
                (serial, rest.split_whitespace().next().unwrap_or(""))
            }
        };
        if serial.is_empty() || state.is_empty() {
            return Err(AdbError::BadDeviceLine(quote(line)));
        }
        out.push(DeviceEntry { serial: serial.to_owned(), state: state.to_owned() });
    }
    Ok(out)
}

/// Parses a `track-jdwp` list: one decimal pid per line. Blank lines are skipped; anything
/// else (signs, hex, zero, overflow) is an error.
pub fn parse_pids(payload: &[u8]) -> Result<BTreeSet<u32>, AdbError> {
    let text = as_text(payload)?;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        // Digits only: u32's FromStr would also take a leading '+'.
        let pid = if t.bytes().all(|b| b.is_ascii_digit()) { t.parse::<u32>().ok() } else { None };
        match pid {
            Some(pid) if pid > 0 => {
                out.insert(pid);
            }
            _ => return Err(AdbError::BadPid(quote(line))),
        }
    }
    Ok(out)
}

/// Pids only in `new` are added, pids only in `old` removed; both lists ascending.
pub fn diff_pids(old: &BTreeSet<u32>, new: &BTreeSet<u32>) -> PidDiff {
    PidDiff { added: new.difference(old).copied().collect(), removed: old.difference(new).copied().collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(serial: &str, state: &str) -> DeviceEntry {
        DeviceEntry { serial: serial.into(), state: state.into() }
    }

    fn set(pids: &[u32]) -> BTreeSet<u32> {
        pids.iter().copied().collect()
    }

    #[test]
    fn device_lists() {
        let cases: &[(&str, Vec<DeviceEntry>)] = &[
            ("", vec![]),
            ("\n\n", vec![]),
            ("emulator-5554\tdevice\n", vec![dev("emulator-5554", "device")]),
            (
                "a\tdevice\nb\toffline\r\n\nc\tunauthorized",
                vec![dev("a", "device"), dev("b", "offline"), dev("c", "unauthorized")],
            ),
            (
                "0123456789ABCDEF       device usb:1-1 product:x model:Y transport_id:3\n",
                vec![dev("0123456789ABCDEF", "device")],
            ),
            ("192.168.1.5:5555\tno permissions (udev)\n", vec![dev("192.168.1.5:5555", "no permissions (udev)")]),
        ];
        for (text, want) in cases {
            let got = parse_devices(text.as_bytes());
            assert_eq!(got.as_ref().ok(), Some(want), "input {text:?}: {got:?}");
        }
        assert!(dev("x", "device").is_online());
        assert!(!dev("x", "offline").is_online());
    }

    #[test]
    fn bad_device_lines() {
        for text in ["lonely-serial\n", "\tdevice\n", "ok\tdevice\nbroken\t\n"] {
            assert!(matches!(parse_devices(text.as_bytes()), Err(AdbError::BadDeviceLine(_))), "{text:?}");
        }
        assert!(matches!(parse_devices(b"a\t\xffdevice"), Err(AdbError::NotText { offset: 2 })));
    }

    #[test]
    fn pid_lists() {
        let ok: &[(&str, &[u32])] =
            &[("", &[]), ("1234\n", &[1234]), ("42\n7\n\n42\r\n 99 \n", &[7, 42, 99]), ("4294967295", &[u32::MAX])];
        for (text, want) in ok {
            assert_eq!(parse_pids(text.as_bytes()).ok(), Some(set(want)), "{text:?}");
        }
        for text in ["+5\n", "-1", "0", "0x10", "12a", "4294967296", "1 2"] {
            assert!(matches!(parse_pids(text.as_bytes()), Err(AdbError::BadPid(_))), "{text:?}");
        }
    }

    /// old, new, expected added, expected removed.
    type DiffCase = (&'static [u32], &'static [u32], &'static [u32], &'static [u32]);

    #[test]
    fn pid_diffs() {
        let cases: &[DiffCase] = &[
            (&[], &[], &[], &[]),
            (&[], &[3, 1], &[1, 3], &[]),
            (&[1, 3], &[], &[], &[1, 3]),
            (&[1, 2, 3], &[2, 3, 4], &[4], &[1]),
            (&[5], &[5], &[], &[]),
        ];
        for (old, new, added, removed) in cases {
            let d = diff_pids(&set(old), &set(new));
            assert_eq!((d.added.as_slice(), d.removed.as_slice()), (*added, *removed), "{old:?} -> {new:?}");
        }
    }
}
