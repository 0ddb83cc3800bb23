#include "helpers.h"
typedef struct { float4 pos; int id; } Particle;
__kernel void scale(__global Particle* ps, __constant float* weights) {
  size_t i = get_global_id(0);
  ps[i].pos.xy = (float2)(SCALE_BY(ps[i].pos.x), header_twice(weights[i]));
}
