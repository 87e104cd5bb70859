//! The daemon's side of `jdwpmux stats [VM]`: each session's traffic figures since it
//! started, asked of the session itself (it owns them; nothing is shared or locked), and
//! each far link's Data frames, as the link last published them (`NearLink::figures`). The
//! web monitor's traffic panel reads them through [`vm_report`] too, so both show the same
//! figures.

use std::time::Duration;

use super::protocol::{ErrorKind, Response};
use crate::registry::{Registry, VmEntry};
use crate::stats::{LinkReport, StatsReport, VmReport};

/// Longest wait for one session's figures (it answers between two packets).
pub const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// One VM's figures, named as `stats` shows them ("NAME (APP, pid PID)"); `None` when its
/// session ended or did not answer within [`STATS_TIMEOUT`].
pub async fn vm_report(vm: &VmEntry) -> Option<VmReport> {
    let mut report = tokio::time::timeout(STATS_TIMEOUT, vm.handle.stats()).await.ok()??;
    let status = vm.handle.status();
    report.vm = match (status.app, status.pid) {
        (Some(app), Some(pid)) => format!("{} ({app}, pid {pid})", vm.name),
        (Some(app), None) => format!("{} ({app})", vm.name),
        _ => vm.name.clone(),
    };
    Some(report)
}

/// The figures of the VM `selector` names (and of its host's far link), or of every VM
/// (and every far link).
pub(super) async fn stats(registry: &Registry, selector: Option<&str>) -> Response {
    let ids = match selector {
        Some(s) => match registry.resolve(s) {
            Ok(id) => vec![id],
            Err(e) => return Response::Error { kind: ErrorKind::Selector, message: e.to_string() },
        },
        None => registry.list().into_iter().map(|v| v.id).collect(),
    };
    let mut vms = Vec::new();
    let mut hosts: Vec<String> = Vec::new();
    for id in ids {
        let Some(vm) = registry.get(id) else { continue };
        let Some(report) = vm_report(&vm).await else {
            if selector.is_some() {
                return Response::Error { kind: ErrorKind::Vm, message: format!("{} did not answer (its session ended?)", vm.name) };
            }
            continue;
        };
        hosts.extend(vm.host.clone());
        vms.push(report);
    }
    let links = registry.hosts.links().into_iter().filter(|(h, _)| selector.is_none() || hosts.contains(h)).map(|(h, s)| LinkReport::new(&h, s)).collect();
    Response::Stats { report: StatsReport { vms, links } }
}
