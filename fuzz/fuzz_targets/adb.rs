//! AFL target `adb`: see `jdwpmux::fuzzing::adb` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::adb::check(data));
}
