// Collatz steps to reach 1. Its loop condition replaced by true never ends and touches no
// memory while it spins, so only the watchdog or the deadline can stop it.
__kernel void steps(__global const uint* in, __global uint* out) {
    size_t i = get_global_id(0);
    uint x = in[i], s = 0;
    while (x != 1u) {
        x = (x & 1u) ? 3u * x + 1u : x / 2u;
        s++;
    }
    out[i] = s ^ (x - 1u); // x is 1 here; using it keeps the loop from being optimised away
}
