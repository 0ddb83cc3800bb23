#!/usr/bin/env python3
"""Byte accounting of one cltrap capture directory, for bench/run.sh.

Prints one JSON object:
  launches        complete launch records
  content_total   bytes of every recorded buffer/image content (before + after, duplicates counted)
  content_unique  bytes of the distinct contents among them (by digest)
  content_on_disk bytes of blob files that hold buffer/image contents (whole blobs, chunk
                  indexes, compressed chunks of format 2 and 3 and packs of format 4)
  other_on_disk   bytes of the other blobs (program sources, program records)
  log_bytes       size of launches.jsonl + manifest.json
  written         everything under the capture directory
The dedup target is content_on_disk <= content_unique.
"""
import json
import os
import sys


def patch(target, p):
    """Applies a launch-log merge patch (docs/src/capture-format.md, "Delta lines")."""
    if not isinstance(p, dict):
        return p
    if isinstance(target, list):
        out = list(target)
        for k, v in p.items():
            out[int(k)] = patch(out[int(k)], v)
        return out
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in p.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = patch(out.get(k), v)
    return out


def resolved(lines):
    """Whole launch records of a log's complete lines; delta lines applied to their base."""
    tails = {}
    for line in lines:
        if not line.endswith(b"\n"):
            break
        rec = json.loads(line)
        if "base" in rec and "patch" in rec and "kernel" not in rec:
            rec = dict(patch(tails.pop(rec["base"]), rec["patch"]), id=rec["id"])
        tails[rec["id"]] = rec
        yield rec


def main(cap):
    hashes = {}
    total = 0
    launches = 0
    log = os.path.join(cap, "launches.jsonl")
    with open(log, "rb") as f:
        for line in resolved(f):
            rec = line
            launches += 1
            for arg in rec.get("args", []):
                for side in ("before", "after"):
                    c = arg.get(side)
                    if isinstance(c, dict) and c.get("kind") in ("blob", "digest"):
                        total += c["size"]
                        hashes[c["hash"]] = c["size"]
    on_disk = other = 0
    blobs = os.path.join(cap, "blobs")
    for root, _dirs, files in os.walk(blobs):
        for name in files:
            size = os.path.getsize(os.path.join(root, name))
            if name in hashes or name.endswith((".chunk", ".chunks", ".pack")):
                on_disk += size
            else:
                other += size
    log_bytes = os.path.getsize(log) + os.path.getsize(os.path.join(cap, "manifest.json"))
    written = 0
    for root, _dirs, files in os.walk(cap):
        for name in files:
            written += os.path.getsize(os.path.join(root, name))
    print(json.dumps({
        "launches": launches,
        "content_total": total,
        "content_unique": sum(hashes.values()),
        "content_on_disk": on_disk,
        "other_on_disk": other,
        "log_bytes": log_bytes,
        "written": written,
    }))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: capstats.py CAPTURE_DIR")
    main(sys.argv[1])
