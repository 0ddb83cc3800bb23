#define N 64
#define SQ(x) ((x)*(x))
#define CHECK(v) if ((v) < N) out[0].w = 1.0f;
#define KERNEL __kernel
typedef struct { float a; int b; } S;
__constant int tab[4] = {1, 2, 3, 4};
int helper(int x) { return x > 2 ? SQ(x) : -x; }
KERNEL void k(__global float4* out, __global const S* s, int n, __local int* tmp) {
  size_t i = get_global_id(0);
  if (i >= n && n != 0) return;
  float4 v = (float4)(1.0f, 2.0f, 3.0f, 4.0f);
  v.xy = v.zw;
  for (int j = 0; j < N; ++j) { v.x += tab[j & 3]; }
  switch (n) { case 1: v.y = 1; case 2: break; default: v.z = 2; }
  CHECK(n)
  tmp[0] = n;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = v * (float)helper(s[i].b);
  i += 3; i = ~i; int q = -n; q++;
}
