use proptest::prelude::*;

use super::*;

/// Hostile strings, what a table shows of them, and what the text log writes.
const TABLE: &[(&str, &str, &str)] = &[
    ("plain Main", "plain Main", "plain Main"),
    ("é ü 日本 🙂", "é ü 日本 🙂", "é ü 日本 🙂"),
    ("title \x1b]0;owned\x07", "title ?]0;owned?", "title \\x1b]0;owned\\x07"),
    ("clear \x1b[2J\x1b[H", "clear ?[2J?[H", "clear \\x1b[2J\\x1b[H"),
    ("forged\n2026-01-01T00:00:00Z  INFO x", "forged?2026-01-01T00:00:00Z  INFO x", "forged\\n2026-01-01T00:00:00Z  INFO x"),
    ("over\rwrite", "over?write", "over\\rwrite"),
    ("nul\0byte", "nul?byte", "nul\\x00byte"),
    ("tab\tcolumn", "tab?column", "tab\\tcolumn"),
    ("bs\x08 ff\x0c vt\x0b", "bs? ff? vt?", "bs\\x08 ff\\x0c vt\\x0b"),
    ("del\x7f", "del?", "del\\x7f"),
    ("c1 csi \u{9b}31m nel \u{85} st \u{9c}", "c1 csi ?31m nel ? st ?", "c1 csi \\u{9b}31m nel \\u{85} st \\u{9c}"),
    ("invoice_\u{202e}fdp.exe", "invoice_?fdp.exe", "invoice_\\u{202e}fdp.exe"),
    ("\u{202a}\u{202b}\u{202c}\u{202d}", "????", "\\u{202a}\\u{202b}\\u{202c}\\u{202d}"),
    ("iso \u{2066}a\u{2067}b\u{2068}c\u{2069}", "iso ?a?b?c?", "iso \\u{2066}a\\u{2067}b\\u{2068}c\\u{2069}"),
    ("marks \u{200e}\u{200f}\u{61c}", "marks ???", "marks \\u{200e}\\u{200f}\\u{61c}"),
    ("line\u{2028}para\u{2029}", "line?para?", "line\\u{2028}para\\u{2029}"),
    // Neighbours of the ranges stay: they draw as characters.
    ("\u{7e}\u{a0}\u{2029}\u{202f}\u{2065}\u{206a}", "~\u{a0}?\u{202f}\u{2065}\u{206a}", "~\u{a0}\\u{2029}\u{202f}\u{2065}\u{206a}"),
    ("back\\slash", "back\\slash", "back\\slash"),
    ("", "", ""),
];

#[test]
fn hostile_strings_are_shown_and_escaped() {
    for &(raw, table, log) in TABLE {
        assert_eq!(shown(raw), table, "shown({raw:?})");
        assert_eq!(Shown(raw).to_string(), table, "Shown({raw:?})");
        assert_eq!(raw.chars().count(), table.chars().count(), "one column per character: {raw:?}");
        let mut escaped = String::new();
        write_escaped(&mut escaped, raw).unwrap();
        assert_eq!(escaped, log, "write_escaped({raw:?})");
        // In a JSON log line the string is exact once decoded, and no hostile character
        // is left in the line but its end.
        let line = format!("{{\"vm_name\":{}}}\n", serde_json::to_string(raw).unwrap());
        let safe = String::from_utf8(escape_json_line(line.as_bytes()).into_owned()).unwrap();
        assert!(!safe[..safe.len() - 1].chars().any(is_hostile), "{safe:?}");
        let v: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(v["vm_name"], raw, "{safe:?}");
    }
}

#[test]
fn clean_text_is_borrowed() {
    assert!(matches!(shown("com.example.Main"), Cow::Borrowed(_)));
    assert!(matches!(shown_lines("a\nb\n"), Cow::Borrowed(_)));
    assert!(matches!(escape_json_line(b"{\"a\":\"\\u001b\"}\n"), Cow::Borrowed(_)));
}

#[test]
fn blocks_keep_their_lines_only() {
    assert_eq!(shown_lines("NAME  STATE\nmain\x1b[2J  running\r\n"), "NAME  STATE\nmain?[2J  running?\n");
}

#[test]
fn every_control_character_is_hostile() {
    // The list covers at least what Unicode calls controls (Cc) and the bidi formatting
    // characters; other format characters (Cf, e.g. U+00AD) draw or vanish harmlessly.
    for c in (0..=0x3000u32).filter_map(char::from_u32) {
        if c.is_control() {
            assert!(is_hostile(c), "{:x}", u32::from(c));
        }
    }
    assert!(!is_hostile(' ') && !is_hostile('?') && !is_hostile('\u{ad}'));
}

proptest! {
    #[test]
    fn any_text_is_made_inert(s in any::<String>()) {
        let t = shown(&s);
        prop_assert!(!t.chars().any(is_hostile));
        prop_assert_eq!(t.chars().count(), s.chars().count());
        prop_assert_eq!(t.as_ref(), Shown(&s).to_string());
        let mut e = String::new();
        write_escaped(&mut e, &s).unwrap();
        prop_assert!(!e.chars().any(is_hostile));
        let line = format!("{}\n", serde_json::to_string(&s).unwrap());
        let j = String::from_utf8(escape_json_line(line.as_bytes()).into_owned()).unwrap();
        prop_assert!(!j.trim_end_matches('\n').chars().any(is_hostile));
        prop_assert_eq!(serde_json::from_str::<String>(&j).unwrap(), s);
    }
}
