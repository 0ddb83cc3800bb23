//! LCOV tracefile output for coverage results, because `genhtml` and every coverage service
//! read it: branch sides and loop-boundary classes become `BRDA` records on the user's lines,
//! and every statement's line a `DA` record.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::coverage::{CoverageMap, LineRecord};
use crate::coverage_result::CoverageResult;

/// Renders one LCOV record (`TN:` .. `end_of_record`) for the program of `map`, merging the
/// `results` of any of its kernels (a slot is hit if any result hit it). `source_path` is the
/// path written after `SF:` (where the user's kernel file lives, or the capture's copy).
///
/// Every line holding a statement of an instrumented function gets a `DA` record, so `LF`/`LH`
/// ("lines %" in genhtml) count the program's executable lines. Counts are 1 (ran) or 0:
/// cltrap counts outcomes, not executions. A statement ran when its function ran and the
/// block holding it was entered (the slot that opens the block was hit, see
/// [`crate::coverage::LineRecord`]); a line with an instrumented construct also ran when any
/// of its outcomes was recorded, a barrier's line when some work-group reached it, a
/// function's first line when it ran. A kernel ran when it has a result; a helper ran when one
/// of its slots was hit or a line that calls it ran, and did not run when it has slots or
/// callers' lines and none of this happened; a helper known by neither (called only from code
/// left uninstrumented) gets no `FNDA` and no `DA` (not known).
pub fn to_lcov(
    map: &CoverageMap,
    results: &[CoverageResult],
    test_name: &str,
    source_path: &str,
) -> String {
    let hit: BTreeSet<u32> = results
        .iter()
        .flat_map(|r| r.slots.iter().filter(|s| s.hit).map(|s| s.index))
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "TN:{}", sanitize(test_name));
    let _ = writeln!(out, "SF:{source_path}");
    // A kernel with a result ran; a helper ran when one of its slots was hit, did not run
    // when it has slots and none was hit, and is not known otherwise (no `FNDA` then).
    let ran = functions_ran(map, results, &hit);
    let mut lines: BTreeMap<u32, bool> = BTreeMap::new();
    let mut fn_hit = 0;
    for (name, line) in &map.functions {
        let _ = writeln!(out, "FN:{line},{name}");
    }
    for (name, line) in &map.functions {
        let Some(&ran) = ran.get(name.as_str()) else {
            continue;
        };
        fn_hit += ran as u32;
        *lines.entry(*line).or_default() |= ran;
        let _ = writeln!(out, "FNDA:{},{name}", ran as u32);
    }
    // A statement ran when its function ran and its block was entered.
    for r in &map.lines {
        if let Some(&f) = ran.get(r.function.as_str()) {
            *lines.entry(r.line).or_default() |= f && entered(r, &hit);
        }
    }
    // A barrier's line ran when some work-group reached it.
    for r in results {
        for b in &r.barriers {
            *lines.entry(b.line).or_default() |= b.groups_all > 0 || !b.divergent.is_empty();
        }
    }
    let _ = writeln!(out, "FNF:{}", map.functions.len());
    let _ = writeln!(out, "FNH:{fn_hit}");
    // One block per construct (same range and kind), branches numbered inside it.
    let mut blocks: BTreeMap<(u32, u32, u32, String), Vec<u32>> = BTreeMap::new();
    for s in &map.slots {
        blocks
            .entry((
                s.line,
                s.start,
                s.end,
                format!("{:?}{:?}", s.kind, s.construct),
            ))
            .or_default()
            .push(s.index);
    }
    let (mut brf, mut brh) = (0, 0);
    for (block, ((line, ..), slots)) in blocks.iter().enumerate() {
        let any = slots.iter().any(|i| hit.contains(i));
        *lines.entry(*line).or_default() |= any;
        for (branch, i) in slots.iter().enumerate() {
            let taken = hit.contains(i);
            brf += 1;
            brh += taken as u32;
            let count = if taken {
                "1"
            } else if any {
                "0"
            } else {
                "-"
            };
            let _ = writeln!(out, "BRDA:{line},{block},{branch},{count}");
        }
    }
    let _ = writeln!(out, "BRF:{brf}");
    let _ = writeln!(out, "BRH:{brh}");
    for (line, any) in &lines {
        let _ = writeln!(out, "DA:{line},{}", *any as u32);
    }
    let _ = writeln!(out, "LF:{}", lines.len());
    let _ = writeln!(out, "LH:{}", lines.values().filter(|v| **v).count());
    out.push_str("end_of_record\n");
    out
}

/// Whether the block holding `r` was entered (its function having run).
fn entered(r: &LineRecord, hit: &BTreeSet<u32>) -> bool {
    r.guard.is_empty() || r.guard.iter().any(|g| hit.contains(g))
}

/// Which functions ran (`true`), did not (`false`) or are not known (absent): kernels by
/// their results, helpers by their own slots and by the lines that call them, followed from
/// the kernels down (OpenCL C has no recursion, so this ends).
fn functions_ran<'m>(
    map: &'m CoverageMap,
    results: &[CoverageResult],
    hit: &BTreeSet<u32>,
) -> BTreeMap<&'m str, bool> {
    let launched: BTreeSet<&str> = results.iter().map(|r| r.kernel.as_str()).collect();
    let kernels: BTreeSet<&str> = map.kernels.iter().map(|k| k.name.as_str()).collect();
    let mut ran: BTreeMap<&str, bool> = BTreeMap::new();
    for (name, _) in &map.functions {
        let name = name.as_str();
        let own = map.slots.iter().filter(|s| s.function == name);
        if launched.contains(name) || own.clone().any(|s| hit.contains(&s.index)) {
            ran.insert(name, true);
        }
    }
    loop {
        let called: Vec<&str> = map
            .lines
            .iter()
            .filter(|r| ran.get(r.function.as_str()) == Some(&true) && entered(r, hit))
            .flat_map(|r| r.calls.iter().map(String::as_str))
            .filter(|c| ran.get(c) != Some(&true))
            .collect();
        if called.is_empty() {
            break;
        }
        for c in called {
            ran.insert(c, true);
        }
    }
    for (name, _) in &map.functions {
        let name = name.as_str();
        let known = kernels.contains(name)
            || map.slots.iter().any(|s| s.function == name)
            || map.lines.iter().any(|r| r.calls.iter().any(|c| c == name));
        if known {
            ran.entry(name).or_insert(false);
        }
    }
    ran
}

/// LCOV test names allow letters, digits and underscores only.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
