// `scale` of the second program of tests/apps/samename.c: same name, other body.
__kernel void scale(__global int* o, int n) {
  int i = get_global_id(0);
  o[i] = (i & 1) ? i + n : i - n;
}
