//! AFL target `config`: see `jdwpmux::fuzzing::config` for the input and what must hold.

fn main() {
    afl::fuzz!(|data: &[u8]| jdwpmux::fuzzing::config::check(data));
}
