#!/usr/bin/env python3
"""First drafts of the interface files for darktable's buffer kernels (those without image or
sampler arguments: images can only come from a captured launch), from `cltrap fuzz --init`
plus darktable's launch conventions: a 16x16 image in 8x8 work-groups (darktable launches
2-D ranges over width x height and checks `x >= width || y >= height`), float buffers of 4
channels per pixel, float4 buffers of one element per pixel, bilateral grids of 8x8x8 cells,
reductions over 64 elements, generous `local` buffers. Scalars that size the data are fixed
(`width`, `height`, `border`, ...); the fuzzer still mutates them. The drafts were then read
against each kernel and corrected by hand where the rule is wrong (`OVERRIDES`).

Usage: darktable_interfaces.py CLTRAP KERNELS_DIR OUT_DIR
"""
import json
import os
import re
import subprocess
import sys

W = H = 16
FIXED = {"width": W, "height": H, "border": 2, "length": 64, "P": 1, "q": [1, 1], "d": 1,
         "sc": 1, "blocksize": 8, "offset1": 1, "offset2": 8, "offset3": 64, "size1": 8,
         "size2": 8, "size3": 8, "rin_x": 0, "rin_y": 0, "sgreen": [1, 0], "dir": [1, 0],
         "hcomp": 0, "xoffs": 0, "yoffs": 0}

# Per kernel: global/local size and per-argument (size or fill) corrections.
OVERRIDES = {
    "zero": {"global_size": [8, 64], "local_size": [8, 8]},
    "colorreconstruction_zero": {"global_size": [8, 64], "local_size": [8, 8]},
    # blur_line*: one work-item per line of the 8x8x8 grid: size1 x size2 items.
    "blur_line": {"global_size": [8, 8], "local_size": [8, 8]},
    "blur_line_z": {"global_size": [8, 8], "local_size": [8, 8]},
    "colorreconstruction_blur_line": {"global_size": [8, 8], "local_size": [8, 8]},
    "green_equilibration_favg_reduce_second": {"global_size": [64], "local_size": [64]},
    "denoiseprofile_reduce_second": {"global_size": [64], "local_size": [64]},
    "gaussian_column_4c": {"global_size": [16], "local_size": [8]},
    "gaussian_column_1c": {"global_size": [16], "local_size": [8]},
}


def main():
    cltrap, src_dir, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    for f in sorted(os.listdir(src_dir)):
        if not f.endswith(".cl"):
            continue
        src = open(os.path.join(src_dir, f)).read()
        for m in re.finditer(r"\bkernel\s+void\s+(\w+)\s*\(([^)]*)\)", src):
            if "image" in m.group(2) or "sampler" in m.group(2):
                continue
            k = m.group(1)
            r = subprocess.run([cltrap, "fuzz", os.path.join(src_dir, f), "--init", "--kernel", k],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"skip {f}:{k}: {r.stderr.strip()[:200]}", file=sys.stderr)
                continue
            spec = json.loads(r.stdout)
            spec["global_size"] = [W, H]
            spec["local_size"] = [8, 8]
            for a in spec["args"]:
                ty = a["type"]
                if "*" in ty and "__local" in ty:
                    a["size"] = 1024
                elif "*" in ty:
                    pixels = W * H
                    if "float4" in ty or "float2" in ty or "dt_iop_roi_t" in ty:
                        n = pixels
                    elif "unsigned char (*" in ty:
                        n = 6  # the 6x6 X-Trans pattern: six rows of unsigned char[6]
                    else:
                        n = pixels * 4
                    if "dt_iop_roi_t" in ty:
                        n = 1
                    if "unsigned char (*" in ty:
                        a["elem_bytes"] = 6  # one row: unsigned char[6]
                    if "char2 (*" in ty:
                        n, a["elem_bytes"] = 2, 48  # allhex[2][3][8] of char2
                    if a["name"] in ("grid", "ibuf", "obuf"):
                        n = 8 * 8 * 8
                    a["size"] = n
                elif a["name"] in FIXED:
                    a["fill"] = {"fixed": FIXED[a["name"]]}
            o = OVERRIDES.get(k, {})
            for key in ("global_size", "local_size"):
                if key in o:
                    spec[key] = o[key]
            with open(os.path.join(out_dir, f"{f[:-3]}.{k}.json"), "w") as fh:
                json.dump(spec, fh, indent=2)
                fh.write("\n")


if __name__ == "__main__":
    main()
