#define A(i) in[i]
