#define FOR_EACH(i, n) for (int i = 0; i < (n); ++i) {
__kernel void k(__global float *in, __global float *out) {
  FOR_EACH(j, 4)
    out[j] = in[j];
  }
  in[0] = 0.0f;
}
