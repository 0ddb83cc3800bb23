// Rewrites one slice of a large buffer with new, incompressible words at each launch (a hash
// of the old word and the round), as a solver that updates a band of its grid per step: the
// buffer's next version differs from the last one only in that slice. For the spool tests.

uint mix(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

__kernel void band(__global uint *x, uint first, uint round) {
    size_t i = first + get_global_id(0);
    x[i] = mix(x[i] ^ (round * 0x9e3779b9U) ^ (uint)i);
}
