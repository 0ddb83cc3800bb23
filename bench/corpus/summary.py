#!/usr/bin/env python3
"""Per-kernel rows and computed totals of a bench/corpus.sh run (its work folder).

A kernel's row comes from what the run left: `rc` and `fuzz.err` of `cltrap fuzz`, the suite's
`fuzz.json` (slot statuses, cases, findings), `wall`, `cover.json` of `cltrap cover` replaying
the suite, and `mutate.txt` when the kernel was in the mutation sample. A suite with cases
*agrees* when the slots fuzz reports covered (every slot: sides, loop and &&/|| slots) are
exactly the items cover's replay of the suite hits, among fuzz's slots. The sides counted against the targets are those of if / ?: / switch
(labels `if (...)`, `?: (...)`, `case ...`, `default`, `switch (...) no case matched`); loop
and &&/|| slots are counted apart. `--row P/N` prints one row; without it, the table of every
kernel, the per-project and total lines, the targets, and `summary.json`.
"""
import json
import os
import re
import statistics
import sys

SIDE = re.compile(r"^(if \(|\?: \(|case |default|switch \(.*\) no case matched)")
COVERED = ("covered_by_fuzzing", "solved_and_confirmed")


def status_of(s):
    return s["status"]


def _key(x):
    return (x["line"], x["col"], x["label"])


def agreement(d, fj):
    """Whether what `cltrap fuzz` reports covered equals what `cltrap cover` measures on the
    suite: {"cover_checked": bool, "cover_agrees": bool, "cover_diff": [str]}; checked only for
    a suite with cases."""
    out = {"cover_checked": False, "cover_agrees": False, "cover_diff": [],
           "fuzz_slots_covered": 0, "cover_slots_hit": 0}
    if not os.path.exists(fj):
        return out
    k = json.load(open(fj))["kernels"][0]
    if not k.get("cases"):
        return out
    out["cover_checked"] = True
    claimed = {_key(s) for s in k["slots"] if s["status"] in COVERED}
    slots = {_key(s) for s in k["slots"]}
    out["fuzz_slots_covered"] = len(claimed)
    cj = os.path.join(d, "cover.json")
    rc_file = os.path.join(d, "cover.rc")
    rc = int(open(rc_file).read().strip() or 0) if os.path.exists(rc_file) else None
    if not os.path.exists(cj):
        out["cover_diff"] = [f"cltrap cover wrote no report (exit {rc})"]
        return out
    c = json.load(open(cj))
    hit = set()
    mapped = set()
    failed = [p for p in c.get("problems", [])]
    for p in c["programs"]:
        for ck in p["kernels"]:
            if ck["kernel"] != k["kernel"]:
                continue
            for it in ck["items"]:
                mapped.add(_key(it))
                if it.get("hit"):
                    hit.add(_key(it))
    hit &= slots
    out["cover_slots_hit"] = len(hit)
    diff = [f"fuzz covered, cover not: {l}:{c_} {lab}" for (l, c_, lab) in sorted(claimed - hit)]
    diff += [f"cover hit, fuzz not: {l}:{c_} {lab}" for (l, c_, lab) in sorted(hit - claimed)]
    diff += [f"cover problem: {str(p)[:120]}" for p in failed]
    out["cover_diff"] = diff
    out["cover_agrees"] = not diff
    return out


