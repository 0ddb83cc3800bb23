//! AFL++ entry point of the `includes` target (see `cltrap_fuzz::targets::includes`).

fn main() {
    afl::fuzz!(|data: &[u8]| cltrap_fuzz::targets::includes(data));
}
