//! AFL target `ddm`: see `jdwpmux::fuzzing::ddm` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::ddm::check(data));
}
