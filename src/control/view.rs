//! How `jdwpmux list` prints VMs for people.

use crate::registry::VmInfo;

/// One line per VM under a header; `*` marks the current VM.
pub fn table(vms: &[VmInfo]) -> String {
    let mut rows = vec![[
        "".to_string(),
        "PORT".to_string(),
        "PID".to_string(),
        "APP".to_string(),
        "VM".to_string(),
        "DDM".to_string(),
        "DEBUGGER".to_string(),
        "STATE".to_string(),
        "ADDRESS".to_string(),
    ]];
    for v in vms {
        let s = &v.status;
        let mut app = s.app.clone().unwrap_or_else(|| "-".into());
        if s.waiting_for_debugger {
            app.push_str(" (waiting)");
        }
        rows.push([
            if v.current { "*".into() } else { " ".into() },
            v.debugger_port.map_or("-".into(), |p| p.to_string()),
            s.pid.map_or("-".into(), |p| p.to_string()),
            app,
            s.vm_ident.clone().unwrap_or_else(|| "-".into()),
            match s.ddm {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "?".into(),
            },
            s.debugger.map_or("-".into(), |d| d.to_string()),
            s.state.to_string(),
            v.addr.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if vms.is_empty() {
        out.push_str("(no VMs yet)\n");
    }
    out
}
