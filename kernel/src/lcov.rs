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
/// LCOV needs line counts (`DA:`), which cltrap does not measure per line: a line with an
/// instrumented construct counts 1 when any outcome of it was recorded, else 0. Functions
/// count 1 when any of their slots was hit.
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
    let mut fn_hit = 0;
    for (name, line) in &map.functions {
        let _ = writeln!(out, "FN:{line},{name}");
    }
    for (name, _) in &map.functions {
        let n = map
            .slots
            .iter()
            .any(|s| &s.function == name && hit.contains(&s.index)) as u32;
        fn_hit += n;
        let _ = writeln!(out, "FNDA:{n},{name}");
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
    let mut lines: BTreeMap<u32, bool> = BTreeMap::new();
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
