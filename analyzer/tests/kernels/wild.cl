// Writes where `at` says: far out of its buffer (a launch that crashes the device) or inside it.
__kernel void wild(__global int* out, long at) {
  if (get_global_id(0) == 0)
    out[at] = 1;
}
