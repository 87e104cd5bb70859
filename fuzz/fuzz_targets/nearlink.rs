//! AFL target `nearlink`: see `jdwpmux::fuzzing::nearlink` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::nearlink::check(data));
}
