// Rewrites a whole buffer with new, incompressible words at every launch (a hash of the
// old word and the round), so each launch's contents are new to the capture; and a second
// kernel that reads the result. For the disk-budget test.

uint mix(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

__kernel void scramble(__global uint *x, uint round) {
    size_t i = get_global_id(0);
    x[i] = mix(x[i] ^ (round * 0x9e3779b9U) ^ (uint)i);
}

__kernel void fold(__global const uint *x, __global uint *out, uint width) {
    size_t g = get_global_id(0);
    uint acc = 0;
    for (uint j = 0; j < width; j++)
        acc ^= x[g * width + j];
    out[g] = acc;
}
