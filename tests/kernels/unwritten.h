/* Macros of tests/kernels/unwritten.cl that write what they are given. */
#define BUMP(p, i) (p)[i] += 1
#define INC(x) x += 1
