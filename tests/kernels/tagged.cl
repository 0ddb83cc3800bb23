// A launch whose scalar arguments identify it (thread, iteration), so a test can check that
// every launch was captured exactly once.

__kernel void tagged(__global int *out, int thread, int iter) {
    size_t g = get_global_id(0);
    out[g] = thread * 100000 + iter * 100 + (int)g;
}
