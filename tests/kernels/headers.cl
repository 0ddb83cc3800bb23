/* Includes resolved as the driver resolves them at build time: "./main.h" from the
 * application's working directory, <defs.h> from an -I directory, and defs.h's own nested
 * include relative to itself. The absent header sits in a branch the build never takes. */
#include "./main.h"
#include <defs.h>
#ifdef NEVER_DEFINED
#include "absent.h"
#endif

kernel void scaled(global int *a) {
    int i = get_global_id(0);
    int v = SCALE * a[i] + OFFSET;
    if (v > LIMIT)
        v = LIMIT;
    a[i] = v;
}
