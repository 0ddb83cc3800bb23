#!/usr/bin/env python3
"""Writes GEGL's OpenCL kernels out of its shared libraries, one `.cl` file per source string.

GEGL (LGPL-3 / GPL-3) compiles each operation's OpenCL source (`operations/*/*.cl`, turned into
`*.cl.h` string headers at build time) into its operation modules as one string literal; this
reads every printable run of at least 200 bytes that holds a `__kernel` out of the modules of
Debian's `libgegl-0.4-0` package and writes it as `<first kernel>.cl` (a second source whose
first kernel has the same name gets `_2`). The padding GEGL's header generator puts at the end
of every line is stripped; nothing else is changed.

Usage: gegl_extract.py OUT_DIR LIBRARY...
"""
import os
import re
import sys


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seen = set()
    for lib in sys.argv[2:]:
        data = open(lib, "rb").read()
        for m in re.finditer(rb"[\x09\x0a\x0d\x20-\x7e]{200,}", data):
            text = m.group(0).decode("ascii")
            names = re.findall(r"__kernel\s+void\s+(\w+)", text)
            if not names:
                continue
            name = names[0]
            n = 2
            while name in seen:
                name = f"{names[0]}_{n}"
                n += 1
            seen.add(name)
            lines = [l.rstrip() for l in text.splitlines()]
            with open(os.path.join(out, name + ".cl"), "w") as fh:
                fh.write("\n".join(lines).strip("\n") + "\n")


if __name__ == "__main__":
    main()
