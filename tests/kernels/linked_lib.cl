// Library compilation unit linked into the kernel's program by clLinkProgram.
int mix_value(int x) { return x * 3 - 1; }
