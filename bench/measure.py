#!/usr/bin/env python3
"""Runs a command and reports its wall time and peak RSS, for bench/run.sh.

Usage: measure.py OUTFILE COMMAND [ARGS...]
Writes "WALL_SECONDS MAXRSS_KB" to OUTFILE; the command's stdout and stderr pass through and its
exit status is ours. Peak RSS is getrusage(RUSAGE_CHILDREN).ru_maxrss (kB on Linux): the largest
resident set of any waited-for descendant, i.e. the application, also when `cltrap run` starts it.
Used instead of /usr/bin/time so machines without the `time` package can run the benchmarks.
"""
import resource
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: measure.py OUTFILE COMMAND [ARGS...]")
    start = time.monotonic()
    status = subprocess.call(sys.argv[2:])
    wall = time.monotonic() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(sys.argv[1], "w") as f:
        f.write(f"{wall:.3f} {rss}\n")
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
