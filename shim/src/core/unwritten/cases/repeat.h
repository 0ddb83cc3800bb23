#define REPEAT4(M) M(0) M(1) M(2) M(3)
