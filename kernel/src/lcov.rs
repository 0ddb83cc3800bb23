//! LCOV tracefile output for coverage results, because `genhtml` and every coverage service
//! read it: branch sides and loop-boundary classes become `BRDA` records on the user's lines.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::coverage::CoverageMap;
use crate::coverage_result::CoverageResult;

/// Renders one LCOV record (`TN:` .. `end_of_record`) for the program of `map`, merging the
/// `results` of any of its kernels (a slot is hit if any result hit it). `source_path` is the
/// path written after `SF:` (where the user's kernel file lives, or the capture's copy).
///
/// LCOV needs line counts (`DA:`), which cltrap does not measure per line: `DA` records are
/// written only for lines whose execution the counters show — a line with an instrumented
/// construct (1 when any outcome of it was recorded, else 0), a barrier's line (1 when some
/// work-group reached it) and a function's first line (1 when it ran) — so `LF` counts those
/// lines only, not every line of the file. A kernel ran when it has a result; a helper ran
/// when any of its slots was hit; a helper without slots gets no `FNDA` (not known).
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
    let launched: BTreeSet<&str> = results.iter().map(|r| r.kernel.as_str()).collect();
    let kernels: BTreeSet<&str> = map.kernels.iter().map(|k| k.name.as_str()).collect();
    let mut lines: BTreeMap<u32, bool> = BTreeMap::new();
    let mut fn_hit = 0;
    for (name, line) in &map.functions {
        let _ = writeln!(out, "FN:{line},{name}");
    }
    for (name, line) in &map.functions {
        let slots: Vec<u32> = map
            .slots
            .iter()
            .filter(|s| &s.function == name)
            .map(|s| s.index)
            .collect();
        let ran = if launched.contains(name.as_str()) || slots.iter().any(|i| hit.contains(i)) {
            Some(true)
        } else if kernels.contains(name.as_str()) || !slots.is_empty() {
            Some(false)
        } else {
            None
        };
        let Some(ran) = ran else { continue };
        fn_hit += ran as u32;
        *lines.entry(*line).or_default() |= ran;
        let _ = writeln!(out, "FNDA:{},{name}", ran as u32);
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

/// LCOV test names allow letters, digits and underscores only.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