def row(work, project, name):
    d = os.path.join(work, project, name)
    r = {"project": project, "kernel": name}
    rc = int(open(os.path.join(d, "rc")).read().strip() or 0)
    err = open(os.path.join(d, "fuzz.err"), errors="replace").read()
    r["wall_s"] = float(open(os.path.join(d, "wall")).read())
    r["rc"] = rc
    r["panic"] = "panicked" in err
    r["hang"] = rc in (124, 137)
    r["crash"] = rc > 128 and not r["hang"]
    fj = os.path.join(d, "suite", "fuzz.json")
    r["ran"] = False
    r["built"] = False
    r["sides"] = r["covered"] = r["dead"] = r["unsupported"] = r["open"] = 0
    r["other_slots"] = r["other_covered"] = 0
    r["cases"] = r["findings"] = 0
    r["unsupported_what"] = []
    r["open_why"] = []
    if os.path.exists(fj):
        k = json.load(open(fj))["kernels"][0]
        r["built"] = k.get("compiles", 1) > 0
        r["ran"] = k.get("executions", 0) > 0
        r["cases"] = len(k.get("cases", []))
        r["findings"] = len(k.get("findings", []))
        for s in k["slots"]:
            st = status_of(s)
            if SIDE.match(s["label"]):
                r["sides"] += 1
                if st in COVERED:
                    r["covered"] += 1
                elif st == "unsatisfiable":
                    r["dead"] += 1
                else:
                    r["open"] += 1
                    if st == "unsupported":
                        r["unsupported"] += 1
                        r["unsupported_what"].append(s.get("what", ""))
                    else:
                        r["open_why"].append(st + (": " + s["why"] if "why" in s else ""))
            else:
                r["other_slots"] += 1
                r["other_covered"] += st in COVERED
    r.update(agreement(d, fj))
    feasible = r["sides"] - r["dead"]
    r["coverage"] = 1.0 if feasible == 0 else r["covered"] / feasible
    # `cltrap fuzz` names a kernel it could not fuzz on stdout (`kernel K: ...`), other
    # errors on stderr.
    txt = open(os.path.join(d, "fuzz.txt"), errors="replace").read()
    said = [l for l in txt.splitlines() if l.startswith("kernel ") and ":" in l]
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("  ")]
    r["error"] = "" if r["ran"] else (said or lines or [f"exit {rc}"])[-1][:160]
    if not r["ran"] and not r["hang"] and not r["crash"]:
        r["built"] = not re.search(r"build|compil|parse|libclang|unsupported", r["error"], re.I)
    m = os.path.join(d, "mutate.txt")
    r["mutation_score"] = None
    mrc = os.path.join(d, "mutate.rc")
    r["mutate_rc"] = int(open(mrc).read().strip() or 0) if os.path.exists(mrc) else None
    # `cltrap mutate` killed by a signal of its own (abort, segfault): an analyzer crash.
    r["mutate_crash"] = r["mutate_rc"] is not None and r["mutate_rc"] > 128 and r["mutate_rc"] != 137
    # Still working at the benchmark's limit (its state file grows): not scored.
    r["mutate_over_limit"] = r["mutate_rc"] in (124, 137)
    if os.path.exists(m):
        for l in open(m, errors="replace"):
            if l.startswith("total"):
                r["mutation_score"] = float(l.split()[-1].rstrip("%")) / 100
                break
    return r


def fmt(r):
    cov = f"{100 * r['coverage']:5.1f}%" if r["ran"] else "   -  "
    ms = "" if r["mutation_score"] is None else f" mut {100 * r['mutation_score']:.1f}%"
    flags = "".join(f" {f.upper()}" for f in ("panic", "hang", "crash", "mutate_crash", "mutate_over_limit") if r[f])
    if r["cover_checked"]:
        flags += " fuzz==cover" if r["cover_agrees"] else " FUZZ!=COVER"
    state = "ran" if r["ran"] else ("built" if r["built"] else "NOT BUILT")
    line = (f"{r['project'] + '/' + r['kernel']:<70} {state:<9} cases {r['cases']:>3} "
            f"sides {r['covered']:>3}/{r['sides']:<3} dead {r['dead']:>2} unsup {r['unsupported']:>2} "
            f"{cov} findings {r['findings']:>2} {r['wall_s']:6.1f}s{ms}{flags}")
    if r["error"]:
        line += f"\n    {r['error']}"
    for d in r["cover_diff"][:5]:
        line += f"\n    {d}"
    return line


def _share(values):
    return sum(values) / len(values) if values else 0


def totals(rows, label):
    built = [r for r in rows if r["built"] or r["ran"]]
    ran = [r for r in rows if r["ran"]]
    sides = sum(r["sides"] for r in ran)
    muts = [r["mutation_score"] for r in rows if r["mutation_score"] is not None]
    walls = [r["wall_s"] for r in rows]
    return {
        "label": label,
        "kernels": len(rows),
        "built": len(built),
        "ran": len(ran),
        "cases": sum(r["cases"] for r in rows),
        "sides": sides,
        "covered": sum(r["covered"] for r in ran),
        "dead": sum(r["dead"] for r in ran),
        "unsupported": sum(r["unsupported"] for r in ran),
        "open": sum(r["open"] for r in ran),
        "findings": sum(r["findings"] for r in rows),
        "full_coverage_share": (sum(r["coverage"] >= 1.0 for r in ran) / len(built)) if built else 0,
        "mean_coverage": (sum(r["coverage"] for r in ran) / len(built)) if built else 0,
        "unsupported_share": (sum(r["unsupported"] for r in ran) / sides) if sides else 0,
        # The same two shares over the kernels that have at least one side (a kernel without
        # any branch counts as fully covered above).
        "with_sides": len([r for r in ran if r["sides"]]),
        "with_sides_full_share": _share([r["coverage"] >= 1.0 for r in ran if r["sides"]]),
        "with_sides_mean_coverage": _share([r["coverage"] for r in ran if r["sides"]]),
        "median_wall_s": statistics.median(walls) if walls else 0,
        "total_wall_s": sum(walls),
        "crashes_panics_hangs": sum(r["panic"] or r["hang"] or r["crash"] or r["mutate_crash"] for r in rows),
        "mutate_over_limit": sum(r["mutate_over_limit"] for r in rows),
        "cover_checked": sum(r["cover_checked"] for r in rows),
        "cover_agrees": sum(r["cover_checked"] and r["cover_agrees"] for r in rows),
        "mutated": len(muts),
        "mean_mutation_score": (sum(muts) / len(muts)) if muts else None,
    }


