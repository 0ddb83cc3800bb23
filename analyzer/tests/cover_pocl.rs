//! `cltrap cover` on the real PoCL runtime: exact coverage of a kernel whose work-items and
//! whole work-groups return early, merged over launches; barrier divergence named with its
//! group and line; the LCOV, JSON and HTML reports.

mod common;
use common::*;

use cltrap_analyzer::cover::{self, report, CoverOptions};
use cltrap_capture::Capture;

/// Launch 0: n = 16, limit = 4 — nobody returns. Launch 1: limit = 0 — every group returns
/// at once. Launch 2: n = 10, limit = 3 — group 3 returns, items 10, 11 return.
fn known_capture(name: &str) -> Fixture {
    let mut f = Fixture::new(name);
    for (n, limit) in [(16, 4), (16, 0), (10, 3)] {
        // The last launch's program was built with other options (another program record)
        // that change nothing: one program in the report.
        if n == 10 {
            f.options = "-DUNUSED=1".into();
        }
        f.launch_known(n, limit);
    }
    f
}

fn uncovered(r: &cover::CoverageReport) -> Vec<String> {
    let p = &r.programs[0];
    report::items(p, &p.kernels[0])
        .into_iter()
        .filter(|i| !i.hit)
        .map(|i| format!("{}:{} {}", i.line, i.col, i.label))
        .collect()
}

fn measure(dir: &std::path::Path, ids: Option<Vec<u64>>) -> cover::CoverageReport {
    let capture = Capture::open(dir).unwrap();
    let (_, r, _) = cover::collect(
        &capture,
        &CoverOptions {
            ids,
            ..Default::default()
        },
        false,
    )
    .unwrap();
    r
}

#[test]
fn coverage_is_exact_with_early_returns_and_whole_groups_returning() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = known_capture("known");

    // Nobody returns: both `return` sides are missed, everything else is reached
    // (i % 3 = 0, 1, 2 gives the loop 0, 1 and 2 iterations; s > 1 only for 2 iterations).
    let r = measure(&f.dir, Some(vec![0]));
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let k = &r.programs[0].kernels[0];
    assert_eq!(k.kernel, "known");
    assert_eq!(
        uncovered(&r),
        [
            "7:7 if (get_group_id(0) >= limit) true",
            "8:7 if (i >= n) true"
        ]
    );
    assert_eq!(k.result.branches, (6, 8));
    assert_eq!(k.result.loop_boundaries, (3, 3));

    // Every group returns at once: exactly one side is reached, and it is recorded even though
    // no work-item of any group gets past the first statement.
    let r = measure(&f.dir, Some(vec![1]));
    let p = &r.programs[0];
    let hit: Vec<String> = report::items(p, &p.kernels[0])
        .into_iter()
        .filter(|i| i.hit)
        .map(|i| i.label)
        .collect();
    assert_eq!(hit, ["if (get_group_id(0) >= limit) true"]);
    assert_eq!(p.kernels[0].result.branches, (1, 8));
    assert_eq!(p.kernels[0].result.loop_boundaries, (0, 3));

    // All three merged: only `i >= n` never held... until launch 2, whose items 10 and 11
    // return: everything is covered, over 3 launches of one program built once.
    let r = measure(&f.dir, Some(vec![0, 1]));
    assert_eq!(uncovered(&r), ["8:7 if (i >= n) true"]);
    let r = measure(&f.dir, None);
    assert_eq!(uncovered(&r), Vec::<String>::new());
    let k = &r.programs[0].kernels[0];
    assert_eq!(
        (k.result.branches, k.result.loop_boundaries),
        ((8, 8), (3, 3))
    );
    assert_eq!(k.launches, [0, 1, 2]);
    let capture = Capture::open(&f.dir).unwrap();
    assert_ne!(capture.launches[0].program, capture.launches[2].program);
    assert_eq!(r.programs.len(), 1, "same source and map: merged");
    // The instrumented kernel gave the recorded outputs (no notes).
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

