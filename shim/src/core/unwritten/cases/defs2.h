#define STORE(x) x = 1.0f
