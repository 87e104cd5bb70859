//! AFL target `handshake`: see `jdwpmux::fuzzing::handshake` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::handshake::check(data));
}
