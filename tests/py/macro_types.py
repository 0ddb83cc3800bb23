"""Fixture: scalar arguments whose types are a macro (`#define index_type int`, pyopencl's
spelling) and a typedef behind a macro, in a program with a GNU case range (which the driver
builds and cltrap's libclang model does not take, so `list` cannot ask clang the types and
resolves them through the program's own text).

Scales a buffer by 2.5 and checks the result; prints `scale: ok` and exits 0 when right.
"""
import sys

import numpy as np
import pyopencl as cl

SRC = """
#define index_type int
typedef float scale_t;
#define SCALE_T scale_t
__kernel void scale(__global float *y, const index_type N, SCALE_T scale) {
    index_type g = get_global_id(0);
    switch (g & 3) {
    case 0 ... 3:
        if (g < N)
            y[g] = scale * y[g];
        break;
    }
}
"""


def main() -> int:
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, SRC).build()
    n = 4096
    y = np.arange(n, dtype=np.float32)
    by = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=y)
    prg.scale(queue, (n,), None, by, np.int32(n), np.float32(2.5))
    got = np.empty_like(y)
    cl.enqueue_copy(queue, got, by)
    ok = np.array_equal(got, y * np.float32(2.5))
    print(f"scale: {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
