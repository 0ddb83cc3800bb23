// Race-free kernels: whatever the order of work-groups, their outputs are the same.
// `cltrap replay --schedules` must never flag them.

__kernel void vadd(__global const float* a, __global const float* b, __global float* c, uint n) {
  size_t i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}

#define TS 4
// C = A * B, n x n, tiles of TS x TS in local memory, synchronised with barriers.
__kernel void matmul_tiled(__global const float* A, __global const float* B, __global float* C,
                           int n) {
  __local float As[TS][TS];
  __local float Bs[TS][TS];
  int row = get_global_id(1), col = get_global_id(0);
  int lr = get_local_id(1), lc = get_local_id(0);
  float acc = 0.0f;
  for (int t = 0; t < n / TS; t++) {
    As[lr][lc] = A[row * n + t * TS + lc];
    Bs[lr][lc] = B[(t * TS + lr) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; k++) acc += As[lr][k] * Bs[k][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  C[row * n + col] = acc;
}

// One partial sum per work-group, a tree reduction in local memory with barriers.
__kernel void reduce_local(__global const uint* in, __global uint* partial, __local uint* tmp) {
  size_t l = get_local_id(0);
  tmp[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = tmp[0];
}
