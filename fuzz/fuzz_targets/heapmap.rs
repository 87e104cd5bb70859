//! AFL target `heapmap`: see `jdwpmux::fuzzing::heapmap` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::heapmap::check(data));
}
