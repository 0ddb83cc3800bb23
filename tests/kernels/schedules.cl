// Kernels of `replay --schedules` tests (hosts: tests/apps/repeats.c and check_kernels.c,
// arguments (out, in, n) over n work-items in groups of GROUP).
#define GROUP 16

// Race-free: what a launch computes depends only on its input.
__kernel void scale(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    if (g < n)
        out[g] = 3 * in[g] + 1;
}

// The inter-group race of check.cl's global_race, made through a pointer that may be either
// argument: the native race check cannot tell which object it points into, so it does not
// check these accesses (and must not call the launch race-free).
__kernel void chosen_race(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    __global uint *p = n > 0 ? out : (__global uint *)in;
    p[g] = in[g];
    if (get_local_id(0) == GROUP - 1 && g + 1 < n)
        p[g] += p[g + 1];
}
