//! Each fixture program runs natively and under `cltrap run` with identical results, and every
//! launch it made is captured with the right shape and replays `ok`.

use cltrap_capture::{ArgRecord, LaunchApi, ProgramOrigin};
use cltrap_e2e::*;
use std::ffi::OsStr;

#[test]
fn scalar_vector_and_struct_arguments_are_captured_byte_exact_and_replay_ok() {
    let (_dir, cap) = round_trip("args", &[], &[]);
    let seq = kernel_sequence(&cap);
    assert_eq!(&seq[..3], ["scalars", "vectors", "by_struct"], "{seq:?}");
    let scalars = launches_of(&cap, "scalars")[0];
    // int -123456, little-endian, exactly as clSetKernelArg received it.
    assert_eq!(
        scalar_i32(&scalars.args[1]),
        Some(-123456),
        "{:?}",
        scalars.args[1]
    );
    let sizes: Vec<usize> = scalars.args[1..]
        .iter()
        .map(|a| scalar_bytes(a).map(|b| b.len()).unwrap_or(0))
        .collect();
    assert_eq!(
        sizes,
        [4, 4, 8, 4, 1, 1, 2, 8],
        "scalar sizes {:?}",
        scalars.args
    );
    let vectors = launches_of(&cap, "vectors")[0];
    let vsizes: Vec<usize> = vectors.args[1..]
        .iter()
        .map(|a| scalar_bytes(a).map(|b| b.len()).unwrap_or(0))
        .collect();
    assert_eq!(vsizes, [16, 8, 16, 16], "vector sizes {:?}", vectors.args);
    assert_eq!(
        vectors.args[1].info().type_name,
        "float4",
        "{:?}",
        vectors.args[1]
    );
    let st = launches_of(&cap, "by_struct")[0];
    assert_eq!(
        scalar_bytes(&st.args[1]).map(|b| b.len()),
        Some(24),
        "{:?}",
        st.args[1]
    );
    if seq.len() == 4 {
        assert_eq!(seq[3], "doubles");
        let d = launches_of(&cap, "doubles")[0];
        let bytes = scalar_bytes(&d.args[1]).expect("double recorded as scalar bytes");
        assert_eq!(bytes, 3.0000000001f64.to_le_bytes());
    } else {
        assert_eq!(seq.len(), 3, "{seq:?}");
    }
}

