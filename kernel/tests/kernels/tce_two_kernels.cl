// Two kernels, a helper only `first` calls (kept out of line) and a helper nobody calls.
__attribute__((noinline)) int shifted(int x) { return x + 7; }
int never_called(int x) { return x * 3; }
__kernel void first(__global int* out) {
    size_t g = get_global_id(0);
    out[g] = shifted((int)g);
}
__kernel void second(__global int* out) {
    size_t g = get_global_id(0);
    out[g] = (int)g - 1;
}