#[test]
fn the_cli_prints_the_summary_and_writes_lcov_json_and_html() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = known_capture("known-cli");
    let out_dir = temp_dir("known-cli-reports");
    let lcov = out_dir.join("cov.info");
    let json = out_dir.join("cov.json");
    let html = out_dir.join("html");
    let (code, out, err) = cltrap(
        &[
            "cover",
            f.dir.to_str().unwrap(),
            "0",
            "--lcov",
            lcov.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let mut lines = out.lines();
    let head = lines.next().unwrap_or_default();
    assert!(
        head.starts_with("kernel known (program-")
            && head.ends_with(", 1 launch(es): 0): branches 6/8 (75.0%), loop boundaries 3/3 (100.0%), barriers 0 ok / 0 divergent / 0 never reached (of 0)"),
        "{out}"
    );
    assert_eq!(
        lines.next(),
        Some("  not covered: 7:7 if (get_group_id(0) >= limit) true")
    );
    assert_eq!(lines.next(), Some("  not covered: 8:7 if (i >= n) true"));
    assert!(out.contains("\ncoverage: 1 kernel(s) in 1 program(s) over 1 launch(es) (0 skipped, 0 failed): branches 6/8 (75.0%)"), "{out}");

    // LCOV: SF names the source written next to the HTML report; branch records per side.
    let info = std::fs::read_to_string(&lcov).unwrap();
    let sf = info
        .lines()
        .find_map(|l| l.strip_prefix("SF:"))
        .unwrap_or_else(|| panic!("{info}"));
    let src = std::fs::read_to_string(sf).unwrap();
    assert_eq!(src, kernel_source("coverage.cl"));
    assert!(sf.starts_with(html.join("src").to_str().unwrap()), "{sf}");
    assert!(info.contains("\nBRDA:7,0,0,0\nBRDA:7,0,1,1\n"), "{info}");
    assert!(info.contains("\nBRF:13\nBRH:9\n"), "{info}");
    assert!(info.contains("\nFN:5,known\n"), "{info}");

    // JSON: the documented schema.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["format"], "cltrap-coverage");
    assert_eq!(j["version"], 1);
    let k = &j["programs"][0]["kernels"][0];
    assert_eq!(k["kernel"], "known");
    assert_eq!(k["branches"], serde_json::json!({"covered": 6, "total": 8}));
    assert_eq!(
        k["loop_boundaries"],
        serde_json::json!({"covered": 3, "total": 3})
    );
    assert_eq!(k["launches"], serde_json::json!([0]));
    let missed: Vec<&str> = k["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["hit"] == false)
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        missed,
        ["if (get_group_id(0) >= limit) true", "if (i >= n) true"]
    );
    assert_eq!(j["programs"][0]["source_file"].as_str(), Some(sf));

    // HTML: every source line, escaped, with hit/miss classes and markers.
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(
        page.contains(
            "<td class=\"c\">__kernel void known(__global int* out, uint n, uint limit) {</td>"
        ),
        "{page}"
    );
    assert!(
        page.contains("<tr class=\"partial\"><td class=\"n\">7</td>"),
        "{page}"
    );
    assert!(
        page.contains("<tr class=\"hit\"><td class=\"n\">10</td>"),
        "{page}"
    );
    assert!(
        page.contains("for (int j = 0; j &lt; (int)(i % 3); j++) s += j + 1;"),
        "{page}"
    );

    // genhtml (from the lcov package) reads the tracefile, when it is installed.
    if std::process::Command::new("genhtml")
        .arg("--version")
        .output()
        .is_ok()
    {
        let gen = out_dir.join("genhtml");
        let o = std::process::Command::new("genhtml")
            .args(["--branch-coverage", "-q", "-o"])
            .arg(&gen)
            .arg(&lcov)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "genhtml failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(gen.join("index.html").exists());
    }
}

#[test]
fn a_barrier_reached_by_whole_groups_is_covered_on_pocl() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let mut f = Fixture::new("diverge");
    // k = 4 of 4: whole groups reach the barrier. (k = 2 would be a divergence, undefined
    // behaviour that PoCL's CPU device papers over: it runs such a barrier for all or none of
    // a group's work-items, so the divergence is not observable there; see the next test.)
    f.launch_diverge(4);
    let r = measure(&f.dir, None);
    let p = &r.programs[0];
    let sites = report::barrier_sites(p, &p.kernels[0]);
    assert_eq!(sites.len(), 1);
    assert_eq!(sites[0].status, report::BarrierStatus::Covered);
    assert_eq!(
        (sites[0].line, sites[0].groups_all, sites[0].groups_none),
        (20, 2, 0)
    );
    assert!(report::summary(&r).contains("barriers 1 ok / 0 divergent / 0 never reached (of 1)"));
}

