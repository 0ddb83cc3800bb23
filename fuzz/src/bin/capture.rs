//! AFL++ entry point of the `capture` target (see `cltrap_fuzz::targets::capture`).

fn main() {
    afl::fuzz!(|data: &[u8]| cltrap_fuzz::targets::capture(data));
}
