//! Finding VMs by themselves: scanning port ranges on a host (`scan`), asking an adb
//! server for the debuggable processes of its devices (`adb`), and telling whether a TCP
//! address is an adb forward to an Android VM (`forwards`), and who owns a listening port of
//! this machine (`port_owner`).

pub mod adb;
pub mod forwards;
pub mod jvms;
pub mod port_owner;
pub mod scan;
