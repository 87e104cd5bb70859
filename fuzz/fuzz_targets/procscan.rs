//! AFL target `procscan`: see `jdwpmux::fuzzing::procscan` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::procscan::check(data));
}
