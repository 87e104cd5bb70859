//! The in-repo DDM-aware fake VM as a standalone program, for trying jdwpmux by hand without
//! an Android device: `cargo run --example fake_vm -- [--document] [APP_NAME] [PID] [COUNT]
//! [FIRST_PORT]`. It prints the port it listens on and serves until interrupted.
//! `--document` makes it follow the design document's chunk layouts (THST with an interval,
//! status pushed; no FEAT or HPGC) instead of what later Dalvik and ART take. With COUNT, it
//! starts that many VMs (APP_NAME.1, APP_NAME.2, ... with pids PID, PID+1, ...), on
//! consecutive ports from FIRST_PORT when one is given, so `jdwpmux serve --scan` finds them
//! all. Given a JVM's agent option first (`-agentlib:jdwp=transport=dt_socket,server=y,
//! address=PORT`), it listens on that port, and `jdwpmux serve` finds it by its process as it
//! finds a JVM (with APP_NAME as its main class).

use testkit::fake_vm::DdmLayout;
use testkit::{FakeVm, FakeVmConfig};

const USAGE: &str = "usage: fake_vm [--document] [-agentlib:jdwp=...,address=PORT] [APP_NAME] [PID] [COUNT] [FIRST_PORT]
  APP_NAME    the app name the VM reports (com.example.fake); with COUNT > 1, APP_NAME.1, APP_NAME.2, ...
  PID         its pid (4242); the next VMs take PID+1, PID+2, ...
  COUNT       how many VMs to start (1)
  FIRST_PORT  the first VM's port, the next ones on the ports after it (0: ephemeral ports)
  --document  speak the design document's DDM chunk layouts instead of today's
  -agentlib:jdwp=...,address=PORT  listen on PORT, with a command line like a JVM's";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return println!("{USAGE}");
    }
    let document = args.iter().position(|a| a == "--document").map(|i| args.remove(i)).is_some();
    let agent_port = args.iter().position(|a| a.starts_with("-agentlib:jdwp=")).map(|i| args.remove(i)).and_then(|a| {
        let address = a.split(',').find_map(|kv| kv.strip_prefix("address="))?.to_string();
        address.rsplit(':').next()?.parse::<u16>().ok()
    });
    let mut args = args.into_iter();
    let app = args.next().unwrap_or_else(|| "com.example.fake".into());
    let pid = args.next().and_then(|p| p.parse().ok()).unwrap_or(4242);
    let count: u32 = args.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    let first_port: u16 = args.next().and_then(|p| p.parse().ok()).or(agent_port).unwrap_or(0);
    let layout = if document { DdmLayout::Document } else { DdmLayout::Modern };
    let which = if document { "the design document's" } else { "today's" };
    let mut vms = Vec::new();
    for k in 0..count {
        let name = if count == 1 { app.clone() } else { format!("{app}.{}", k + 1) };
        let config = FakeVmConfig { app_name: name.clone(), pid: pid + k, layout, ..Default::default() };
        let port = if first_port == 0 { 0 } else { first_port.saturating_add(k as u16) };
        match FakeVm::try_start_on(config, port).await {
            Ok(vm) => {
                println!("fake DDM VM {name} (pid {}, {which} chunk layouts) listening on {}", pid + k, vm.addr());
                vms.push(vm);
            }
            Err(e) => eprintln!("fake VM {name}: {e:#}"),
        }
    }
    if first_port != 0 && count > 1 {
        println!("jdwpmux serve --scan 127.0.0.1:{first_port}-{} finds them", first_port.saturating_add(count as u16 - 1));
    }
    let _ = tokio::signal::ctrl_c().await;
}
