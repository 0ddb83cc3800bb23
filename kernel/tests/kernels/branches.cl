// Known branch coverage for mode = 1 over 4 work-items (x = 0..3):
//   switch: case 1 taken (x = 1), falls through into case 2; case 3 never; no default
//   written, so "no case matched" is taken (x = 0, 3). `?:` true and false. `||`: left true
//   (x = 0) and false; right true (x = 3) and false (x = 1, 2). do-while runs once for x < 2
//   and more than once for x >= 2; the while loop never runs.
__kernel void branches(__global int* out, int mode) {
  int x = (int)get_global_id(0);
  int acc = 0;
  switch (x) {
    case 1:
      acc += 1;
    case 2:
      acc += 2;
      break;
    case 5:
      acc = -1;
      break;
  }
  acc += (x > 1) ? 10 : 20;
  if (x == 0 || x == mode + 2) acc += 100;
  int k = 0;
  do { k++; } while (k < x);
  while (mode > 5) { mode--; }
  out[x] = acc + k;
}
