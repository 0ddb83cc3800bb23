// Inter-work-group races: the result depends on which work-groups ran before which.

// In-place 3-point stencil with a stride of one work-group: each work-item reads the
// elements at the same position in the neighbouring work-groups, which those groups overwrite
// in the same launch, so whether it sees old or new values depends on the order the groups
// ran in. (No work-item reads what another work-item of its own group writes.)
__kernel void stencil_inplace(__global int* a, int n) {
  int i = get_global_id(0), w = get_local_size(0);
  int left = i >= w ? a[i - w] : 0;
  int right = i + w < n ? a[i + w] : 0;
  a[i] = left + 2 * a[i] + right;
}

// Each group writes its partial sum; the last group then adds up every group's partial
// result — assuming (wrongly) that the other groups have already finished.
__kernel void reduce_last_group(__global const uint* in, __global uint* partial,
                                __global uint* total, __local uint* tmp) {
  size_t l = get_local_id(0);
  tmp[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    partial[get_group_id(0)] = tmp[0];
    if (get_group_id(0) == get_num_groups(0) - 1) {
      uint sum = 0;
      for (uint g = 0; g < get_num_groups(0); g++) sum += partial[g];
      *total = sum;
    }
  }
}
