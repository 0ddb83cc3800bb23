# Third-party matrix: pyopencl's own library kernels (Debian python3-pyopencl): an
# ElementwiseKernel, a ReductionKernel, an inclusive scan, the bitonic sort and the Philox
# random generator. Results are checked against numpy; one deterministic line is printed.
import numpy as np, pyopencl as cl, pyopencl.array as cla
from pyopencl.elementwise import ElementwiseKernel
from pyopencl.reduction import ReductionKernel
from pyopencl.scan import InclusiveScanKernel
from pyopencl.bitonic_sort import BitonicSort
import pyopencl.clrandom as clr
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
n = 4096
rng = np.random.default_rng(7)
a = cla.to_device(q, rng.random(n, dtype=np.float32))
b = cla.to_device(q, rng.random(n, dtype=np.float32))
lin = ElementwiseKernel(ctx, "float k, float *x, float *y, float *z", "z[i] = k*x[i] + y[i]", "lin")
z = cla.empty_like(a); lin(2.5, a, b, z)
dot = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]", arguments="__global float *x, __global float *y")
d = dot(a, b).get()
scan = InclusiveScanKernel(ctx, np.int32, "a+b", neutral="0")
iv = cla.to_device(q, (np.arange(n) % 7).astype(np.int32))
s = scan(iv).get()
keys = cla.to_device(q, rng.integers(0, 1 << 20, n).astype(np.uint32))
sort = BitonicSort(ctx)
sk, ev = sort(keys)
r = clr.PhiloxGenerator(ctx, seed=11).uniform(q, (1000,), np.float32).get()
ok = np.allclose(z.get(), 2.5*a.get()+b.get()) and abs(d - float(np.dot(a.get().astype(np.float64), b.get()))) < 1e-2 * n and (s == np.cumsum(np.arange(n) % 7)).all() and (np.diff(sk.get().astype(np.int64)) >= 0).all() and 0 <= r.min() and r.max() <= 1
print("pyopencl library kernels:", "ok" if ok else "WRONG")
