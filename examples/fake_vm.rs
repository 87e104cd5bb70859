//! The in-repo DDM-aware fake VM as a standalone program, for trying jdwpmux by hand without
//! an Android device: `cargo run --example fake_vm -- [--document] [APP_NAME] [PID]`. It prints
//! the port it listens on and serves until interrupted. `--document` makes it follow the
//! design document's chunk layouts (THST with an interval, status pushed; no FEAT or HPGC)
//! instead of what later Dalvik and ART take.

#[path = "../tests/support/mod.rs"]
mod support;

use support::fake_vm::DdmLayout;
use support::{FakeVm, FakeVmConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let document = args.iter().position(|a| a == "--document").map(|i| args.remove(i)).is_some();
    let mut args = args.into_iter();
    let app = args.next().unwrap_or_else(|| "com.example.fake".into());
    let pid = args.next().and_then(|p| p.parse().ok()).unwrap_or(4242);
    let layout = if document { DdmLayout::Document } else { DdmLayout::Modern };
    let vm = FakeVm::start(FakeVmConfig { app_name: app.clone(), pid, layout, ..Default::default() }).await;
    let which = if document { "the design document's" } else { "today's" };
    println!("fake DDM VM {app} (pid {pid}, {which} chunk layouts) listening on {}", vm.addr());
    let _ = tokio::signal::ctrl_c().await;
}
