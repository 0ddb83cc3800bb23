// OpenCL C 2.0 non-uniform work-groups: the last group of each dimension may be smaller.
__kernel void partial(__global uint* out) {
  size_t i = get_global_linear_id();
  out[2 * i] = (uint)(get_global_id(0) + 1000 * get_global_id(1));
  out[2 * i + 1] = (uint)(get_group_id(0) + 100 * get_group_id(1) + 10000 * get_local_size(0) + 100000 * get_local_size(1));
}
