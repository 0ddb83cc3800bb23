// Schedule-independent: every work-item writes its own ids. Permuting the groups must give
// exactly the same output (every logical work-item runs once with consistent ids).
#define GID(d) get_global_id(d)
uint group_linear(void) { return (uint)(get_group_id(0) + get_num_groups(0) * (get_group_id(1) + get_num_groups(1) * get_group_id(2))); }
uint tag(uint x) { return x * 7u + group_linear(); }
__kernel void ids(__global uint* out) {
  size_t w = get_global_size(0), h = get_global_size(1);
  size_t x = GID(0) - get_global_offset(0), y = get_global_id(1) - get_global_offset(1), z = get_global_id(2) - get_global_offset(2);
  size_t i = (z * h + y) * w + x;
  out[4 * i] = (uint)GID(0);
  out[4 * i + 1] = (uint)(get_global_id(1) * 1000 + get_global_id(2));
  out[4 * i + 2] = (uint)(get_group_id(0) + 100 * get_group_id(1) + 10000 * get_group_id(2));
  out[4 * i + 3] = tag((uint)get_local_id(0));
}