def fmt_total(t):
    mut = "-" if t["mean_mutation_score"] is None else f"{100 * t['mean_mutation_score']:.1f}% of {t['mutated']}"
    return (f"{t['label']:<12} kernels {t['kernels']:>3} built {t['built']:>3} ran {t['ran']:>3} "
            f"cases {t['cases']:>4} sides {t['covered']}/{t['sides']} dead {t['dead']} "
            f"unsup {t['unsupported']} ({100 * t['unsupported_share']:.1f}%) open {t['open']} | "
            f"full {100 * t['full_coverage_share']:.1f}% mean {100 * t['mean_coverage']:.1f}% "
            f"(of the {t['with_sides']} with sides: full {100 * t['with_sides_full_share']:.1f}% "
            f"mean {100 * t['with_sides_mean_coverage']:.1f}%) | "
            f"findings {t['findings']} | median {t['median_wall_s']:.1f}s total {t['total_wall_s']:.0f}s | "
            f"crash/panic/hang {t['crashes_panics_hangs']} | fuzz==cover {t['cover_agrees']}/{t['cover_checked']} | mutation {mut}"
            + (f" ({t['mutate_over_limit']} over the limit)" if t["mutate_over_limit"] else ""))


def main():
    work = sys.argv[1]
    if len(sys.argv) > 3 and sys.argv[2] == "--row":
        project, name = sys.argv[3].split("/", 1)
        print(fmt(row(work, project, name)), flush=True)
        return
    rows = []
    for project in sorted(os.listdir(work)):
        p = os.path.join(work, project)
        if not os.path.isdir(p):
            continue
        for name in sorted(os.listdir(p)):
            if os.path.exists(os.path.join(p, name, "rc")):
                rows.append(row(work, project, name))
    projects = sorted({r["project"] for r in rows})
    per = [totals([r for r in rows if r["project"] == p], p) for p in projects]
    total = totals(rows, "total")
    print()
    for t in per + [total]:
        print(fmt_total(t))
    t = total
    mut = t["mean_mutation_score"]
    targets = [
        ("kernels that build reaching 100% of feasible sides >= 95%", t["full_coverage_share"] >= 0.95,
         f"{100 * t['full_coverage_share']:.1f}%"),
        ("mean coverage of feasible sides >= 97%", t["mean_coverage"] >= 0.97, f"{100 * t['mean_coverage']:.1f}%"),
        ("unsupported sides <= 2%", t["unsupported_share"] <= 0.02, f"{100 * t['unsupported_share']:.1f}%"),
        ("median time per kernel <= 2 s", t["median_wall_s"] <= 2, f"{t['median_wall_s']:.1f} s"),
        ("zero analyzer crashes, panics, hangs", t["crashes_panics_hangs"] == 0, str(t["crashes_panics_hangs"])),
        ("every suite's fuzz coverage equals cover's replay of it", t["cover_agrees"] == t["cover_checked"],
         f"{t['cover_agrees']} of {t['cover_checked']} suites"),
        ("mean mutation score >= 75%", mut is not None and mut >= 0.75,
         "-" if mut is None else f"{100 * mut:.1f}% ({t['mutated']} suites)"),
    ]
    print()
    for what, ok, val in targets:
        print(f"{'MET    ' if ok else 'NOT MET'} {what}: {val}")
    reasons = {}
    for r in rows:
        if r["mutate_crash"]:
            key = f"cltrap mutate killed by signal {r['mutate_rc'] - 128}"
            reasons[key] = reasons.get(key, 0) + 1
        if r["mutate_over_limit"]:
            reasons["cltrap mutate over the time limit"] = reasons.get("cltrap mutate over the time limit", 0) + 1
        if not r["ran"]:
            key = re.sub(r"`[^`]*`|'[^']*'|\d+|^kernel \w+", "_", r["error"])[:90]
            reasons[key] = reasons.get(key, 0) + 1
        for w in r["unsupported_what"]:
            key = "unsupported side: " + re.sub(r" at line.*|\d+", "_", w)[:80]
            reasons[key] = reasons.get(key, 0) + 1
        for w in r["open_why"]:
            key = "open side: " + re.sub(r"`[^`]*`|'[^']*'|\d+", "_", w)[:80]
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        print("\nlosses (kernels not run, unsupported sides), by cause:")
        for k, n in sorted(reasons.items(), key=lambda x: -x[1]):
            print(f"  {n:>4}  {k}")
    print(f"\nfuzz == cover on {t['cover_agrees']} of {t['cover_checked']} suites; mean mutation score "
          + ("-" if mut is None else f"{100 * mut:.1f}%") + f" over {t['mutated']} suites")
    with open(os.path.join(work, "summary.json"), "w") as fh:
        json.dump({"kernels": rows, "projects": per, "total": total,
                   "targets": [{"target": w, "met": ok, "value": v} for w, ok, v in targets]},
                  fh, indent=1)
    print(f"\n{os.path.join(work, 'summary.json')}")


if __name__ == "__main__":
    main()
