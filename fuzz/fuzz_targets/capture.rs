//! AFL target `capture`: see `jdwpmux::fuzzing::capture` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::capture::check(data));
}
