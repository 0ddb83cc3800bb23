#!/usr/bin/env python3
"""Interface files for 15 of GEGL's buffer kernels that branch (`if`, `?:`, `switch`, loops
with exits), from `cltrap fuzz --init` plus GEGL's launch conventions: point operations run one
work-item per pixel over a 1-D range (64 pixels in groups of 16), area operations a 2-D range
over the region of interest (16x16 in 8x8 groups) reading an input padded by the operation's
radius; `float4` buffers hold one RGBA pixel per element. Scalars that size the data (strides,
radii, pattern and canvas sizes) are fixed to values GEGL passes; the fuzzer still mutates
every scalar, so out-of-bounds findings on kernels that trust their host are expected.

Usage: gegl_interfaces.py CLTRAP KERNELS_DIR OUT_DIR   (writes OUT_DIR/<file>.<kernel>.json)
"""
import json
import os
import subprocess
import sys

D1 = {"global_size": [64], "local_size": [16]}
D2 = {"global_size": [16, 16], "local_size": [8, 8]}

# (file, kernel): launch, buffer sizes (elements), fixed scalars and buffer contents.
KERNELS = {
    ("gegl_threshold", "gegl_threshold"): (D1, {}, {}),
    ("gegl_value_invert", "gegl_value_invert"): (D1, {}, {}),
    ("cl_color_exchange", "cl_color_exchange"): (D1, {}, {}),
    ("cl_red_eye_removal", "cl_red_eye_removal"): (D1, {}, {}),
    ("gegl_mono_mixer", "gegl_mono_mixer"): (D1, {}, {}),
    ("gegl_opacity_RaGaBaA_float", "gegl_opacity_RaGaBaA_float"): (D1, {}, {}),
    ("shadows_highlights", "shadows_highlights"): (D1, {}, {}),
    # One reduction stage: each item folds n_pixels / 64 pixels, then the group reduces in
    # local memory; the outputs are sized by the work-group (GEGL's own comment).
    ("init_stretch", "two_stages_local_min_max_reduce"): (
        D1, {"in": 256, "out_min": 16, "out_max": 16, "aux_min": 16, "aux_max": 16},
        {"n_pixels": 256}),
    ("kernel_checkerboard", "kernel_checkerboard"): (
        D2, {"out": 256}, {"square_width": 4, "square_height": 4, "x_offset": 0, "y_offset": 0}),
    ("gegl_video_degradation", "gegl_video_degradation"): (
        D2, {"input": 256, "output": 256, "pattern": 9},
        {"pat_w": 3, "pat_h": 3, "additive": 1, "rotated": 0, "pattern": [0, 1, 2, 1, 2, 0, 2, 0, 1]}),
    # RGB + alpha floats per pixel, a 128x128 canvas texture.
    ("cl_texturize_canvas", "cl_texturize_canvas"): (
        D2, {"in": 1024, "out": 1024, "sdata": 16384},
        {"x": 0, "y": 0, "xm": 1, "ym": 128, "offs": 0, "components": 3, "has_alpha": 1}),
    # 8x8 output, input padded by the radius (2) on each side.
    ("snn_mean", "snn_mean"): (
        {"global_size": [8, 8], "local_size": [8, 8]}, {"src_buf": 144, "dst_buf": 64},
        {"src_width": 12, "src_height": 12, "radius": 2, "pairs": 2}),
    # 4x4 blocks of 4x4 pixels: `in` holds one colour per block.
    ("calc_block_color", "kernel_pixelize"): (
        D2, {"in": 16, "out": 256},
        {"xsize": 4, "ysize": 4, "roi_x": 0, "roi_y": 0, "norm": 0, "block_count_x": 4}),
    # GEGL's defaults (circle, radius 1.5, softness 0.8, gamma 2, no rotation, black) on a
    # 16x16 region: length is half its diagonal, radius0 = radius * (1 - softness).
    ("vignette_cl", "vignette_cl"): (
        D2, {"in": 256, "out": 256},
        {"roi_x": 0, "roi_y": 0, "midx": 8, "midy": 8, "o_shape": 0, "scale": 1.0, "cost": 1.0,
         "sint": 0.0, "gamma": 2.0, "length": 11.3, "radius0": 0.3, "rdiff": 1.2,
         "color": [0.0, 0.0, 0.0, 1.0]}),
    # 16x16 output, input padded by one pixel on each side.
    ("noise_reduction_cl", "noise_reduction_cl"): (
        D2, {"src_buf": 324, "dst_buf": 256}, {"src_stride": 18, "dst_stride": 16}),
}


def main():
    cltrap, src_dir, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    for (f, k), (launch, sizes, fixed) in sorted(KERNELS.items()):
        r = subprocess.run([cltrap, "fuzz", os.path.join(src_dir, f + ".cl"), "--init", "--kernel", k],
                           capture_output=True, text=True, check=True)
        spec = json.loads(r.stdout)
        spec.update(launch)
        for a in spec["args"]:
            if a["name"] in sizes:
                a["size"] = sizes[a["name"]]
            elif "size" in a:
                a["size"] = 64 if launch is D1 else 256
            if a["name"] in fixed:
                a["fill"] = {"fixed": fixed[a["name"]]}
        with open(os.path.join(out_dir, f"{f}.{k}.json"), "w") as fh:
            json.dump(spec, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
