#include "pde.h"
__kernel void smooth(__global float* out, __global const float* t, int w) {
  int i = get_global_id(0);
  out[i] = diffuse_pde(t, w);
}