#[test]
fn local_constant_in_place_aliased_and_sub_buffer_arguments_replay_ok() {
    let (_dir, cap) = round_trip("memory", &[], &[]);
    assert_eq!(
        kernel_sequence(&cap),
        [
            "local_sum",
            "constant_lookup",
            "scale_in_place",
            "scale_in_place",
            "add_pair",
            "add_into",
            "scale_in_place",
            "scale_in_place",
            "add_into",
            "add_optional",
            "add_optional",
            "add_optional"
        ]
    );
    // Arguments are recorded as they were at each enqueue, even when the application
    // changes them before the previous launch has run.
    let ks: Vec<Vec<u8>> = cap.launches[2..4]
        .iter()
        .map(|l| scalar_bytes(&l.args[1]).expect("scale factor"))
        .collect();
    assert_eq!(
        ks,
        [
            2.0f32.to_le_bytes().to_vec(),
            (-3.0f32).to_le_bytes().to_vec()
        ]
    );
    let local = &cap.launches[0];
    match (&local.args[2], &local.args[3]) {
        (ArgRecord::Local { size: a, .. }, ArgRecord::Local { size: b, .. }) => {
            assert_eq!((*a, *b), (64, 64));
        }
        other => panic!("__local arguments not recorded as local: {other:?}"),
    }
    assert_eq!(local.local_size.as_deref(), Some(&[16u64][..]));
    assert_eq!(
        cap.launches[1].args[0].info().address_space,
        "constant",
        "{:?}",
        cap.launches[1].args[0]
    );
    // The same cl_mem bound twice is recorded as one memory object.
    let mem_of = |a: &ArgRecord| match a {
        ArgRecord::Buffer { mem, .. } => *mem,
        other => panic!("expected a buffer, got {other:?}"),
    };
    let pair = &cap.launches[4];
    assert_eq!(
        mem_of(&pair.args[0]),
        mem_of(&pair.args[1]),
        "aliasing lost in add_pair"
    );
    let into = &cap.launches[5];
    assert_eq!(
        mem_of(&into.args[0]),
        mem_of(&into.args[1]),
        "aliasing lost in add_into"
    );
    // The last two launches ran on two different sub-buffers of one parent.
    let sub = |a: &ArgRecord| match a {
        ArgRecord::Buffer { sub_of, size, .. } => (*sub_of, *size),
        other => panic!("expected a buffer, got {other:?}"),
    };
    let (s1, size1) = sub(&cap.launches[6].args[0]);
    let (s2, _) = sub(&cap.launches[7].args[0]);
    let (p1, o1) = s1.expect("first sub-buffer recorded without its parent");
    let (p2, o2) = s2.expect("second sub-buffer recorded without its parent");
    assert_eq!(p1, p2, "both sub-buffers share a parent");
    assert_eq!(size1, 64 * 4);
    assert_eq!(o2, 2 * o1, "sub-buffer origins {o1} and {o2}");
    // Launch 8: a sub-buffer together with its own parent.
    let (sub_parent, _) = sub(&cap.launches[8].args[0]);
    let parent_mem = mem_of(&cap.launches[8].args[1]);
    assert_eq!(
        sub_parent.map(|(p, _)| p),
        Some(parent_mem),
        "a sub-buffer of the other argument"
    );
    assert!(
        matches!(cap.launches[9].args[1], ArgRecord::NullBuffer { .. }),
        "a NULL buffer argument: {:?}",
        cap.launches[9].args[1]
    );
    // The host rewrote the USE_HOST_PTR buffer between launches 10 and 11.
    let before_of = |i: usize| contents(&cap.launches[i].args[1]).map(|(b, _)| b.clone());
    assert_ne!(
        before_of(10),
        before_of(11),
        "host-pointer contents as of each launch"
    );
}

#[test]
fn one_two_and_three_dimensional_ranges_with_offsets_and_tasks_are_recorded_exactly() {
    let (_dir, cap) = round_trip("ndrange", &[], &[]);
    assert_eq!(
        kernel_sequence(&cap),
        ["ids_1d", "ids_2d", "ids_3d", "task_sum", "say"]
    );
    let l = &cap.launches;
    assert_eq!(
        (
            l[0].work_dim,
            l[0].global_offset.clone(),
            l[0].global_size.clone(),
            l[0].local_size.clone()
        ),
        (1, Some(vec![5]), vec![37], None)
    );
    assert_eq!(
        (
            l[1].work_dim,
            l[1].global_offset.clone(),
            l[1].global_size.clone(),
            l[1].local_size.clone()
        ),
        (2, Some(vec![3, 2]), vec![16, 8], Some(vec![4, 4]))
    );
    assert_eq!(
        (
            l[2].work_dim,
            l[2].global_offset.clone(),
            l[2].global_size.clone(),
            l[2].local_size.clone()
        ),
        (3, Some(vec![1, 2, 3]), vec![4, 3, 5], None)
    );
    assert_eq!(l[3].api, LaunchApi::Task);
    assert_eq!(l[3].global_size, vec![1]);
}

