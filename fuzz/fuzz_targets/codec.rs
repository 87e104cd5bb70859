//! AFL target `codec`: see `jdwpmux::fuzzing::codec` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::codec::check(data));
}
