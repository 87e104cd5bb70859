//! AFL target `farlink`: see `jdwpmux::fuzzing::farlink` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::farlink::check(data));
}