#[test]
fn several_programs_and_a_compiled_and_linked_program_are_captured_and_replay_ok() {
    let (dir, cap) = round_trip("programs", &[], &[]);
    let seq = kernel_sequence(&cap);
    let prog = |i: usize| {
        cap.program(&cap.launches[i].program)
            .unwrap_or_else(|e| panic!("program of launch {i}: {e}"))
    };
    assert_eq!(seq.len(), 7, "{seq:?}");
    assert_eq!(&seq[..3], ["add_one", "times_two", "square_scaled"]);
    // PoCL 3.1 names kernels of linked programs `_cl_mix`.
    assert!(seq[3].ends_with("mix"), "{seq:?}");
    // The clone of add_one, launched with the arguments it inherited.
    assert_eq!(seq[4], "add_one", "{seq:?}");
    assert!(
        matches!(cap.launches[4].args[0], ArgRecord::Buffer { .. }),
        "the clone's inherited argument: {:?}",
        cap.launches[4].args[0]
    );
    // Program A rebuilt from its binary.
    assert_eq!(seq[5], "times_two", "{seq:?}");
    assert!(
        matches!(prog(5).origin, ProgramOrigin::Binary { .. }),
        "a program from a binary is recorded as one: {:?}",
        prog(5).origin
    );
    // Untrusted (the default), a CPU device does not run the capture's binary.
    let untrusted = cltrap(&[OsStr::new("replay"), dir.as_os_str()]);
    assert!(untrusted.success(), "{}", untrusted.describe());
    let binary_id = cap.launches[5].id;
    assert!(
        untrusted.stdout_text().contains(&format!(
            "launch {binary_id} times_two: skipped: its program is a binary, which a CPU device \
             runs as native code in cltrap's own process"
        )),
        "{}",
        untrusted.describe()
    );
    // The second context: same source, its own program object.
    assert_eq!(seq[6], "times_two", "{seq:?}");
    assert_eq!(
        cap.launches[0].program, cap.launches[1].program,
        "one program, two kernels"
    );
    assert_ne!(cap.launches[0].program, cap.launches[2].program);
    assert_eq!(
        prog(2).options,
        "-DSCALE=3 -cl-std=CL1.2",
        "the application's own options"
    );
    match prog(3).origin {
        ProgramOrigin::Linked { inputs } => {
            assert_eq!(inputs.len(), 2, "two compiled units");
            let with_header = inputs
                .iter()
                .find(|i| !i.headers.is_empty())
                .expect("the input_headers of clCompileProgram were not recorded");
            assert_eq!(with_header.headers[0].0, "mix_helper.h");
            assert!(
                with_header.compile_options.contains("-DUNUSED_FLAG=1"),
                "{with_header:?}"
            );
        }
        other => panic!("linked program recorded as {other:?}"),
    }
}

#[test]
fn in_order_out_of_order_and_profiling_queues_keep_their_semantics_under_capture() {
    let (_dir, cap) = round_trip("queues", &[], &[]);
    let counts = kernel_counts(&cap);
    assert_eq!(counts.get("fill_seq"), Some(&3), "{counts:?}");
    assert_eq!(counts.get("add_arrays"), Some(&2), "{counts:?}");
    assert_eq!(counts.get("negate"), Some(&3), "{counts:?}");
    let props: Vec<u64> = cap.launches.iter().map(|l| l.queue_properties).collect();
    // CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE = 1, CL_QUEUE_PROFILING_ENABLE = 2.
    assert!(
        props.iter().any(|p| p & 1 != 0),
        "no out-of-order launch recorded: {props:?}"
    );
    assert!(
        props.iter().any(|p| p & 2 != 0),
        "no profiling launch recorded: {props:?}"
    );
}

#[test]
fn four_threads_launching_concurrently_are_each_captured_exactly_once() {
    let (_dir, cap) = round_trip("threads", &[], &[]);
    assert_eq!(cap.launches.len(), 100, "4 threads x 25 launches");
    let mut seen = std::collections::HashSet::new();
    for l in &cap.launches {
        assert_eq!(l.kernel, "tagged");
        let t = scalar_i32(&l.args[1]).expect("thread argument");
        let i = scalar_i32(&l.args[2]).expect("iteration argument");
        assert!(
            seen.insert((t, i)),
            "launch (thread {t}, iteration {i}) captured twice"
        );
    }
    assert_eq!(seen.len(), 100);
    let ids: std::collections::HashSet<u64> = cap.launches.iter().map(|l| l.id).collect();
    assert_eq!(ids.len(), 100, "launch ids are unique");
    let threads: std::collections::HashSet<u64> = cap.launches.iter().map(|l| l.thread).collect();
    assert!(
        threads.len() >= 4,
        "the launching threads are told apart: {threads:?}"
    );
}

#[test]
fn an_application_that_dlopens_the_loader_is_captured_through_the_layer() {
    let exe = fixture("dlopen_app");
    let ldd = run_native("ldd", &[&exe]);
    assert!(
        !ldd.stdout_text().contains("libOpenCL"),
        "the dlopen fixture must not link libOpenCL\n{}",
        ldd.describe()
    );
    let (_dir, cap) = round_trip("dlopen_app", &[], &[]);
    assert_eq!(kernel_sequence(&cap), ["vadd", "vadd", "vadd"]);
}

