// A correct work-group reduction: every barrier is reached by every work-item of every group.
#define WG 8
__kernel void reduce(__global const uint* in, __global uint* partial, __local uint* scratch) {
  size_t l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = scratch[0];
}
