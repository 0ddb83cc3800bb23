//! AFL++ entry point of the `macros` target (see `cltrap_fuzz::targets::macros`).

fn main() {
    afl::fuzz!(|data: &[u8]| cltrap_fuzz::targets::macros(data));
}