#[test]
fn an_image_kernel_with_a_sampler_argument_is_captured_and_replays_ok() {
    let (_dir, cap) = round_trip("images", &[], &[]);
    assert_eq!(kernel_sequence(&cap), ["brighten"]);
    let l = &cap.launches[0];
    assert!(
        matches!(l.args[0], ArgRecord::Image { .. }),
        "{:?}",
        l.args[0]
    );
    assert!(
        matches!(l.args[1], ArgRecord::Image { .. }),
        "{:?}",
        l.args[1]
    );
    match &l.args[2] {
        ArgRecord::Sampler {
            normalized_coords,
            addressing_mode,
            filter_mode,
            ..
        } => {
            // CL_ADDRESS_CLAMP_TO_EDGE = 0x1131, CL_FILTER_NEAREST = 0x1140.
            assert_eq!(
                (*normalized_coords, *addressing_mode, *filter_mode),
                (false, 0x1131, 0x1140)
            );
        }
        other => panic!("sampler recorded as {other:?}"),
    }
}

#[test]
fn list_and_show_name_the_source_line_of_each_launch_in_the_application() {
    let (dir, cap) = round_trip("ndrange", &[], &[]);
    let src = fixture_source_dir("apps").join("ndrange.c");
    let text = std::fs::read_to_string(&src).expect("fixture source");
    let call_lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.contains("CHECK(clEnqueueNDRangeKernel(") || l.contains("CHECK(clEnqueueTask(")
        })
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(call_lines.len(), 5);
    let list = cltrap(&[std::ffi::OsStr::new("list"), dir.as_os_str()]).expect_success();
    let listed = list.stdout_text();
    for (launch, line) in cap.launches.iter().zip(&call_lines) {
        let site = format!("ndrange.c:{line}");
        assert!(
            listed
                .lines()
                .any(|l| l.contains(&launch.kernel) && l.contains(&site)),
            "launch {} ({}) should be shown as launched at {site}\n{}",
            launch.id,
            launch.kernel,
            list.describe()
        );
    }
    let show = cltrap(&[
        std::ffi::OsStr::new("show"),
        dir.as_os_str(),
        std::ffi::OsStr::new("1"),
    ])
    .expect_success();
    let shown = show.stdout_text();
    assert!(shown.contains("ids_2d"), "{}", show.describe());
    assert!(
        shown.contains(&format!("ndrange.c:{}", call_lines[1])),
        "{}",
        show.describe()
    );
    assert!(
        shown.contains("16x8") || shown.contains("16, 8"),
        "{}",
        show.describe()
    );
}

#[test]
fn launches_gated_by_a_user_event_neither_block_the_application_nor_break_the_capture() {
    let exe = fixture("gated");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("gated");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    // A capture that waited inside the enqueue would hang until the fixture's alarm fires.
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let cap = open_capture(&dir);
    // Records are numbered in order of completion: the independent launch (enqueued third)
    // may finish first. In enqueue order they are fill, negate (both gated), fill.
    let mut by_seq: Vec<_> = cap.launches.iter().collect();
    by_seq.sort_by_key(|l| l.seq);
    let names: Vec<&str> = by_seq.iter().map(|l| l.kernel.as_str()).collect();
    assert_eq!(names, ["fill_seq", "negate", "fill_seq"]);
    assert_eq!(scalar_i32(&by_seq[0].args[1]), Some(40), "the gated fill");
    assert_eq!(
        scalar_i32(&by_seq[2].args[1]),
        Some(-7),
        "the independent fill"
    );
    assert_list_shows(&dir, &cap);
    // Every launch, gated or not, was recorded once it ran and replays ok.
    assert_full_contents(&cap);
    assert_replays_ok(&dir, 3);
}

#[test]
fn early_released_objects_and_launches_from_event_callbacks_are_captured_and_replay_ok() {
    let (_dir, cap) = round_trip("lifetimes", &[], &[]);
    assert_eq!(kernel_sequence(&cap), ["add_arrays", "fill_seq", "negate"]);
    // (PoCL runs the callback on whichever application thread notices the completion, often
    // inside the shim's own call into the runtime: the launch is re-entrant.)
}

