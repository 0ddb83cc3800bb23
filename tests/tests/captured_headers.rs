//! Headers travel with the capture: a real host program builds a kernel that includes files
//! from its working directory and from an `-I` directory (with a nested include); the
//! headers are deleted after the capture, and replay, cover and fuzz, run from elsewhere,
//! still build the program — from the captured copies, never from the file system (a decoy
//! header in the directory cltrap runs in would change every result).

use cltrap_capture::IncludeForm;
use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::Path;

/// Lays out the headers the fixture's kernel includes under `app` (its working directory).
fn write_headers(app: &Path) {
    std::fs::create_dir_all(app.join("inc/nested")).unwrap();
    std::fs::write(app.join("main.h"), "#define SCALE 3\n").unwrap();
    std::fs::write(
        app.join("inc/defs.h"),
        "#include \"nested/offset.h\"\n#define LIMIT 100\n",
    )
    .unwrap();
    std::fs::write(app.join("inc/nested/offset.h"), "#define OFFSET 7\n").unwrap();
    std::fs::create_dir_all(app.join("extra")).unwrap();
    std::fs::write(app.join("extra/extra.h"), "#define EXTRA 0\n").unwrap();
}

/// The fixture's build options: an `-I` directory and the absolute directory of the header
/// the kernel names through macros (`#include M2S(EXTRA_DIR/extra.h)`, as hashcat passes
/// `-D INCLUDE_PATH=/usr/share/hashcat/OpenCL`): no `-I` mirror can stand in for it, only
/// the captured copy the directive is pointed at.
fn options(app: &Path) -> String {
    format!("-I inc -D EXTRA_DIR={}", app.join("extra").display())
}

/// A directory holding headers of the same names with other values: a build that searched
/// where cltrap runs (PoCL looks in the working directory first) would change the results.
fn decoy_dir(label: &str) -> std::path::PathBuf {
    let d = fresh_dir("headers", label);
    std::fs::write(d.join("main.h"), "#define SCALE 5\n").unwrap();
    std::fs::write(d.join("defs.h"), "#define LIMIT 1000\n#define OFFSET 0\n").unwrap();
    std::fs::create_dir_all(d.join("extra")).unwrap();
    std::fs::write(d.join("extra/extra.h"), "#define EXTRA 1000\n").unwrap();
    d
}

