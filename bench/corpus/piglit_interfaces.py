#!/usr/bin/env python3
"""Draft interface files for piglit's OpenCL execute tests from piglit's own launch
configurations (the `[test]` sections in each file's header comment): the first test of each
kernel gives the global/local size, every buffer's element count and every scalar's value.

The types and roles come from `cltrap fuzz FILE --init --kernel K`; piglit's values seed the
campaign (buffers of `repeat V` or listed values become fixed fills, `random` stays random;
output buffers start random, as `--init` writes them). Values JSON cannot hold (nan, inf) fall back to random.

Usage: piglit_interfaces.py CLTRAP SRC_DIR OUT_DIR   (writes OUT_DIR/<file>.<kernel>.json)
"""
import json
import os
import re
import subprocess
import sys


def header(src):
    m = re.search(r"/\*!(.*?)!\*/", src, re.S)
    return m.group(1) if m else None


def sections(text):
    """[(name, {key: [values...]})] with continuation lines joined."""
    text = re.sub(r"\\\s*\n", " ", text)
    out = []
    cur = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            cur = (m.group(1), {})
            out.append(cur)
            continue
        if cur is None or ":" not in line:
            continue
        k, v = line.split(":", 1)
        cur[1].setdefault(k.strip(), []).append(v.strip())
    return out


def number(word, is_float):
    w = word.strip().lower()
    try:
        if is_float:
            if w.startswith("0x") and "p" not in w:
                return float(int(w, 16))
            x = float.fromhex(w) if "p" in w else float(w)
            if x != x or x in (float("inf"), float("-inf")):
                return None
            return x
        return int(w, 0)
    except ValueError:
        return None


FLOATS = ("float", "double", "half")


def fill_of(ty, values, n_items):
    is_float = any(ty.startswith(f) for f in FLOATS)
    words = values.split()
    if not words or words[0] == "random":
        return "random"
    if words[0] == "repeat":
        vals = [number(w, is_float) for w in words[1:]]
        if not vals or None in vals:
            return "random"
        if len(vals) == 1:
            return {"fixed": vals[0]}
        reps = (n_items + len(vals) - 1) // len(vals)
        return {"fixed": (vals * reps)[:n_items]}
    vals = [number(w, is_float) for w in words]
    if None in vals:
        return "random"
    if len(vals) == n_items:
        return {"fixed": vals}
    if len(vals) == 1:
        return {"fixed": vals[0]}
    return "random"


def vec_lanes(ty):
    m = re.match(r"^(u?char|u?short|u?int|u?long|float|double|half)(\d+)?$", ty)
    if not m:
        return 1
    return int(m.group(2)) if m.group(2) else 1


def main():
    cltrap, src_dir, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    made = 0
    for root, _, files in os.walk(src_dir):
        for f in sorted(files):
            if not f.endswith(".cl"):
                continue
            path = os.path.join(root, f)
            src = open(path, encoding="utf-8", errors="replace").read()
            h = header(src)
            if not h:
                continue
            secs = sections(h)
            config = {}
            for name, kv in secs:
                if name == "config":
                    config = kv
            if config.get("need_image_support") or config.get("program_source_file"):
                continue
            seen = set()
            for name, kv in secs:
                if name != "test" or "kernel_name" not in kv:
                    continue
                kernel = kv["kernel_name"][0]
                if kernel in seen:
                    continue
                seen.add(kernel)
                opts = " ".join(config.get("build_options", []))
                cmd = [cltrap, "fuzz", path, "--init", "--kernel", kernel]
                if opts:
                    cmd += ["--build-options", opts]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"skip {f}:{kernel}: {r.stderr.strip()[:200]}", file=sys.stderr)
                    continue
                spec = json.loads(r.stdout)
                dims = int(kv.get("dimensions", ["1"])[0])
                g = [int(x, 0) for x in kv.get("global_size", ["1 0 0"])[0].split()][:dims]
                spec["global_size"] = g
                if "local_size" in kv:
                    spec["local_size"] = [int(x, 0) for x in kv["local_size"][0].split()][:dims]
                else:
                    spec["local_size"] = None
                for key in ("arg_in", "arg_out"):
                    for v in kv.get(key, []):
                        m = re.match(r"^(\d+)\s+buffer\s+(\w+)\[(\d+)\]\s*(.*)$", v)
                        if m:
                            i, ty, n, vals = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
                            if i >= len(spec["args"]):
                                continue
                            a = spec["args"][i]
                            a["size"] = n
                            if key == "arg_out":
                                a["output"] = True
                                if not any(k.startswith("arg_in") and re.match(rf"^{i}\s", x)
                                           for k in ("arg_in",) for x in kv.get(k, [])):
                                    a["fill"] = "random"
                            else:
                                a["fill"] = fill_of(ty, vals, n * vec_lanes(ty))
                            continue
                        m = re.match(r"^(\d+)\s+(\w+)\s+(.*)$", v)
                        if m and key == "arg_in":
                            i, ty, vals = int(m.group(1)), m.group(2), m.group(3)
                            if i < len(spec["args"]):
                                spec["args"][i]["fill"] = fill_of(ty, vals, vec_lanes(ty))
                rel = os.path.relpath(path, src_dir).replace("/", "_")
                out = os.path.join(out_dir, f"{rel[:-3]}.{kernel}.json")
                with open(out, "w") as fh:
                    json.dump(spec, fh, indent=2)
                    fh.write("\n")
                made += 1
    print(f"{made} interface files", file=sys.stderr)


if __name__ == "__main__":
    main()
