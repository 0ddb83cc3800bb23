#ifndef DEBUG
#define dbg_store(buf, i, v)
#else
void dbg_store(__global float *buf, int i, float v) { buf[i] = v; }
#endif
__kernel void k(__global float *in, __global float *out) {
  int i = get_global_id(0);
  dbg_store(out, i, in[i]);
}
