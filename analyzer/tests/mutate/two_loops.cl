// Two Collatz loops: each of their four conditions (two `while`, two `?:`), replaced by true,
// spins forever without touching memory: four mutants that only the run deadline stops,
// each killing its worker.
__kernel void two_loops(__global const uint* in, __global uint* out) {
    size_t i = get_global_id(0);
    uint x = in[i], a = 0;
    while (x != 1u) {
        x = (x & 1u) ? 3u * x + 1u : x / 2u;
        a++;
    }
    uint y = in[i] + 1u, b = 0;
    while (y != 1u) {
        y = (y & 1u) ? 3u * y + 1u : y / 2u;
        b++;
    }
    out[i] = a + 3u * b + (x - 1u) + (y - 1u);
}
