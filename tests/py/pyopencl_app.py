"""Fixture: a pyopencl application (pyopencl bundles and dlopens its own ICD loader).

Runs a vector operation and a work-group reduction with __local memory, checks both against
numpy, prints deterministic results and exits non-zero when anything is wrong.
"""
import sys

import numpy as np
import pyopencl as cl

SRC = """
// The scalar's type as real kernels spell it: a typedef behind a macro.
typedef float real;
#define REAL real
__kernel void saxpy(__global const float *x, __global float *y, const REAL a) {
    size_t g = get_global_id(0);
    y[g] = a * x[g] + y[g];
}

__kernel void block_sum(__global const int *in, __global int *out, __local int *tmp) {
    size_t l = get_local_id(0);
    tmp[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
        if (l < s)
            tmp[l] += tmp[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(0)] = tmp[0];
}
"""


def main() -> int:
    platform = cl.get_platforms()[0]
    device = platform.get_devices()[0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, SRC).build()
    mf = cl.mem_flags

    n = 1024
    x = np.arange(n, dtype=np.float32) * np.float32(0.5)
    y = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    by = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=y)
    saxpy = prg.saxpy
    saxpy(queue, (n,), None, bx, by, np.float32(3.0))
    got = np.empty_like(y)
    cl.enqueue_copy(queue, got, by)
    want = np.float32(3.0) * x + y
    ok_saxpy = np.array_equal(got, want)

    local = 64
    ints = (np.arange(n, dtype=np.int32) * 7) % 101 - 50
    bi = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ints)
    bo = cl.Buffer(ctx, mf.WRITE_ONLY, size=4 * (n // local))
    block_sum = prg.block_sum
    block_sum(queue, (n,), (local,), bi, bo, cl.LocalMemory(4 * local))
    sums = np.empty(n // local, dtype=np.int32)
    cl.enqueue_copy(queue, sums, bo)
    ok_sum = np.array_equal(sums, ints.reshape(-1, local).sum(axis=1))

    print(f"saxpy: {'ok' if ok_saxpy else 'WRONG'} y[10]={got[10]!r} y[-1]={got[-1]!r}")
    print(f"block_sum: {'ok' if ok_sum else 'WRONG'} sums={sums.tolist()}")
    return 0 if ok_saxpy and ok_sum else 1


if __name__ == "__main__":
    sys.exit(main())
