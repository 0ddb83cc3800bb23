// Kernels for `cltrap check`: one bug of each class and a correct twin of each.
// Every kernel takes (out, in, n) and runs with n work-items in groups of 16.
// Tests assert the line numbers below: add new kernels at the end only.

#define GROUP 16

__kernel void local_race(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0);
    tile[l] = in[get_global_id(0)];
    // Missing barrier: reads a neighbour's slot while it may not be written yet.
    out[get_global_id(0)] = tile[(l + 1) % GROUP];
}

__kernel void local_race_fixed(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0);
    tile[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[(l + 1) % GROUP];
}

__kernel void global_race(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    out[g] = in[g];
    // Reads the first element of the next group's slice: another group writes it.
    if (get_local_id(0) == GROUP - 1 && g + 1 < n)
        out[g] += out[g + 1];
}

__kernel void global_race_fixed(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    out[g] = in[g];
    if (get_local_id(0) == GROUP - 1 && g + 1 < n)
        out[g] += in[g + 1];
}

__kernel void off_by_one(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    out[g + 1] = in[g + 1];
}

__kernel void off_by_one_fixed(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    if (g + 1 < n)
        out[g + 1] = in[g + 1];
}

__kernel void uninit_local(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0);
    if (l % 2 == 0)
        tile[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[l ^ 1] + 1;
}

__kernel void uninit_local_fixed(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0);
    tile[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[l ^ 1] + 1;
}

__kernel void divergent_barrier(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0);
    tile[l] = in[get_global_id(0)];
    for (uint i = 0; i < 1 + l % 2; i++)
        barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[l];
}

__kernel void divergent_barrier_fixed(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0);
    tile[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[l];
}

// Correct but long on a simulator (not in the host program's default table): for deadlines.
__kernel void spin(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0), x = in[g];
    for (uint i = 0; i < 2000000; i++)
        x = x * 1664525u + 1013904223u;
    out[g] = x;
}

// Off by one only for an input value above n (the host's in[i] = i never is): fuzzing finds
// an input that makes the last work-item write out[n]; the mutant `<` for `>` does it on the
// captured input. Not in the host program's default table.
__kernel void guarded_overrun(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    uint at = in[g] > n ? g + 1 : g;
    out[at] = in[g];
}
