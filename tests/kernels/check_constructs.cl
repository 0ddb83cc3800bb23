// Kernels for `cltrap check` on constructs found in third-party code, launched by
// apps/check_kernels.c with (out, in, n) in groups of 16. Tests assert the line numbers
// below: add new kernels at the end only.

#define GROUP 16
#define Add(c, a, b) c = a + b

// A `__local` slot written inside a macro (CLBlast's Xnrm2Epilogue) and read after a barrier:
// every slot read was written, so there is no uninitialised read.
__kernel void macro_write(__global uint *out, __global const uint *in, uint n) {
    __local uint lm[GROUP];
    uint l = get_local_id(0), g = get_global_id(0);
    Add(lm[l], in[g], in[g ^ 1]);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[g] = lm[(l + 1) % GROUP];
}

// The same, plus a read of a second `__local` array no one writes: that read is reported.
__kernel void macro_write_and_uninit(__global uint *out, __global const uint *in, uint n) {
    __local uint lm[GROUP];
    __local uint never[GROUP];
    uint l = get_local_id(0), g = get_global_id(0);
    Add(lm[l], in[g], in[g ^ 1]);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[g] = lm[(l + 1) % GROUP] + never[l];
}

// A quotient and a remainder of one division: clang freezes their operands, an instruction
// Oclgrind's uninitialised-value plugin cannot simulate (ViennaCL, pyopencl).
__kernel void div_rem(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    uint w = in[1] + 3;
    out[g] = g / w + g % w;
}

// The same with a race between neighbours: still found when uninitialised values cannot be
// checked.
__kernel void div_rem_race(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    uint w = in[1] + 3;
    out[g / 2] = g / w + g % w;
}

// A `__global` write, a barrier that fences `__local` memory only, then a read of a
// neighbour's element (pyopencl's scan_lev1): the barrier does not order `__global` accesses,
// so the write and the read race (Oclgrind: a read-write race on these two lines).
__kernel void local_fence_global(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    out[g] = in[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[n + g] = out[g ^ 1];
}

// The twin: a barrier fencing `__global` memory orders them.
__kernel void global_fence_global(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    out[g] = in[g];
    barrier(CLK_GLOBAL_MEM_FENCE);
    out[n + g] = out[g ^ 1];
}

// Barriers written inside macro bodies (pyopencl's `local_barrier()`, which ends with `;`,
// and a macro with a fence before its barrier): each still ends its interval, so the
// neighbours' reads after them are no race.
#define local_barrier() barrier(CLK_LOCAL_MEM_FENCE);
#define SYNC_ALL() mem_fence(CLK_GLOBAL_MEM_FENCE); barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
__kernel void macro_barriers(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0), g = get_global_id(0);
    tile[l] = in[g];
    local_barrier();
    out[g] = tile[(l + 1) % GROUP];
    out[n + g] = tile[l];
    SYNC_ALL();
    out[2 * n + g] = out[n + (g ^ 1)];
}

// The same without the barriers: both races are found (and the neighbour's slot read before
// it is written is an uninitialised value).
#define PUT(p, i, v) p[i] = v
__kernel void macro_barriers_race(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[GROUP];
    uint l = get_local_id(0), g = get_global_id(0);
    tile[l] = in[g];
    out[g] = tile[(l + 1) % GROUP];
    PUT(out, n + g, l);
    out[2 * n + g] = out[n + (g ^ 1)];
}

// CLBlast's reduction: `Add(lm[l], lm[l], lm[l + s])` writes its first argument inside the
// macro body; every slot read is written before the barrier.
__kernel void macro_reduce(__global uint *out, __global const uint *in, uint n) {
    __local uint lm[GROUP];
    uint l = get_local_id(0), g = get_global_id(0);
    lm[l] = in[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = GROUP / 2; s > 0; s >>= 1) {
        if (l < s)
            Add(lm[l], lm[l], lm[l + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(0)] = lm[0];
}

// Rodinia's particle filter (`normalize_weights_kernel`, the CDF in a helper): work-item 0
// reads every weight other groups write (a race between groups in the helper's loop), writes
// `u[0]` that the first work-item of every group then reads, and every work-item writes its
// own `u[i]` (work-item 0 its `u[0]` again).
void cdf_calc(__global float *cdf, __global float *weights, uint count) {
    cdf[0] = weights[0];
    for (uint x = 1; x < count; x++)
        cdf[x] = weights[x] + cdf[x - 1];
}

__kernel void normalize_weights(__global float *out, __global const float *in, uint n) {
    __global float *weights = out, *cdf = out + n, *u = out + 2 * n;
    uint i = get_global_id(0), l = get_local_id(0);
    __local float u1, sum_weights;
    if (l == 0)
        sum_weights = in[0] + 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    weights[i] = weights[i] / sum_weights;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (i == 0) {
        cdf_calc(cdf, weights, n);
        u[0] = 1.0f / n;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (l == 0)
        u1 = u[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    u[i] = u1 + i / (float)n;
}

// The first work-item of the last group writes `out[0]` twice (two lines) while the first
// work-item of every other group reads it: one race between groups, named on the first
// write's line as Oclgrind names it, whichever order the device runs the groups in.
__kernel void last_group_writes_twice(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0), l = get_local_id(0);
    if (l == 0 && get_group_id(0) + 1 == get_num_groups(0)) {
        out[0] = in[0];
        out[0] += in[1];
    }
    if (l == 0 && get_group_id(0) + 1 < get_num_groups(0))
        out[n + g] = out[0];
}
