/* Kernels whose `__global int *src` is declared without `const`. `reads` and `reads_const`
 * only read it (the capture reads it once per launch, as for a `const` pointer); every other
 * kernel writes it in a way a token scan could miss: the capture must read it after the
 * launch, or its record of `src` would be stale and the launch would not replay. The macros
 * some of them write through live in a header (unwritten.h, found through `-I`): the capture
 * reads the headers it found with the program. */
#include "unwritten.h"
/* Macros of the program itself: the capture expands them in the kernels. */
#define AT(p, i) ((p)[i])
#define PUT(p, i, v) (p)[i] = (v)

void helper(__global int *p, int i) { p[i] += 1; }

__kernel void reads_const(__global const int *src, __global int *dst) {
    int i = get_global_id(0);
    dst[i] = src[i] * 2 + *(src + i) + vload2(0, src)[1];
}

__kernel void reads(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    dst[i] = src[i] * 2 + *(src + i) + vload2(0, src)[1];
}

/* Never writes `src` by its source; given one buffer as both arguments, it writes it. */
__kernel void doubles(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    dst[i] = src[i] * 2;
}

/* Reads `src` through a macro of the program. */
__kernel void reads_through_macro(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    dst[i] = AT(src, i) * 3 + AT(src, 1);
}

/* Writes `src` only when n < 0, which never happens: still a possible write. */
__kernel void reads_maybe(__global int *src, __global int *dst, int n) {
    int i = get_global_id(0);
    dst[i] = src[i] * 2 + *(src + i) + vload2(0, src)[1];
    if (n < 0) src[i] = 0;
}

__kernel void via_helper(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    helper(src, i);
    dst[i] = i;
}

__kernel void via_macro(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    BUMP(src, i);
    dst[i] = i;
}

__kernel void via_expanded_macro(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    PUT(src, i, AT(src, i) + 1);
    dst[i] = i;
}

__kernel void via_macro_element(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    INC(src[i]);
    dst[i] = i;
}

__kernel void via_deref(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    *(src + i) += 1;
    dst[i] = i;
}

__kernel void via_parentheses(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    (src[i]) = src[i] + 1;
    dst[i] = i;
}

__kernel void via_alias(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    __global int *q = src;
    q[i] += 1;
    dst[i] = i;
}

__kernel void via_vstore(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    if (i % 2 == 0) vstore2((int2)(src[i] + 1, src[i + 1] + 1), 0, src + i);
    dst[i] = i;
}

__kernel void via_atomic(__global int *src, __global int *dst) {
    int i = get_global_id(0);
    atomic_add(&src[i], 1);
    dst[i] = i;
}

__kernel void via_component(__global int2 *src, __global int *dst) {
    int i = get_global_id(0);
    if (i % 2 == 0) src[i / 2].y += 1;
    dst[i] = i;
}
