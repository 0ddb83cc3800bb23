// Compilation unit with the kernel; includes a header that exists only as an embedded program.
#include "mix_helper.h"

__kernel void mix(__global const int *in, __global int *out) {
    size_t g = get_global_id(0);
    out[g] = mix_value(in[g]) + MIX_OFFSET;
}
