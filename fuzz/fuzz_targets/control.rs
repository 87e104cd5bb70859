//! AFL target `control`: see `jdwpmux::fuzzing::control` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::control::check(data));
}
