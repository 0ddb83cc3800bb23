// Records in which order logical work-groups ran: run with one PoCL thread, group p runs p-th,
// so order[logical group] = physical group = the inverse of the permutation table.
__kernel void order(__global uint* order, __global uint* ticket) {
  if (get_local_id(0) == 0) order[get_group_id(0)] = atomic_inc(ticket);
}
