#define BUMP(i) A(i) += 1.0f
