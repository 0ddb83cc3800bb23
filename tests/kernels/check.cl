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

// Launched by name only (not in the host program's default table). A private pointer into
// `out` that overruns it by one element, and a store through a helper function: the native
// engine attributes `p` to `out` and checks it, and names the helper's store as not checked.
static void put(__global uint *p, uint i, uint v) { p[i] = v; }

__kernel void pointer_overrun(__global uint *out, __global const uint *in, uint n) {
    __global uint *p = out + get_global_id(0);
    p[1] = in[get_global_id(0)];
}

__kernel void helper_store(__global uint *out, __global const uint *in, uint n) {
    put(out, get_global_id(0), in[get_global_id(0)]);
}

// Launched by name only: a `__local` pointer argument (the host gives it GROUP elements),
// written one element past its end by the last work-item of each group; slot 0 is then read
// without ever being written.
__kernel void local_arg_overrun(__global uint *out, __global const uint *in, uint n, __local uint *tile) {
    uint l = get_local_id(0);
    tile[l + 1] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[l];
}

// Launched by name only: work-items of one group exchange values through __global memory,
// without a barrier (a race inside the group) and with one (the twin).
__kernel void group_global_race(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    out[g] = in[g];
    out[g] += out[g ^ 1];
}

__kernel void group_global_race_fixed(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0), v = in[g];
    out[g] = v;
    barrier(CLK_GLOBAL_MEM_FENCE);
    uint w = out[g ^ 1];
    barrier(CLK_GLOBAL_MEM_FENCE);
    out[g] = v + w;
}

// Off by one only for an input value above n (the host's in[i] = i never is): fuzzing finds
// an input that makes the last work-item write out[n]; the mutant `<` for `>` does it on the
// captured input. Not in the host program's default table.
__kernel void guarded_overrun(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    uint at = in[g] > n ? g + 1 : g;
    out[at] = in[g];
}

// Launched by name only: a store through a helper whose call is written inside a macro, where
// the native engine cannot pass the checker's state: the helper is not instrumented and its
// store is named not checked (line 144).
static void put_hidden(__global uint *p, uint i, uint v) { p[i] = v; }
#define PUT_HIDDEN(o, i, v) put_hidden(o, i, v)
__kernel void macro_helper_store(__global uint *out, __global const uint *in, uint n) {
    uint v = in[get_global_id(0)];
    PUT_HIDDEN(out, get_global_id(0), v);
}
