// Every statement's line gets an LCOV DA record, counted by the block that holds it: with
// n = 2 the then side, `never`, `case 1` and `default` do not run; `twice` runs.
int twice(int v) {
  int w = v * 2;
  return w;
}
int never(int v) {
  return v + 1;
}
__kernel void lines(__global int* o, int n) {
  int i = get_global_id(0);
  int s = 0;
  if (n > 100) {
    s = never(n);
    s += 1;
  } else {
    s = twice(n);
  }
  switch (n) {
  case 1:
    s += 1;
  case 2:
    s += 2;
    break;
  default:
    s -= 1;
    s -= 2;
  }
  for (int k = 0; k < n; k++)
    s += k;
  o[i] = s;
}
