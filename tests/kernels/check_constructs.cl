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
