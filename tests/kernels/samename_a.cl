// `scale` of the first program of tests/apps/samename.c (the second has another `scale`).
__kernel void scale(__global int* o, int n) {
  int i = get_global_id(0);
  if (n > 3) o[i] = i * n; else o[i] = -i;
}