#[test]
fn captured_headers_replace_the_applications_files_in_replay_cover_and_fuzz() {
    let exe = fixture("headers");
    let app = fresh_dir("headers", "app");
    write_headers(&app);
    let opts = options(&app);
    let native = run_with_env(&exe, &[opts.as_str()], &[], Some(&app)).expect_success();
    let dir = fresh_capture_dir("headers");
    let t = tools();
    let run_args: Vec<&OsStr> = vec![
        OsStr::new("run"),
        OsStr::new("--out"),
        dir.as_os_str(),
        OsStr::new("--"),
        exe.as_os_str(),
        OsStr::new(&opts),
    ];
    let captured = run_with_env(
        &t.cltrap,
        &run_args,
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        Some(&app),
    );
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);

    // The record names every include, resolved as the driver resolved it.
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 1, "{}", captured.describe());
    let rec = cap.program(&cap.launches[0].program).unwrap();
    let inc = &rec.includes;
    assert_eq!(Path::new(&inc.build_dir), app.as_path());
    let found = |name: &str| {
        inc.files
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} not recorded: {inc:?}"))
    };
    let main = found("./main.h");
    assert_eq!(
        main.path.as_deref().map(Path::new),
        Some(app.join("main.h").as_path())
    );
    assert_eq!(
        cap.source_text(main.content.as_ref().unwrap()).unwrap(),
        "#define SCALE 3\n"
    );
    let defs = found("defs.h");
    assert_eq!(defs.form, IncludeForm::Angled);
    assert_eq!(
        defs.path.as_deref().map(Path::new),
        Some(app.join("inc/defs.h").as_path())
    );
    let nested = found("nested/offset.h");
    assert_eq!(
        nested.from.as_deref().map(Path::new),
        Some(app.join("inc/defs.h").as_path())
    );
    assert!(nested.content.is_some(), "{nested:?}");
    let extra = found("M2S(EXTRA_DIR/extra.h)");
    assert_eq!(extra.form, IncludeForm::Macro);
    assert_eq!(
        extra.path.as_deref().map(Path::new),
        Some(app.join("extra/extra.h").as_path()),
        "the macro include was not followed: {extra:?}"
    );
    assert!(extra.content.is_some(), "{extra:?}");
    let absent = found("absent.h");
    assert!(
        absent.path.is_none() && absent.content.is_none(),
        "{absent:?}"
    );

    // The application's headers are gone; cltrap runs next to decoys.
    std::fs::remove_dir_all(&app).unwrap();
    let elsewhere = decoy_dir("elsewhere");

    let show = cltrap_in(
        &elsewhere,
        &[OsStr::new("show"), dir.as_os_str(), OsStr::new("0")],
    );
    assert!(show.success(), "{}", show.describe());
    let text = show.stdout_text();
    let absent_line = text
        .lines()
        .find(|l| l.contains("\"absent.h\""))
        .unwrap_or_else(|| panic!("show does not name absent.h\n{text}"));
    assert!(absent_line.contains("NOT FOUND"), "{absent_line}");
    assert!(text.contains("inc/nested/offset.h, captured"), "{text}");
    assert!(text.contains("extra/extra.h, captured"), "{text}");

    let replay = cltrap_in(&elsewhere, &[OsStr::new("replay"), dir.as_os_str()]);
    replay.assert_no_panic();
    assert!(replay.success(), "{}", replay.describe());
    assert_eq!(ok_lines(&replay.stdout_text()), 1, "{}", replay.describe());

    let cover = cltrap_in(&elsewhere, &[OsStr::new("cover"), dir.as_os_str()]);
    cover.assert_no_panic();
    assert!(cover.success(), "{}", cover.describe());
    // Both sides of `v > LIMIT` are taken by the captured input (0..63 → 7..196).
    let ctext = cover.stdout_text();
    assert!(ctext.contains("scaled"), "{ctext}");

    // Fuzzing builds the same program; its suite carries the headers and replays ok.
    let suite = fresh_dir("headers", "suite").join("suite");
    let fuzz = cltrap_in(
        &elsewhere,
        &[
            OsStr::new("fuzz"),
            dir.as_os_str(),
            OsStr::new("--budget"),
            OsStr::new("60"),
            OsStr::new("--out"),
            suite.as_os_str(),
        ],
    );
    fuzz.assert_no_panic();
    assert!(fuzz.success(), "{}", fuzz.describe());
    let scap = open_capture(&suite);
    let srec = scap.program(&scap.launches[0].program).unwrap();
    assert_eq!(srec.includes, rec.includes);
    let sreplay = cltrap_in(&elsewhere, &[OsStr::new("replay"), suite.as_os_str()]);
    assert!(sreplay.success(), "{}", sreplay.describe());
    assert_eq!(
        ok_lines(&sreplay.stdout_text()),
        scap.launches.len(),
        "{}",
        sreplay.describe()
    );

    // Had main.h not been found when the application built the program, replay names it.
    let mut lost = rec.clone();
    for f in lost
        .includes
        .files
        .iter_mut()
        .filter(|f| f.name == "./main.h")
    {
        f.path = None;
        f.content = None;
    }
    let hash = cltrap_capture::BlobStore::new(&dir)
        .put(&serde_json::to_vec(&lost).unwrap())
        .unwrap();
    rewrite_launch(&dir, cap.launches[0].id, |l| l.program = hash);
    let empty = fresh_dir("headers", "empty");
    let broken = cltrap_in(&empty, &[OsStr::new("replay"), dir.as_os_str()]);
    broken.assert_no_panic();
    assert_eq!(broken.code, Some(2), "{}", broken.describe());
    let line = broken
        .stdout_text()
        .lines()
        .find(|l| l.starts_with("launch 0"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("error")
            && line.contains("not found when the program was captured: ./main.h"),
        "{}",
        broken.describe()
    );
}

#[test]
fn fuzzing_a_kernel_file_finds_includes_in_its_folder_and_in_dash_i() {
    let folder = fresh_dir("headers", "kfile");
    write_headers(&folder);
    let k = folder.join("k.cl");
    std::fs::copy(fixture_source_dir("kernels").join("headers.cl"), &k).unwrap();
    let elsewhere = decoy_dir("kfile-elsewhere");
    let inc = folder.join("inc");
    let suite = folder.join("suite");
    let out = cltrap_in(
        &elsewhere,
        &[
            OsStr::new("fuzz"),
            k.as_os_str(),
            format!("--build-options=-I {}", inc.display()).as_ref(),
            OsStr::new("--budget"),
            OsStr::new("60"),
            OsStr::new("--out"),
            suite.as_os_str(),
        ],
    );
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout_text().contains("absent.h"),
        "the missing header is named\n{}",
        out.describe()
    );
    // The suite is self-contained: it replays with the kernel's folder gone.
    std::fs::remove_dir_all(folder.join("inc")).unwrap();
    std::fs::remove_file(folder.join("main.h")).unwrap();
    let replay = cltrap_in(&elsewhere, &[OsStr::new("replay"), suite.as_os_str()]);
    assert!(replay.success(), "{}", replay.describe());
    assert!(
        ok_lines(&replay.stdout_text()) >= 1,
        "{}",
        replay.describe()
    );
}
