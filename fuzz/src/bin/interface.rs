//! AFL++ entry point of the `interface` target (see `cltrap_fuzz::targets::interface`).

fn main() {
    afl::fuzz!(|data: &[u8]| cltrap_fuzz::targets::interface(data));
}
