/* Includes resolved as the driver resolves them at build time: "./main.h" from the
 * application's working directory, <defs.h> from an -I directory, and defs.h's own nested
 * include relative to itself. The absent header sits in a branch the build never takes. */
#include "./main.h"
#include <defs.h>
#ifdef NEVER_DEFINED
#include "absent.h"
#endif
/* A header named through macros, as hashcat names all of its own
 * (`#include M2S(INCLUDE_PATH/inc_vendor.h)`, the directory given by -D). */
#define XM2S(x) #x
#define M2S(x) XM2S(x)
#ifdef EXTRA_DIR
#include M2S(EXTRA_DIR/extra.h)
#else
#define EXTRA 0
#endif

kernel void scaled(global int *a) {
    int i = get_global_id(0);
    int v = SCALE * a[i] + OFFSET + EXTRA;
    if (v > LIMIT)
        v = LIMIT;
    a[i] = v;
}
