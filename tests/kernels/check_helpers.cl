// Kernels for `cltrap check` on accesses written in helper functions, macro bodies and
// async copies, launched by apps/check_kernels.c with (out, in, n[, tile]) over 64 work-items
// in groups of 16 (`out` and `in`: 4 * n uints; `tile`: 64 uints). Tests assert the line
// numbers below: add new kernels at the end only.

static void stash(__local uint *t, uint l, uint v) { t[l] = v; }
static void peek(__global uint *o, __local const uint *t, uint l, uint g) { o[g] = t[(l + 1) % 16]; }
static void publish(__local uint *t, uint l, uint v) { t[l] = v; barrier(CLK_LOCAL_MEM_FENCE); }
static void put(__global uint *p, uint i, uint v) { p[i] = v; }
static void move(__global uint *dst, __local const uint *src, uint i, uint j) { dst[i] = src[j]; }
static uint twice(__global const uint *p, uint i) { return p[i] + p[i]; }
static uint through(__global const uint *p, uint i) { return twice(p, i); }

// A race inside helpers: every work-item stores its slot and reads its neighbour's with no
// barrier in between (lines 6 and 7).
__kernel void helper_local_race(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[16];
    uint l = get_local_id(0), g = get_global_id(0);
    stash(tile, l, in[g]);
    peek(out, tile, l, g);
}

// The twin: the helper waits at the barrier after its store (counted in the kernel's barrier
// intervals), and the helpers' accesses are all checked.
__kernel void helper_local_race_fixed(__global uint *out, __global const uint *in, uint n) {
    __local uint tile[16];
    uint l = get_local_id(0), g = get_global_id(0);
    publish(tile, l, in[g]);
    peek(out, tile, l, g);
    out[g] += through(in, g);
}

// An overrun inside a helper: the last work-item writes out[4 * n] (line 9).
__kernel void helper_overrun(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    put(out, 4 * g + 4, in[g]);
}

// One helper called from two sites with different objects: the first reads `tile` (a __local
// argument of 64 uints) one past its end for the last work-item of each group; the second
// reads `mine` in bounds and writes `out` one past its end for the last work-item (line 10).
__kernel void helper_two_sites(__global uint *out, __global const uint *in, uint n, __local uint *tile) {
    __local uint mine[16];
    uint l = get_local_id(0), g = get_global_id(0);
    vstore4((uint4)(in[g]), l, tile);
    mine[l] = in[g] + 1;
    barrier(CLK_LOCAL_MEM_FENCE);
    move(out, tile, g, 4 * l + 4);
    move(out + 3 * n, mine, g + 1, l);
}

// A work-group copy whose source runs past the end of `in` for the last group (line 56):
// 64 uints from in + 64 * group + 16.
__kernel void async_overrun(__global uint *out, __global const uint *in, uint n, __local uint *tile) {
    uint g = get_global_id(0), l = get_local_id(0);
    event_t e = async_work_group_copy(tile, in + 64 * get_group_id(0) + 16, 64, 0);
    wait_group_events(1, &e);
    out[g] = tile[l];
}

// The twin: the copy stays inside both objects.
__kernel void async_in_bounds(__global uint *out, __global const uint *in, uint n, __local uint *tile) {
    uint g = get_global_id(0), l = get_local_id(0);
    event_t e = async_work_group_copy(tile, in + 64 * get_group_id(0), 64, 0);
    wait_group_events(1, &e);
    out[g] = tile[l];
}

// Accesses written in macro bodies, checked at the macro's use (lines 75 and 76): the store
// through STORE runs one past the end of `out` for the last work-item; LOAD's read is in bounds.
#define STORE(p, i, v) p[i] = v
#define LOAD(p, i) p[i]
__kernel void macro_store(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    uint v = LOAD(in, g);
    STORE(out, 4 * g + 4, v);
}

// A macro whose body names the object itself: not something an edit at the use can reach, so
// it stays named as not checked.
#define STORE_OUT(i, v) out[i] = v
__kernel void macro_names_object(__global uint *out, __global const uint *in, uint n) {
    uint g = get_global_id(0);
    STORE_OUT(g, in[g]);
}