/// Programs made of several source strings (NUL-terminated, length-delimited) and a unit
/// compiled with two headers replay in a worker and in-process, and `--schedules` and
/// `cover` rebuild them too: the executor hands the driver one pointer per string (the
/// `cl3` crate's slice casts would make the second string's address a length: SIGSEGV).
#[test]
fn programs_of_several_source_strings_and_headers_replay_ok() {
    let (dir, cap) = round_trip("multistring", &[], &[]);
    let seq = kernel_sequence(&cap);
    assert_eq!(seq.len(), 3, "{seq:?}");
    let sources = |i: usize| match &cap
        .program(&cap.launches[i].program)
        .expect("program")
        .origin
    {
        ProgramOrigin::Source { sources } => sources.len(),
        other => panic!("launch {i}: not a source program: {other:?}"),
    };
    assert_eq!((sources(0), sources(1)), (3, 2), "source strings recorded");
    let inproc = cltrap(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new("--in-process"),
    ]);
    inproc.assert_no_panic();
    assert!(inproc.success(), "in-process replay\n{}", inproc.describe());
    assert_eq!(
        inproc.stdout_text().matches(": ok").count(),
        3,
        "{}",
        inproc.describe()
    );
    let cover = cltrap(&[OsStr::new("cover"), dir.as_os_str()]);
    cover.assert_no_panic();
    assert!(cover.success(), "cover\n{}", cover.describe());
    assert!(
        cover.stdout_text().contains("kernel scale_twice")
            && cover.stdout_text().contains("kernel add_five"),
        "cover instruments the multi-string programs\n{}",
        cover.describe()
    );
}

/// A `__global int *src` that a kernel's source only reads (no `const`) is read once per
/// launch, as a `const` one is: `reads`, and `reads_through_macro` (which indexes it through
/// a macro of the program), cost the capture as many reads as `reads_const`,
/// and fewer than `reads_maybe`, which could write it. Every way `unwritten.cl` writes its
/// `src` (a helper, macros of a header and of the program, `*(p + i)`, a parenthesised
/// element, an alias, `vstore`, an
/// atomic, a vector component, one buffer as both arguments) is read after the launch:
/// each of those launches replays `ok`, which a stale record of `src` would not. The macros
/// come from a header the program includes through `-I`: the capture reads it with the
/// program (an unread `#include` would make every parameter "may write"). `--declared-only`
/// turns the scan off.
#[test]
fn pointers_the_kernel_source_never_writes_are_read_once_and_written_ones_after() {
    let exe = fixture("unwritten");
    let (mut reads, mut by_source) = (Vec::new(), Vec::new());
    for kernel in ["reads_const", "reads", "reads_through_macro", "reads_maybe"] {
        let dir = fresh_capture_dir(kernel);
        let (out, stats) = run_captured_with_stats(&dir, &[], &exe, &[kernel, "5"]);
        assert!(out.success(), "{}", out.describe());
        assert_replays_ok(&dir, 5);
        reads.push(counter(&stats, "content_reads"));
        by_source.push(counter(&stats, "unwritten_by_source"));
    }
    let names = "reads_const, reads, reads_through_macro, reads_maybe";
    assert_eq!(by_source, [0, 5, 5, 0], "{names}");
    assert_eq!(reads[0], reads[1], "{names}: {reads:?}");
    assert_eq!(reads[0], reads[2], "{names}: {reads:?}");
    assert!(reads[3] >= reads[1] + 5, "{names}: {reads:?}");
    // `--declared-only` turns the scan off: `reads` costs what `reads_maybe` does.
    let dir = fresh_capture_dir("declared-only");
    let (out, stats) = run_captured_with_stats(&dir, &["--declared-only"], &exe, &["reads", "5"]);
    assert!(out.success(), "{}", out.describe());
    assert_eq!(counter(&stats, "unwritten_by_source"), 0);
    assert_eq!(counter(&stats, "content_reads"), reads[3]);
    let (_dir, cap) = round_trip("unwritten", &["all"], &[]);
    assert_eq!(cap.launches.len(), 11);
}
