//! A hostile capture's program cannot make the compiler (PoCL's clang) read a file outside the
//! capture at replay, whatever spelling of an include it uses: computed includes, digraphs,
//! trigraphs, `#import`, `#include_next`, line splices, `__has_include`, in the program's own
//! text or in a recorded header. Each program builds only if the outside header was read; the
//! replay must instead fail, with cltrap's refusal or the unrecorded-include sentinel in the
//! build log.

mod common;
use common::{arg_info, i32s, ndrange_record, put_blob, temp_dir, test_manifest, DEVICE};

use cltrap_analyzer::executor::{DeviceSelector, Session};
use cltrap_analyzer::replay::{replay_on, select, Outcome};
use cltrap_capture::*;

const KERNEL: &str = "#ifndef OUTSIDE_HEADER\n#error the outside header was not read\n#endif\n\
                      kernel void k(global int *x) { x[get_global_id(0)] = OUTSIDE_HEADER; }\n";

/// Preludes that each made PoCL read `o` before the fix.
fn preludes(o: &str) -> Vec<(&'static str, String)> {
    let spliced_path = o.replace("outside", "out\\\nside");
    vec![
        (
            "object-like macro",
            format!("#define P \"{o}\"\n#include P\n"),
        ),
        (
            "function-like macro",
            format!("#define S(x) #x\n#include S({o})\n"),
        ),
        ("digraph", format!("%:include \"{o}\"\n")),
        ("trigraph", format!("??=include \"{o}\"\n")),
        ("import", format!("#import \"{o}\"\n")),
        ("include_next", format!("#include_next <{o}>\n")),
        ("splice in the name", format!("#inc\\\nlude \"{o}\"\n")),
        (
            "splice in the path",
            format!("#include \"{spliced_path}\"\n"),
        ),
        ("comment after #", format!("#/*\n*/include \"{o}\"\n")),
        (
            "__has_include",
            format!("#if __has_include(\"{o}\")\n#define OUTSIDE_HEADER 1\n#endif\n"),
        ),
    ]
}

#[test]
fn no_include_spelling_makes_the_replay_read_a_file_outside_the_capture() {
    let outside = temp_dir("hostile-includes-outside");
    std::fs::create_dir_all(&outside).unwrap();
    let header = outside.join("hdr.h");
    std::fs::write(&header, "#define OUTSIDE_HEADER 1\n").unwrap();
    let o = header.to_string_lossy().into_owned();
    let dir = temp_dir("hostile-includes");
    let w = CaptureWriter::create(&dir, &test_manifest("hostile includes")).unwrap();
    let before = i32s(&[0; 4]);
    let after = i32s(&[1; 4]);
    let mut cases = Vec::new();
    for (what, prelude) in preludes(&o) {
        // In the program's own text, and in a header the capture recorded.
        let src = w
            .blobs
            .put(format!("{prelude}{KERNEL}").as_bytes())
            .unwrap();
        let in_header = w.blobs.put(prelude.as_bytes()).unwrap();
        let via_header = w
            .blobs
            .put(format!("#include \"hostile.h\"\n{KERNEL}").as_bytes())
            .unwrap();
        for (how, sources, includes) in [
            ("source", src, Includes::default()),
            (
                "recorded header",
                via_header,
                Includes {
                    build_dir: "/app".into(),
                    files: vec![IncludedFile {
                        name: "hostile.h".into(),
                        form: IncludeForm::Quoted,
                        from: None,
                        path: Some("/app/hostile.h".into()),
                        content: Some(in_header.clone()),
                    }],
                },
            ),
        ] {
            let rec = ProgramRecord {
                origin: ProgramOrigin::Source {
                    sources: vec![sources],
                },
                options: String::new(),
                devices: vec!["capturing device".into()],
                build_site: None,
                includes,
            };
            let program = w.blobs.put(&serde_json::to_vec(&rec).unwrap()).unwrap();
            let arg = ArgRecord::Buffer {
                info: arg_info(0, "x", "int*", "global"),
                mem: 1,
                flags: 1,
                size: before.len() as u64,
                sub_of: None,
                before: put_blob(&w.blobs, &before),
                after: put_blob(&w.blobs, &after),
            };
            w.append(ndrange_record("k", program, vec![4], None, None, vec![arg]))
                .unwrap();
            cases.push(format!("{what} ({how})"));
        }
    }
    drop(w);

    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    let capture = Capture::open(&dir).unwrap();
    let session =
        Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL) is installed");
    let launches = select(&capture, None).unwrap();
    let mut results = Vec::new();
    replay_on(&session, &capture, &launches, 0u64, |r| {
        results.push(r.clone())
    });
    assert_eq!(results.len(), cases.len());
    for (case, r) in cases.iter().zip(&results) {
        match &r.outcome {
            Outcome::Error { line, full } => {
                assert!(
                    line.starts_with("the program does not build"),
                    "{case}: {line}"
                );
                assert!(
                    full.contains("cltrap refuses the include")
                        || full.contains("/dev/null/cltrap-unrecorded-include.h")
                        || full.contains("the outside header was not read"),
                    "{case}: {full}"
                );
            }
            other => panic!("{case}: the outside header was read: {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}
