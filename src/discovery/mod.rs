//! Finding VMs by themselves: scanning port ranges on a host (`scan`), and asking an adb
//! server for the debuggable processes of its devices (`adb`).

pub mod adb;
pub mod scan;