/// The live-app path hands over counter buffers read back from the application's launches:
/// a buffer in which some work-items of a group arrived at a barrier is a divergence, reported
/// with launch, group, line and arrivals.
#[test]
fn barrier_divergence_in_counters_is_reported_with_group_and_line() {
    use cltrap_kernel::coverage::{instrument_coverage, CoverageOptions};
    let source = kernel_source("coverage.cl");
    let model = cltrap_kernel::parse_program(&source, "").unwrap();
    let map = instrument_coverage(&model, CoverageOptions::default())
        .unwrap()
        .map;
    let mut pc = cover::ProgramCoverage::new("f25c3f7953c0aa", source, map.clone());
    // Two groups of 4: as the instrumented kernel leaves the buffer when items 0 and 1 of
    // each group take the branch and hit the barrier (header: local size, group counts).
    let mut counters = map.initial_buffer(&[8], Some(&[4]));
    counters[2..8].copy_from_slice(&[4, 1, 1, 2, 1, 1]);
    let taken = map
        .slots
        .iter()
        .find(|s| s.function == "diverge" && s.label == "if (l < k) true")
        .unwrap();
    counters[taken.index as usize] = 1;
    let not_taken = map
        .slots
        .iter()
        .find(|s| s.function == "diverge" && s.label == "if (l < k) false")
        .unwrap();
    counters[not_taken.index as usize] = 1;
    let base = map.static_len() as usize;
    counters[base] = 2;
    counters[base + 1] = 2;
    pc.add_counters("diverge", Some(5), &counters, &[8])
        .unwrap();
    let r = cover::CoverageReport {
        programs: vec![pc],
        ..Default::default()
    };
    let k = &r.programs[0].kernels[0];
    type Seen = (Option<u64>, u32, [u64; 3], u64, u64);
    let groups: Vec<Seen> = k
        .divergences
        .iter()
        .map(|d| (d.launch, d.line, d.group, d.arrivals, d.work_items))
        .collect();
    assert_eq!(
        groups,
        [
            (Some(5), 20, [0, 0, 0], 2, 4),
            (Some(5), 20, [1, 0, 0], 2, 4)
        ]
    );
    let text = report::summary(&r);
    assert!(
        text.contains("  BARRIER DIVERGENCE: 20:5 barrier(CLK_GLOBAL_MEM_FENCE): launch 5, group (0,0,0): 2 arrival(s) for 4 work-item(s)\n"),
        "{text}"
    );
    assert!(text.contains("kernel diverge (program-f25c3f7953c0, 1 launch(es): 5): branches 2/2 (100.0%), loop boundaries 0/0 (-), barriers 0 ok / 1 divergent / 0 never reached (of 1)"), "{text}");
    let j = serde_json::to_value(report::json(&r, &[None])).unwrap();
    assert_eq!(
        j["programs"][0]["kernels"][0]["barrier_sites"][0]["status"],
        "divergent"
    );
    assert_eq!(
        j["programs"][0]["kernels"][0]["divergences"][1]["group"],
        serde_json::json!([1, 0, 0])
    );
    let page = cover::html::render(&r);
    assert!(
        page.contains("<tr class=\"div\"><td class=\"n\">20</td>"),
        "{page}"
    );
}

/// The kernel crate's `&&`/`||` fixture (its expectations are worked out there).
const SHORT_CIRCUIT: &str = "../../../kernel/tests/kernels/short_circuit.cl";

/// A capture of the short-circuit fixture with `mode = 0`: the left operand `mode > 0` is
/// always false, so its right operand `x[i] > 0` never runs.
fn short_circuit_capture(name: &str) -> Fixture {
    let mut f = Fixture::new(name);
    f.launch(
        SHORT_CIRCUIT,
        "short_circuit",
        &[8],
        Some(&[4]),
        None,
        vec![
            A::Buf("out", "int*", i32s(&[0; 8])),
            A::Buf("x", "const int*", i32s(&[3, -1, 0, 5, -2, 7, 0, 4])),
            int("n", 8),
            int("mode", 0),
        ],
    );
    f
}

