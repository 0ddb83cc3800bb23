// Header handed to clCompileProgram through input_headers (never read from disk by the build).
#define MIX_OFFSET 7
int mix_value(int x);
