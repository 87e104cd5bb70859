//! Finding VMs by themselves: scanning port ranges on a host (`scan`), asking an adb
//! server for the debuggable processes of its devices (`adb`), and telling whether a TCP
//! address is an adb forward to an Android VM (`forwards`).

pub mod adb;
pub mod forwards;
pub mod jvms;
pub mod scan;
