// Adds one to every word of a large buffer: each launch leaves a new version of it, so the
// capture's stored contents grow by the buffer's size per version kept. For the test of the
// paced derive threshold.
__kernel void bump(__global uint *x) {
    size_t i = get_global_id(0);
    x[i] += 1u;
}