#[test]
fn short_circuit_operands_are_branch_outcomes_in_every_report() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = short_circuit_capture("short-circuit");
    let out_dir = temp_dir("short-circuit-reports");
    let lcov = out_dir.join("cov.info");
    let json = out_dir.join("cov.json");
    let html = out_dir.join("html");
    let (code, out, err) = cltrap(
        &[
            "cover",
            f.dir.to_str().unwrap(),
            "--lcov",
            lcov.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let missed: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  not covered: "))
        .collect();
    assert_eq!(
        missed,
        [
            "9:7 if (mode > 0 && x[i] > 0) true",
            "9:7 && operand (mode > 0) true",
            "9:19 && operand (x[i] > 0) true",
            "9:19 && operand (x[i] > 0) false",
            "16:17 || operand ((acc += 32) < 0) true",
        ],
        "{out}"
    );
    assert!(out.contains("branches 41/46 (89.1%)"), "{out}");

    let info = std::fs::read_to_string(&lcov).unwrap();
    for record in [
        "BRDA:9,2,0,0",
        "BRDA:9,2,1,1",
        "BRDA:9,4,0,-",
        "BRDA:9,4,1,-",
    ] {
        assert!(info.contains(&format!("\n{record}\n")), "{record}: {info}");
    }

    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let items = j["programs"][0]["kernels"][0]["items"].as_array().unwrap();
    let operand = items
        .iter()
        .find(|i| i["label"] == "&& operand (x[i] > 0) false")
        .unwrap_or_else(|| panic!("{items:?}"));
    assert_eq!(
        (&operand["construct"], &operand["line"], &operand["hit"]),
        (
            &serde_json::json!("short_circuit"),
            &serde_json::json!(9),
            &serde_json::json!(false)
        )
    );
    assert_eq!(
        j["programs"][0]["skipped"][0]["construct"],
        "&& with vector operands"
    );

    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(
        page.contains("&amp;&amp; operand (x[i] &gt; 0) false"),
        "{page}"
    );
}

/// A hotspot-style stencil (a loop with barriers and a conditional `break` between them, as in
/// Rodinia's hotspot): the instrumented kernel must run exactly as the original does on PoCL,
/// whose work-group loops are built around the barriers, and every launch is counted.
#[test]
fn a_stencil_loop_with_barriers_and_a_break_is_covered_without_changing_the_kernel() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let mut f = Fixture::new("hotspot");
    f.launch_hotspot(32, 2);
    f.launch_hotspot(32, 1);
    let (code, out, err) = cltrap(&["cover", f.dir.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("over 2 launch(es) (0 skipped, 0 failed)"),
        "{out}\n{err}"
    );
    assert!(!err.contains("differ"), "{out}\n{err}");
    let r = measure(&f.dir, None);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let p = &r.programs[0];
    let sites = report::barrier_sites(p, &p.kernels[0]);
    assert_eq!(sites.len(), 3, "{out}");
    let status: Vec<(u32, report::BarrierStatus)> =
        sites.iter().map(|s| (s.line, s.status)).collect();
    assert_eq!(
        status,
        [
            (41, report::BarrierStatus::Covered),
            (67, report::BarrierStatus::Covered),
            (72, report::BarrierStatus::Covered)
        ]
    );
    // LCOV: the launched kernel ran, and so did the lines of its barriers.
    let info = report::lcov(&r, &[std::path::PathBuf::from("hotspot.cl")]);
    for record in [
        "FN:9,hotspot",
        "FNDA:1,hotspot",
        "FNH:1",
        "DA:9,1",
        "DA:41,1",
        "DA:72,1",
    ] {
        assert!(info.contains(&format!("\n{record}\n")), "{record}: {info}");
    }
    // One launch iterates once, the other twice; every launch leaves the loop by its `break`,
    // so its condition is never false and it never runs 0 times.
    assert_eq!(
        uncovered(&r),
        [
            "55:3 for (i < iteration) ran 0 times",
            "55:19 for (i < iteration) false"
        ]
    );
}

/// A launch that crashes the cover worker is left out, named, and counted as failed in the
/// summary, the JSON report and the exit status; the other launches are still measured.
#[test]
fn a_launch_that_crashes_the_worker_is_counted_as_failed() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let mut f = Fixture::new("wild");
    let long = |v: i64| A::Val("at", "long", v.to_le_bytes().to_vec());
    f.launch(
        "wild.cl",
        "wild",
        &[4],
        None,
        None,
        vec![A::Buf("out", "int*", i32s(&[0; 4])), long(2)],
    );
    f.unrun = true;
    for _ in 0..2 {
        f.launch(
            "wild.cl",
            "wild",
            &[4],
            None,
            None,
            vec![A::Buf("out", "int*", i32s(&[0; 4])), long(1 << 44)],
        );
    }
    let json = temp_dir("wild-reports").join("cov.json");
    let (code, out, err) = cltrap(
        &[
            "cover",
            f.dir.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}\n{err}");
    for id in [1, 2] {
        assert!(
            out.contains(&format!(
                "launch {id} wild: error: the kernel crashed the cover worker"
            )),
            "{out}"
        );
    }
    assert!(
        out.contains("over 1 launch(es) (0 skipped, 2 failed)"),
        "{out}"
    );
    assert!(
        out.contains("not measured: 2 launch(es) (0 skipped, 2 failed, listed above)"),
        "{out}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let failed: Vec<u64> = j["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "error")
        .map(|p| p["launch"].as_u64().unwrap())
        .collect();
    assert_eq!(failed, [1, 2], "{j}");
}
