"""A pyopencl program that forks worker processes (multiprocessing, start method fork) after
its first kernel and keeps them alive, calling no OpenCL, until it has rewritten a 4 MB buffer
eleven more times (a finish after each); then prints a checksum of the buffer."""
import multiprocessing as mp

import numpy as np
import pyopencl as cl


def idle(q):
    q.get()  # waits for the parent to finish


def main():
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(
        ctx,
        """
    __kernel void advance(__global uint *x, uint r) {
        size_t i = get_global_id(0);
        uint v = x[i] ^ (r * 2654435761u) ^ (uint)i;
        v ^= v << 13; v ^= v >> 17; v ^= v << 5;
        x[i] = v;
    }""",
    ).build()
    n = 1 << 20
    host = np.arange(n, dtype=np.uint32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    prg.advance(queue, (n,), None, buf, np.uint32(0))
    queue.finish()
    mp.set_start_method("fork")
    q = mp.Queue()
    procs = [mp.Process(target=idle, args=(q,)) for _ in range(2)]
    for p in procs:
        p.start()
    for r in range(1, 12):
        prg.advance(queue, (n,), None, buf, np.uint32(r))
        queue.finish()
    out = np.empty_like(host)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    for p in procs:
        q.put(0)
    for p in procs:
        p.join()
    print("checksum", int(out.astype(np.uint64).sum()))


if __name__ == "__main__":
    main()
