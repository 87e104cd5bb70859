//! The Wireshark dissector (contrib/wireshark/jdwp_ddm.lua) names commands, errors and
//! event kinds from a table that must stay equal to src/jdwp/names.rs. Regenerate it with
//! `JDWPMUX_UPDATE_LUA=1 cargo test --lib dissector_names`.

use crate::jdwp::names::{COMMAND_SETS, ERROR_CODES, EVENT_KINDS};

const BEGIN: &str = "-- BEGIN JDWP names: equal to src/jdwp/names.rs (a test checks)\n";
const END: &str = "-- END JDWP names\n";

fn block() -> String {
    let mut s = String::from(BEGIN);
    s.push_str("local COMMAND_SETS = {\n");
    for set in COMMAND_SETS {
        let cmds: Vec<String> = set.commands.iter().map(|(n, name)| format!("[{n}] = \"{name}\"")).collect();
        s.push_str(&format!("  [{}] = {{ \"{}\", {{ {} }} }},\n", set.id, set.name, cmds.join(", ")));
    }
    s.push_str("}\nlocal ERRORS = {\n");
    for (code, name) in ERROR_CODES {
        s.push_str(&format!("  [{code}] = \"{name}\",\n"));
    }
    s.push_str("}\nlocal EVENT_KINDS = {\n");
    for (kind, name) in EVENT_KINDS {
        s.push_str(&format!("  [{kind}] = \"{name}\",\n"));
    }
    s.push_str("}\n");
    s.push_str(END);
    s
}

#[test]
fn the_dissector_names_what_jdwpmux_names() {
    let path = format!("{}/contrib/wireshark/jdwp_ddm.lua", env!("CARGO_MANIFEST_DIR"));
    let lua = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = lua.find(BEGIN).unwrap_or_else(|| panic!("no names block in {path}"));
    let end = lua[start..].find(END).map(|e| start + e + END.len()).unwrap_or_else(|| panic!("no end of the names block"));
    let want = block();
    if lua[start..end] != want && std::env::var_os("JDWPMUX_UPDATE_LUA").is_some() {
        let updated = format!("{}{want}{}", &lua[..start], &lua[end..]);
        std::fs::write(&path, updated).unwrap_or_else(|e| panic!("{path}: {e}"));
        return;
    }
    assert!(lua[start..end] == want, "{path} names are stale: regenerate with JDWPMUX_UPDATE_LUA=1 cargo test --lib dissector_names");
}
