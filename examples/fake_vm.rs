//! The in-repo DDM-aware fake VM as a standalone program, for trying jdwpmux by hand without
//! an Android device: `cargo run --example fake_vm -- [APP_NAME] [PID]`. It prints the port it
//! listens on and serves until interrupted.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{FakeVm, FakeVmConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let app = args.next().unwrap_or_else(|| "com.example.fake".into());
    let pid = args.next().and_then(|p| p.parse().ok()).unwrap_or(4242);
    let vm = FakeVm::start(FakeVmConfig { app_name: app.clone(), pid, ..Default::default() }).await;
    println!("fake DDM VM {app} (pid {pid}) listening on {}", vm.addr());
    let _ = tokio::signal::ctrl_c().await;
}
