# Third-party matrix: pyopencl's array and algorithm library (Debian python3-pyopencl) beyond
# the kernels of pyopencl_library.py: pyopencl.array's own reductions (sum, dot, max),
# arithmetic and take, pyopencl.algorithm's copy_if (a generic scan with a user predicate) and
# RadixSort (several programs of one sort), and the Threefry random generator. Each is a
# distinct program pyopencl generates and builds at run time. Results are checked against
# numpy; one deterministic line is printed.
import numpy as np, pyopencl as cl, pyopencl.array as cla
from pyopencl.algorithm import copy_if, RadixSort
import pyopencl.clrandom as clr
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
n = 2048
rng = np.random.default_rng(3)
ha = rng.random(n, dtype=np.float32)
hb = rng.random(n, dtype=np.float32)
a = cla.to_device(q, ha)
b = cla.to_device(q, hb)
s = cla.sum(a).get()
d = cla.dot(a, b).get()
m = cla.max(b).get()
c = (3 * a - b).get()
idx = cla.to_device(q, rng.integers(0, n, 256).astype(np.int32))
t = cla.take(a, idx).get()
ints = cla.to_device(q, rng.integers(0, 100, n).astype(np.int32))
kept, count, _ = copy_if(ints, "ary[i] < 30")
kept = kept.get()[: int(count.get())]
sort = RadixSort(ctx, "int *ary", key_expr="ary[i]", sort_arg_names=["ary"], key_dtype=np.int32)
(sorted_ints,), _ = sort(ints, key_bits=7)
r = clr.ThreefryGenerator(ctx, seed=5).uniform(q, (1000,), np.float32).get()
hi = ints.get()
ok = (
    abs(s - ha.astype(np.float64).sum()) < 1e-3 * n
    and abs(d - np.dot(ha.astype(np.float64), hb)) < 1e-3 * n
    and m == hb.max()
    and np.allclose(c, 3 * ha - hb)
    and (t == ha[idx.get()]).all()
    and (kept == hi[hi < 30]).all()
    and (sorted_ints.get() == np.sort(hi)).all()
    and 0 <= r.min() and r.max() <= 1
)
print("pyopencl array and algorithm kernels:", "ok" if ok else "WRONG")
