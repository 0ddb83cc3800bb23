// Kernels for the granularity of `cltrap check`'s shadows, each correct kernel with a racy
// twin: work-items that touch their own byte, short or vector next to their neighbours' do
// not race; two that touch the same element without a barrier do. Launched by
// apps/check_kernels.c with (out, in, n). Tests assert the line numbers below: add new
// kernels at the end only.

__kernel void chars(__global char *m, __global const uint *in, uint n) {
    uint gid = get_global_id(0);
    m[gid] = 1;
}

__kernel void chars_race(__global char *m, __global const uint *in, uint n) {
    uint gid = get_global_id(0);
    m[gid / 2] = (char)gid;
}

__kernel void shorts(__global short *out, __global const short *in, uint n) {
    uint g = get_global_id(0);
    out[g] = (short)(in[g] * 2);
}

__kernel void shorts_race(__global short *out, __global const short *in, uint n) {
    uint g = get_global_id(0);
    out[g / 2] = (short)g;
}

// A read-only table shared by every work-item (also launched as one group of 4096).
__kernel void table(__global uchar *out, __global const uchar *table, uint n) {
    uint g = get_global_id(0);
    out[g] = (uchar)(table[g % 16] + table[(g + 1) % 16]);
}

__kernel void vectors(__global uchar4 *out, __global const uchar4 *in, uint n) {
    uint g = get_global_id(0);
    out[g] = in[g] + (uchar4)(1);
}

__kernel void vectors_race(__global uchar4 *out, __global const uchar4 *in, uint n) {
    uint g = get_global_id(0);
    out[g / 2] = in[g];
}

// Bytes of one buffer written by neighbours, through a private pointer into it.
__kernel void bytes_pointer(__global uchar *out, __global const uchar *in, uint n) {
    __global uchar *p = out + get_global_id(0);
    *p = in[get_global_id(0)] ^ 0x5a;
}

// vloadN / vstoreN: each work-item its own 4 bytes of `uchar` buffers (clean), and a racy
// twin where two work-items store the same 4 bytes.
__kernel void vstores(__global uchar *out, __global const uchar *in, uint n) {
    uint g = get_global_id(0);
    vstore4(vload4(g, in) + (uchar4)(1), g, out);
}

__kernel void vstores_race(__global uchar *out, __global const uchar *in, uint n) {
    uint g = get_global_id(0);
    vstore4(vload4(g, in), g / 2, out);
}
