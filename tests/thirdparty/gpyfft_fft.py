# Third-party matrix: clFFT's generated FFT kernels (Debian libclfft2) driven through gpyfft
# (Debian python3-gpyfft) on pyopencl arrays: a complex-to-complex forward and inverse FFT
# and a batched real-to-complex FFT. clFFT generates each plan's program as source and builds
# it at bake time. Results are checked against numpy.fft; one deterministic line is printed.
import numpy as np, pyopencl as cl, pyopencl.array as cla
from gpyfft.fft import FFT
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
rng = np.random.default_rng(4)
x = (rng.random(256) + 1j * rng.random(256)).astype(np.complex64)
xd = cla.to_device(q, x)
yd = cla.empty_like(xd)
fwd = FFT(ctx, q, xd, yd, axes=(0,))
fwd.enqueue(forward=True)[0].wait()
y = yd.get()
back = cla.empty_like(xd)
inv = FFT(ctx, q, yd, back, axes=(0,))
inv.enqueue(forward=False)[0].wait()
r = rng.random((4, 64)).astype(np.float32)
rd = cla.to_device(q, r)
rf = cla.empty(q, (4, 33), np.complex64)
real = FFT(ctx, q, rd, rf, axes=(1,), real=True)
real.enqueue()[0].wait()
ok = (
    np.allclose(y, np.fft.fft(x), atol=1e-3 * 256)
    and np.allclose(back.get(), x, atol=1e-4)
    and np.allclose(rf.get(), np.fft.rfft(r, axis=1), atol=1e-3 * 64)
)
print("gpyfft clFFT c2c forward, inverse, batched r2c:", "ok" if ok else "WRONG")
