//! Hostile captures: several hundred damaged captures derived deterministically from real
//! ones (a fixture captured with headers, the demo application, the format-3 fixture), each
//! read by `list`, `show`, `replay --in-process` and, where the damage concerns them,
//! `cover`, `check` and `export`. Every command must end with a correct result or with exit
//! 2 and a clear message: never a panic, a signal, a hang, nor a file touched outside the
//! capture and the command's own private folders (its home, cache and temporary folders,
//! and the export's output folder, all inside the test's sandbox).
//!
//! Damage: truncations at every record boundary and inside records, bit flips in every kind
//! of file (manifest, log, program record, source, header, buffer blob, chunk index, pack,
//! chunk), deleted, duplicated and reordered lines, absurd sizes and geometries, fields that
//! are not digests (`/etc/passwd`, `/dev/zero`, paths out of the sandbox), `..` and relative
//! paths in every path-like field of a program record, hostile build options, unknown and
//! missing fields, symbolic links, FIFOs, sparse giant files. Case (a variant) by case, the
//! refusals the reader promises are asserted exactly (exit 2 from replay).

use cltrap_e2e::*;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Deterministic pseudo-random numbers (xorshift64*), so every run derives the same captures.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Which commands a variant is run with, beyond `list`, `show` and `replay`.
#[derive(Clone, Copy, PartialEq)]
enum Depth {
    /// `list`, `show` and `replay`.
    Read,
    /// Also `cover`, `check` and `export --c`.
    All,
}

/// One damaged capture: how it was made, and whether replay must refuse it (exit 2).
struct Variant {
    name: String,
    dir: PathBuf,
    must_refuse: bool,
    depth: Depth,
}

/// The test's sandbox: everything any command may write lies in `allowed` folders.
struct Sandbox {
    root: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    cwd: PathBuf,
    variants: PathBuf,
    out: PathBuf,
    /// A file outside every capture that hostile fields point at.
    secret: PathBuf,
    /// A folder hostile paths aim into; it must never appear.
    escape: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root = fresh_dir("hostile", "sandbox");
        let s = Sandbox {
            home: root.join("home"),
            tmp: root.join("tmp"),
            cwd: root.join("cwd"),
            variants: root.join("v"),
            out: root.join("out"),
            secret: root.join("secret.txt"),
            escape: root.join("escape"),
            root,
        };
        for d in [&s.home, &s.tmp, &s.cwd, &s.variants, &s.out] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&s.secret, "SECRET-LINE\n").unwrap();
        s
    }

    /// Runs `cltrap args` in the sandbox (its own home, cache and temporary folders).
    fn cltrap(&self, args: &[&OsStr]) -> Outcome {
        let t = tools();
        let cache = self.home.join(".cache");
        run_with_env(
            &t.cltrap,
            args,
            &[
                ("HOME", self.home.as_os_str()),
                ("XDG_CACHE_HOME", cache.as_os_str()),
                ("TMPDIR", self.tmp.as_os_str()),
            ],
            Some(&self.cwd),
        )
    }

    /// Every file and folder in the sandbox outside the folders commands may write in.
    fn strays(&self) -> Vec<PathBuf> {
        let allowed = [
            &self.home,
            &self.tmp,
            &self.variants,
            &self.out,
            &self.secret,
            &self.cwd,
        ];
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.root).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let made_here = name.starts_with("base-") || name.starts_with("outside-");
            if !allowed.iter().any(|a| p == **a) && !made_here {
                out.push(p);
            }
        }
        // The working folder stays empty: nothing is written where cltrap runs.
        out.extend(
            std::fs::read_dir(&self.cwd)
                .unwrap()
                .flatten()
                .map(|e| e.path()),
        );
        out
    }
}

/// Copies a capture folder (files only; links and FIFOs are made by the variants).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Every file of a capture, relative to it, sorted.
fn files_of(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The kind of a capture file, for choosing what to damage.
fn kind_of(rel: &Path) -> &'static str {
    let s = rel.to_string_lossy();
    if s == "manifest.json" {
        "manifest"
    } else if s == "launches.jsonl" {
        "log"
    } else if s.ends_with(".chunks") {
        "index"
    } else if s.ends_with(".pack") {
        "pack"
    } else if s.ends_with(".chunk") {
        "chunk"
    } else if s.starts_with("blobs/") {
        "blob"
    } else {
        "other"
    }
}

/// The chunk indexes and packs that hold some launch's pre-launch contents in `dir`.
fn input_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in log_lines(dir) {
        let Ok(l) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        for a in l["args"].as_array().into_iter().flatten() {
            let Some(hash) = a["before"]["hash"].as_str() else {
                continue;
            };
            let index = PathBuf::from(format!("{}.chunks", blob_rel(hash).display()));
            let Ok(text) = std::fs::read_to_string(dir.join(&index)) else {
                continue;
            };
            for pack in text.lines().filter_map(|t| t.strip_prefix("pack ")) {
                out.push(PathBuf::from(format!(
                    "{}.pack",
                    blob_rel(pack.trim()).display()
                )));
            }
            out.push(index);
        }
    }
    out
}

fn blob_rel(hash: &str) -> PathBuf {
    PathBuf::from(format!("blobs/{}/{hash}", &hash[..2]))
}

/// Writes `bytes` as a blob of `dir` under its digest; the digest.
fn put_blob(dir: &Path, bytes: &[u8]) -> String {
    let h = cltrap_capture::writer::digest(bytes);
    let p = dir.join(blob_rel(&h));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
    h
}

/// The log's whole-record lines as JSON values (delta lines stay as they are).
fn log_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("launches.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_log(dir: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    std::fs::write(dir.join("launches.jsonl"), text).unwrap();
}

/// Derives the variants of one base capture.
struct Maker<'a> {
    sb: &'a Sandbox,
    base: PathBuf,
    label: &'static str,
    rng: Rng,
    out: Vec<Variant>,
}

impl Maker<'_> {
    /// A fresh copy of the base, damaged by `damage`.
    fn variant(&mut self, name: &str, must_refuse: bool, depth: Depth, damage: impl FnOnce(&Path)) {
        let n = self.out.len();
        let dir = self.sb.variants.join(format!("{}-{n:03}", self.label));
        copy_tree(&self.base, &dir);
        damage(&dir);
        self.out.push(Variant {
            name: format!("{}: {name}", self.label),
            dir,
            must_refuse,
            depth,
        });
    }

    fn log_damage(&mut self) {
        let lines = log_lines(&self.base);
        let text = std::fs::read(self.base.join("launches.jsonl")).unwrap();
        // Truncations at every record boundary (0 lines: an empty log).
        for k in 0..=lines.len() {
            let keep = lines[..k].to_vec();
            self.variant(
                &format!("log cut after {k} line(s)"),
                k == 0,
                Depth::Read,
                |d| write_log(d, &keep),
            );
        }
        // Truncations inside records (what a writer that died leaves), at three places in
        // every line.
        let mut at = 0;
        for line in &lines {
            for frac in [1, 2, 3] {
                let cut = at + line.len() * frac / 4;
                let bytes = text[..cut].to_vec();
                self.variant(
                    &format!("log cut at byte {cut}"),
                    cut < lines[0].len(),
                    Depth::Read,
                    |d| std::fs::write(d.join("launches.jsonl"), &bytes).unwrap(),
                );
            }
            at += line.len() + 1;
        }
        // A line cut short in the middle of the log: damage, not a crash's tail.
        if lines.len() > 1 {
            let mut l = lines.clone();
            let half = l[0].len() / 2;
            l[0].truncate(half);
            self.variant(
                "first line cut short, the rest kept",
                true,
                Depth::Read,
                |d| write_log(d, &l),
            );
        }
        // Deleted, duplicated, reordered lines.
        for i in 0..lines.len() {
            let mut del = lines.clone();
            del.remove(i);
            self.variant(
                &format!("line {i} deleted"),
                del.is_empty(),
                Depth::Read,
                |d| write_log(d, &del),
            );
            let mut dup = lines.clone();
            dup.insert(i, lines[i].clone());
            self.variant(&format!("line {i} duplicated"), false, Depth::Read, |d| {
                write_log(d, &dup)
            });
            if i + 1 < lines.len() {
                let mut sw = lines.clone();
                sw.swap(i, i + 1);
                self.variant(
                    &format!("lines {i} and {} swapped", i + 1),
                    false,
                    Depth::Read,
                    |d| write_log(d, &sw),
                );
            }
        }
        let mut rev = lines.clone();
        rev.reverse();
        self.variant("lines reversed", false, Depth::Read, |d| write_log(d, &rev));
        // A deleted log.
        self.variant("log deleted", true, Depth::Read, |d| {
            std::fs::remove_file(d.join("launches.jsonl")).unwrap()
        });
    }

    /// Bit flips: `n` in every file of each kind.
    fn bit_flips(&mut self, per_kind: usize) {
        let files = files_of(&self.base);
        for kind in ["manifest", "log", "blob", "index", "pack", "chunk"] {
            let of_kind: Vec<&PathBuf> = files.iter().filter(|f| kind_of(f) == kind).collect();
            if of_kind.is_empty() {
                continue;
            }
            for _ in 0..per_kind {
                let f = of_kind[self.rng.below(of_kind.len())].clone();
                let len = std::fs::metadata(self.base.join(&f)).unwrap().len() as usize;
                if len == 0 {
                    continue;
                }
                let (pos, bit) = (self.rng.below(len), self.rng.below(8));
                self.variant(
                    &format!("bit {bit} of byte {pos} of {} flipped", f.display()),
                    false,
                    Depth::Read,
                    |d| {
                        let p = d.join(&f);
                        let mut b = std::fs::read(&p).unwrap();
                        b[pos] ^= 1 << bit;
                        std::fs::write(&p, b).unwrap();
                    },
                );
            }
        }
    }

    /// Field edits of the first whole record: absurd sizes and geometry, non-digests,
    /// unknown and missing fields, hostile strings. Each must be refused.
    fn record_edits(&mut self) {
        let lines = log_lines(&self.base);
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        let secret = self.sb.secret.to_string_lossy().into_owned();
        let escape = self.sb.escape.join("blob").to_string_lossy().into_owned();
        let mut edits: Vec<(String, Box<dyn Fn(&mut Value)>)> = Vec::new();
        let mut set = |name: &str, path: &'static [&'static str], v: Value| {
            edits.push((
                format!("{} = {}", path.join("."), {
                    let s = v.to_string();
                    if s.len() > 60 {
                        format!("{}…", &s[..60])
                    } else {
                        s
                    }
                }) + name,
                Box::new(move |r: &mut Value| {
                    let mut at = r;
                    for k in &path[..path.len() - 1] {
                        at = match k.parse::<usize>() {
                            Ok(i) => &mut at[i],
                            Err(_) => &mut at[*k],
                        };
                    }
                    at[path[path.len() - 1]] = v.clone();
                }),
            ));
        };
        set("", &["work_dim"], json!(0));
        set("", &["work_dim"], json!(4));
        set("", &["work_dim"], json!(u32::MAX));
        set("", &["global_size"], json!([1u64 << 32, 2]));
        set("", &["global_size"], json!([u64::MAX]));
        set("", &["global_size"], json!([]));
        set("", &["local_size"], json!([0]));
        set("", &["local_size"], json!([1u64 << 21]));
        set("", &["local_size"], json!([1, 1, 1, 1]));
        set("", &["global_offset"], json!([u64::MAX]));
        set("", &["kernel"], json!(""));
        set("", &["kernel"], json!("x\") ; system(\"id\"); printf(\"("));
        set("", &["kernel"], json!("*/ int main(){}\n/*"));
        set("", &["kernel"], json!("k".repeat(1 << 20)));
        set("", &["program"], json!("/etc/passwd"));
        set("", &["program"], json!("/dev/zero"));
        set("", &["program"], json!(secret));
        set(
            "",
            &["program"],
            json!("../../../../../../../../etc/passwd"),
        );
        set("", &["program"], json!("AB".repeat(32)));
        set("", &["args", "0", "before", "hash"], json!("/dev/zero"));
        set("", &["args", "0", "before", "hash"], json!(secret));
        set("", &["args", "0", "after", "hash"], json!(escape));
        set("", &["args", "0", "size"], json!(0));
        set("", &["args", "0", "size"], json!(3999));
        set("", &["args", "0", "size"], json!(u64::MAX));
        set("", &["args", "0", "size"], json!(1u64 << 40));
        set(
            "",
            &["args", "0", "sub_of"],
            json!([first["args"][0]["mem"], 0]),
        );
        set("", &["args", "0", "index"], json!(7));
        set("", &["args", "0", "kind"], json!("scalar"));
        set("", &["args", "0", "kind"], json!("nonsense"));
        set("", &["args", "0", "mem_flags"], json!(1));
        set("", &["local_sizf"], json!([64]));
        set("", &["extra_field"], json!(1));
        set("", &["device", "name"], json!("d".repeat(1 << 20)));
        set(
            "",
            &["args"],
            json!((0..100_000)
                .map(|i| json!({"kind": "unset", "index": i}))
                .collect::<Vec<_>>()),
        );
        set(
            "",
            &["args"],
            json!([{"kind": "scalar", "index": 0, "bytes": "ab".repeat(1 << 20)}]),
        );
        set(
            "",
            &["args"],
            json!([{"kind": "scalar", "index": 0, "bytes": ""}]),
        );
        set(
            "",
            &["args"],
            json!([{"kind": "local", "index": 0, "size": 0}]),
        );
        set(
            "",
            &["args"],
            json!([{"kind": "local", "index": 0, "size": u64::MAX}]),
        );
        for (name, edit) in edits {
            let mut rec = first.clone();
            edit(&mut rec);
            let mut l = lines.clone();
            l[0] = serde_json::to_string(&rec).unwrap();
            self.variant(&name, true, Depth::Read, |d| write_log(d, &l));
        }
        // Missing fields.
        for field in ["kernel", "program", "args", "global_size", "work_dim"] {
            let mut rec = first.clone();
            rec.as_object_mut().unwrap().remove(field);
            let mut l = lines.clone();
            l[0] = serde_json::to_string(&rec).unwrap();
            self.variant(&format!("field {field} removed"), true, Depth::Read, |d| {
                write_log(d, &l)
            });
        }
        // The bit flip that renames `local_size` by one letter (were unknown fields accepted,
        // it would read as a NULL local size and the launch would replay `ok`).
        if let Some(i) = lines.iter().position(|l| l.contains("\"local_size\"")) {
            let mut l = lines.clone();
            l[i] = l[i].replacen("\"local_size\"", "\"local_sizm\"", 1);
            self.variant("local_size renamed by a bit flip", true, Depth::Read, |d| {
                write_log(d, &l)
            });
        }
        // The same for a field every record has.
        if lines[0].contains("\"global_size\"") {
            let l: Vec<String> = lines
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    if i == 0 {
                        s.replacen("\"global_size\"", "\"global_sizd\"", 1)
                    } else {
                        s.clone()
                    }
                })
                .collect();
            self.variant(
                "global_size renamed by a bit flip",
                true,
                Depth::Read,
                |d| write_log(d, &l),
            );
        }
    }

    /// Edits of the program record, written back under its new digest (so only the
    /// record's own checks can refuse it) or in place (a damaged blob).
    fn program_edits(&mut self) {
        let lines = log_lines(&self.base);
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        let program = first["program"].as_str().unwrap().to_string();
        let record: Value =
            serde_json::from_slice(&std::fs::read(self.base.join(blob_rel(&program))).unwrap())
                .unwrap();
        let esc = self.sb.escape.to_string_lossy().into_owned();
        let secret = self.sb.secret.to_string_lossy().into_owned();
        let up = "/..".repeat(20);
        let mut edits: Vec<(String, Value)> = Vec::new();
        // Edits a replay must not refuse (the `-I` directories stay inside the mirror).
        let mut allowed: Vec<Value> = Vec::new();
        let with = |f: &dyn Fn(&mut Value)| {
            let mut r = record.clone();
            f(&mut r);
            r
        };
        for opt in [
            "-include /etc/shadow".to_string(),
            format!("-include {secret}"),
            "-Xclang -load -Xclang x.so".into(),
            "-fplugin=/tmp/x.so".into(),
            "-Wl,-rpath,/tmp".into(),
            format!("{secret}"),
            "-o /tmp/cltrap-hostile-out".into(),
        ] {
            edits.push((
                format!("options {opt:?}"),
                with(&|r: &mut Value| r["options"] = json!(opt)),
            ));
        }
        edits.push((
            "sources[0] = /etc/passwd".into(),
            with(&|r: &mut Value| r["origin"]["sources"][0] = json!("/etc/passwd")),
        ));
        edits.push((
            "sources[0] = /dev/zero".into(),
            with(&|r: &mut Value| r["origin"]["sources"][0] = json!("/dev/zero")),
        ));
        edits.push((
            "unknown field in the record".into(),
            with(&|r: &mut Value| r["plugin"] = json!("x.so")),
        ));
        if record["includes"]["files"].is_array() {
            let paths = [
                format!("{up}{esc}/a.h"),
                format!("/app/../../../../../../../..{esc}/b.h"),
                "relative/c.h".into(),
                format!("{esc}/../d.h"),
            ];
            for p in &paths {
                edits.push((
                    format!("include path {p}"),
                    with(&|r: &mut Value| {
                        for f in r["includes"]["files"].as_array_mut().unwrap() {
                            if f.get("path").is_some() {
                                f["path"] = json!(p);
                            }
                        }
                    }),
                ));
                edits.push((
                    format!("include from {p}"),
                    with(&|r: &mut Value| {
                        for f in r["includes"]["files"].as_array_mut().unwrap() {
                            f["from"] = json!(p);
                        }
                    }),
                ));
                edits.push((
                    format!("build_dir {p}"),
                    with(&|r: &mut Value| r["includes"]["build_dir"] = json!(p)),
                ));
            }
            edits.push((
                "include content /dev/zero".into(),
                with(&|r: &mut Value| {
                    for f in r["includes"]["files"].as_array_mut().unwrap() {
                        if f.get("content").is_some() {
                            f["content"] = json!("/dev/zero");
                        }
                    }
                }),
            ));
            let climb = with(&|r: &mut Value| {
                let o = r["options"].as_str().unwrap_or("").to_string();
                r["options"] = json!(format!(
                    "{o} -I ../../../../../../../../..{esc} -I {up}{esc}"
                ))
            });
            allowed.push(climb.clone());
            edits.push((format!("-I {up}{esc}"), climb));
        }
        for (name, rec) in edits {
            let must = !allowed.contains(&rec);
            let bytes = serde_json::to_vec(&rec).unwrap();
            let lines = lines.clone();
            let old = program.clone();
            self.variant(&name, must, Depth::All, move |d| {
                let h = put_blob(d, &bytes);
                let l: Vec<String> = lines.iter().map(|s| s.replace(&old, &h)).collect();
                write_log(d, &l);
            });
        }
        // In place: the digest no longer matches.
        let bytes =
            serde_json::to_vec(&with(&|r: &mut Value| r["options"] = json!("-DX=1"))).unwrap();
        let rel = blob_rel(&program);
        self.variant(
            "program record changed in place",
            true,
            Depth::All,
            move |d| std::fs::write(d.join(&rel), &bytes).unwrap(),
        );
    }

    /// Symbolic links, FIFOs, deletions and giant sparse files in place of each kind of file
    /// (and of the blob folders).
    fn file_types(&mut self) {
        let files = files_of(&self.base);
        let inputs = input_files(&self.base);
        let mut targets: Vec<PathBuf> = Vec::new();
        for kind in ["manifest", "log", "blob", "index", "pack", "chunk"] {
            // A file every replay must read: one holding a launch's pre-launch contents (an
            // output found equal to its recorded digest is never read back from the capture).
            let of_kind = |f: &&PathBuf| kind_of(f) == kind;
            let needed = files.iter().filter(of_kind).find(|f| inputs.contains(*f));
            if let Some(f) = needed.or_else(|| files.iter().find(of_kind)) {
                targets.push(f.clone());
            }
        }
        let first: Value = serde_json::from_str(&log_lines(&self.base)[0]).unwrap();
        let program = first["program"].as_str().unwrap().to_string();
        targets.push(blob_rel(&program));
        let secret = self.sb.secret.clone();
        for t in targets {
            let name = t.display().to_string();
            let s = secret.clone();
            self.variant(
                &format!("{name} is a link to a file outside"),
                true,
                Depth::Read,
                |d| {
                    std::fs::remove_file(d.join(&t)).unwrap();
                    symlink(&s, d.join(&t)).unwrap();
                },
            );
            self.variant(
                &format!("{name} is a link to /dev/zero"),
                true,
                Depth::Read,
                |d| {
                    std::fs::remove_file(d.join(&t)).unwrap();
                    symlink("/dev/zero", d.join(&t)).unwrap();
                },
            );
            self.variant(&format!("{name} is a FIFO"), true, Depth::Read, |d| {
                std::fs::remove_file(d.join(&t)).unwrap();
                let c = std::ffi::CString::new(d.join(&t).to_string_lossy().as_bytes()).unwrap();
                // SAFETY: a NUL-terminated path.
                assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
            });
            self.variant(&format!("{name} deleted"), true, Depth::Read, |d| {
                std::fs::remove_file(d.join(&t)).unwrap()
            });
            // A pack's chunks are read at their offsets: a longer pack still holds them.
            let grown_refused = kind_of(&t) != "pack";
            self.variant(
                &format!("{name} grown to 64 GiB (sparse)"),
                grown_refused,
                Depth::Read,
                |d| {
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .open(d.join(&t))
                        .unwrap();
                    f.set_len(1 << 36).unwrap();
                },
            );
        }
        // The program's blob folder as a link to a copy outside: never followed.
        let sub = blob_rel(&program).parent().unwrap().to_path_buf();
        let outside = self.sb.root.join(format!("outside-{}", self.label));
        self.variant("a blob folder is a link", true, Depth::Read, |d| {
            copy_tree(&d.join(&sub), &outside);
            std::fs::remove_dir_all(d.join(&sub)).unwrap();
            symlink(&outside, d.join(&sub)).unwrap();
        });
        // A FIFO journal.
        self.variant("a FIFO journal", true, Depth::Read, |d| {
            let p = d.join(format!("{}x", cltrap_capture::journal::JOURNAL_PREFIX));
            let c = std::ffi::CString::new(p.to_string_lossy().as_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        });
    }
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

/// Captures the headers fixture (includes, `-I`, `-D`): a capture with every path-like field.
fn capture_headers(sb: &Sandbox) -> PathBuf {
    let exe = fixture("headers");
    let app = sb.root.join("app");
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
    let opts = format!("-I inc -D EXTRA_DIR={}", app.join("extra").display());
    let dir = sb.root.join("base-headers");
    let t = tools();
    let out = run_with_env(
        &t.cltrap,
        &[
            OsStr::new("run"),
            OsStr::new("--out"),
            dir.as_os_str(),
            OsStr::new("--"),
            exe.as_os_str(),
            OsStr::new(&opts),
        ],
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        Some(&app),
    );
    assert!(out.success(), "{}", out.describe());
    std::fs::remove_dir_all(&app).unwrap();
    dir
}

/// Captures the demo application: several kernels, delta lines, chunked contents in packs.
fn capture_demo(sb: &Sandbox) -> PathBuf {
    let root = workspace_root();
    let built = std::process::Command::new(root.join("scripts/build-c.sh"))
        .arg("demo")
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let exe = root.join("target/examples/cltrap-demo");
    let dir = sb.root.join("base-demo");
    let t = tools();
    let out = run_with_env(
        &t.cltrap,
        &[
            OsStr::new("run"),
            OsStr::new("--out"),
            dir.as_os_str(),
            OsStr::new("--"),
            exe.as_os_str(),
        ],
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        None,
    );
    assert!(out.success(), "{}", out.describe());
    dir
}

/// What is wrong with one command's outcome on a variant, if anything.
fn judge(v: &Variant, what: &str, o: &Outcome, must_fail: bool) -> Option<String> {
    let all = format!("{}{}", o.stdout_text(), o.stderr);
    let bad = if o.signal.is_some() || o.code.is_none() {
        Some(format!("ended by {}", o.ending()))
    } else if o.code == Some(101) || all.contains("panicked") {
        Some("panicked".into())
    } else if !matches!(o.code, Some(0..=2)) {
        Some(format!("exit {:?}", o.code))
    } else if o.code == Some(2) && !o.stderr.contains("cltrap") {
        Some("exit 2 without a message on stderr".into())
    } else if must_fail && o.code != Some(2) {
        Some(format!("not refused (exit {:?})", o.code))
    } else if o.code == Some(2) && (what == "list" || what == "show") {
        let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        (lines.len() != 1 || !lines[0].starts_with("cltrap: "))
            .then(|| "exit 2 without exactly one `cltrap: ` line".to_string())
    } else {
        None
    };
    bad.map(|b| format!("{} — {what}: {b}\n{}", v.name, o.describe()))
}

/// Runs the commands for one variant; the problems found.
fn exercise(sb: &Sandbox, v: &Variant) -> Vec<String> {
    let d = v.dir.as_os_str();
    let mut problems = Vec::new();
    let list = sb.cltrap(&[OsStr::new("list"), d]);
    problems.extend(judge(v, "list", &list, false));
    let show = sb.cltrap(&[OsStr::new("show"), d, OsStr::new("0")]);
    problems.extend(judge(v, "show", &show, false));
    let replay = sb.cltrap(&[OsStr::new("replay"), d, OsStr::new("--in-process")]);
    problems.extend(judge(v, "replay", &replay, v.must_refuse));
    if v.depth == Depth::All {
        let cover = sb.cltrap(&[OsStr::new("cover"), d, OsStr::new("--in-process")]);
        problems.extend(judge(v, "cover", &cover, false));
        let check = sb.cltrap(&[OsStr::new("check"), d, OsStr::new("0")]);
        problems.extend(judge(v, "check", &check, false));
        let out = sb.out.join(v.dir.file_name().unwrap());
        let export = sb.cltrap(&[
            OsStr::new("export"),
            d,
            OsStr::new("0"),
            OsStr::new("--c"),
            out.as_os_str(),
        ]);
        problems.extend(judge(v, "export", &export, false));
    }
    problems
}

#[test]
fn hundreds_of_damaged_captures_end_in_a_clear_error_or_a_correct_result() {
    let sb = Sandbox::new();
    let headers = capture_headers(&sb);
    let demo = capture_demo(&sb);
    let v3 = workspace_root().join("tests/fixtures/capture-v3");
    let mut variants = Vec::new();
    for (label, base, seed) in [
        ("headers", &headers, 1u64),
        ("demo", &demo, 2),
        ("v3", &v3, 3),
    ] {
        let mut m = Maker {
            sb: &sb,
            base: base.clone(),
            label,
            rng: Rng(0x9E37_79B9_7F4A_7C15 ^ seed),
            out: Vec::new(),
        };
        m.log_damage();
        m.bit_flips(if label == "v3" { 6 } else { 12 });
        m.file_types();
        if label != "v3" {
            m.record_edits();
            m.program_edits();
        }
        variants.extend(m.out);
    }
    assert!(variants.len() >= 300, "only {} variants", variants.len());
    // The undamaged captures replay: the damage, not the harness, makes every refusal.
    for base in [&headers, &demo] {
        let o = sb.cltrap(&[
            OsStr::new("replay"),
            base.as_os_str(),
            OsStr::new("--in-process"),
        ]);
        assert!(o.success(), "{}", o.describe());
    }
    // Two workers (each with its own PoCL cache: the harness names it after the thread).
    let chunks: Vec<Vec<&Variant>> = (0..2)
        .map(|w| variants.iter().skip(w).step_by(2).collect())
        .collect();
    let problems: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .enumerate()
            .map(|(w, part)| {
                let sb = &sb;
                std::thread::Builder::new()
                    .name(format!("hostile_captures_worker_{w}"))
                    .spawn_scoped(s, move || {
                        part.iter()
                            .flat_map(|v| exercise(sb, v))
                            .collect::<Vec<_>>()
                    })
                    .unwrap()
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let strays = sb.strays();
    assert!(
        strays.is_empty(),
        "files appeared outside the captures and the commands' folders: {strays:?}"
    );
    assert!(!sb.escape.exists());
    assert_eq!(
        std::fs::read_to_string(&sb.secret).unwrap(),
        "SECRET-LINE\n"
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) in {} variants:\n{}",
        problems.len(),
        variants.len(),
        problems.join("\n\n")
    );
}

/// One damaged launch line in the middle of a capture's log: `list` lists the other launches
/// and names the line, `show` of the damaged launch refuses it in one sentence, and `replay`
/// (in one process and through workers) replays every other launch that does not depend on
/// it, reports the damaged line as an error and exits 2.
#[test]
fn one_damaged_line_in_the_middle_leaves_the_other_launches_readable_and_replayable() {
    let sb = Sandbox::new();
    let demo = capture_demo(&sb);
    let dir = sb.variants.join("demo-damaged-middle");
    copy_tree(&demo, &dir);
    let mut lines = log_lines(&dir);
    assert!(lines.len() >= 3, "{} lines", lines.len());
    let mid = lines.len() / 2;
    let id = serde_json::from_str::<Value>(&lines[mid]).unwrap()["id"]
        .as_u64()
        .unwrap();
    // The record keeps its id, loses the rest.
    lines[mid] = json!({ "id": id, "grid": "damaged" }).to_string();
    write_log(&dir, &lines);
    let named = format!(
        "line {} of launches.jsonl (launch {id}) is damaged",
        mid + 1
    );
    let d = dir.as_os_str();

    let list = sb.cltrap(&[OsStr::new("list"), d]);
    // The other launches are listed and the damaged line named; the exit says damaged.
    assert_eq!(list.code, Some(2), "{}", list.describe());
    assert!(list.stdout_text().contains(&named), "{}", list.describe());
    assert_eq!(
        meaningful_stderr_lines(&list.stderr).len(),
        1,
        "{}",
        list.describe()
    );

    let id_arg = id.to_string();
    let show = sb.cltrap(&[OsStr::new("show"), d, OsStr::new(&id_arg)]);
    assert_eq!(show.code, Some(2), "{}", show.describe());
    assert!(show.stderr.contains(&named), "{}", show.describe());

    for mode in [&["--in-process"][..], &[][..]] {
        let mut args = vec![OsStr::new("replay"), d];
        args.extend(mode.iter().map(OsStr::new));
        let replay = sb.cltrap(&args);
        let out = replay.stdout_text();
        assert_eq!(replay.code, Some(2), "{mode:?}: {}", replay.describe());
        assert!(out.contains(&named), "{mode:?}: {}", replay.describe());
        assert!(
            replay.stderr.contains(&named),
            "{mode:?}: {}",
            replay.describe()
        );
        let damaged = out
            .lines()
            .filter(|l| l.starts_with("damaged launch record: error: "))
            .count();
        let launches: Vec<&str> = out.lines().filter(|l| l.starts_with("launch ")).collect();
        // Every other launch replays: the damaged one and those written as its changes are
        // the only ones left out, each named.
        assert!(!launches.is_empty(), "{mode:?}: {}", replay.describe());
        assert!(
            launches.iter().all(|l| l.ends_with(": ok")),
            "{mode:?}: {}",
            replay.describe()
        );
        assert_eq!(
            launches.len() + damaged,
            lines.len(),
            "{mode:?}: {}",
            replay.describe()
        );
        assert!(
            out.contains(&format!("{damaged} failed")),
            "{mode:?}: {}",
            replay.describe()
        );
    }
}

/// The same damage (one launch line in the middle of the demo's log) in the analyses:
/// `cover` (through workers and in one process), `check`, `show --kernel` and `export`
/// (`--c` and `--gpuverify`) each name the damaged line once, give their results for the
/// intact launches and end with exit 2; a selection or an export of the damaged launch
/// itself is told so.
#[test]
fn one_damaged_line_leaves_cover_check_and_export_working_on_the_other_launches() {
    let sb = Sandbox::new();
    let demo = capture_demo(&sb);
    let dir = sb.variants.join("demo-damaged-analyses");
    copy_tree(&demo, &dir);
    let mut lines = log_lines(&dir);
    let mid = lines.len() / 2;
    let id = serde_json::from_str::<Value>(&lines[mid]).unwrap()["id"]
        .as_u64()
        .unwrap();
    lines[mid] = json!({ "id": id, "grid": "damaged" }).to_string();
    write_log(&dir, &lines);
    let log = dir.join("launches.jsonl");
    let named = format!(
        "line {} of {} (launch {id}) is damaged",
        mid + 1,
        log.display()
    );
    let d = dir.as_os_str();
    // The intact launches, as `list` reads them.
    let list = sb.cltrap(&[OsStr::new("list"), d]);
    let intact: Vec<u64> = list
        .stdout_text()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(
        !intact.is_empty() && !intact.contains(&id),
        "{}",
        list.describe()
    );
    let said_once = |o: &Outcome, what: &str| {
        assert_eq!(o.code, Some(2), "{what}: {}", o.describe());
        assert_eq!(
            o.stderr.matches(&named).count(),
            1,
            "{what}: {}",
            o.describe()
        );
        assert!(!o.stderr.contains("panicked"), "{what}: {}", o.describe());
    };

    for mode in [&["--in-process"][..], &[][..]] {
        let mut args = vec![OsStr::new("cover"), d];
        args.extend(mode.iter().map(OsStr::new));
        let cover = sb.cltrap(&args);
        said_once(&cover, &format!("cover {mode:?}"));
        let out = cover.stdout_text();
        // Every intact launch is measured, none failed; the summary says what was left out.
        assert!(
            out.contains(&format!(
                "over {} launch(es) (0 skipped, 0 failed)",
                intact.len()
            )),
            "cover {mode:?}: {}",
            cover.describe()
        );
        assert!(
            out.contains("not measured: "),
            "cover {mode:?}: {}",
            cover.describe()
        );
    }

    // A selection naming an intact launch and the damaged one checks the intact one.
    let (first, id_arg) = (intact[0].to_string(), id.to_string());
    let check = sb.cltrap(&[
        OsStr::new("check"),
        d,
        OsStr::new(&first),
        OsStr::new(&id_arg),
    ]);
    said_once(&check, "check");
    assert!(
        check.stdout_text().contains("not checked: "),
        "check: {}",
        check.describe()
    );
    // A selection of the damaged launch alone leaves nothing to check, and says so.
    let only = sb.cltrap(&[OsStr::new("check"), d, OsStr::new(&id_arg)]);
    said_once(&only, "check of the damaged launch");
    assert!(
        only.stderr.contains("nothing to analyse"),
        "{}",
        only.describe()
    );
    let json = sb.cltrap(&[
        OsStr::new("check"),
        d,
        OsStr::new(&first),
        OsStr::new("--json"),
    ]);
    said_once(&json, "check --json");
    let report: Value = serde_json::from_str(&json.stdout_text())
        .unwrap_or_else(|e| panic!("check --json: {e}: {}", json.describe()));
    let checked = report["launches"].as_array().unwrap();
    assert_eq!(checked.len(), 1, "{}", json.describe());
    assert_eq!(
        checked[0]["id"].as_u64(),
        Some(intact[0]),
        "{}",
        json.describe()
    );
    assert_eq!(
        checked[0]["status"]["status"],
        "checked",
        "{}",
        json.describe()
    );

    // `show --kernel` generalises over the intact launches of a kernel.
    let kernel = list
        .stdout_text()
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_string();
    let show = sb.cltrap(&[
        OsStr::new("show"),
        d,
        OsStr::new("--kernel"),
        OsStr::new(&kernel),
    ]);
    said_once(&show, "show --kernel");
    assert!(show.stdout_text().contains(&kernel), "{}", show.describe());

    let c = sb.out.join("repro-intact");
    let export = sb.cltrap(&[
        OsStr::new("export"),
        d,
        OsStr::new(&first),
        OsStr::new("--c"),
        c.as_os_str(),
    ]);
    said_once(&export, "export --c");
    assert!(c.join("main.c").is_file(), "{}", export.describe());
    let gv = sb.out.join("gpuverify");
    let export = sb.cltrap(&[
        OsStr::new("export"),
        d,
        OsStr::new("--gpuverify"),
        gv.as_os_str(),
    ]);
    said_once(&export, "export --gpuverify");
    let log_json: Value =
        serde_json::from_str(&std::fs::read_to_string(gv.join("log.json")).unwrap()).unwrap();
    assert!(
        log_json.as_array().is_some_and(|a| !a.is_empty()),
        "{}",
        export.describe()
    );
    // The damaged launch itself cannot be exported: one sentence saying why.
    let bad = sb.out.join("repro-damaged");
    let export = sb.cltrap(&[
        OsStr::new("export"),
        d,
        OsStr::new(&id_arg),
        OsStr::new("--c"),
        bad.as_os_str(),
    ]);
    assert_eq!(export.code, Some(2), "{}", export.describe());
    let said = meaningful_stderr_lines(&export.stderr);
    assert_eq!(said.len(), 1, "{}", export.describe());
    assert!(
        said[0].contains("cannot be exported") && said[0].contains(&named),
        "{}",
        export.describe()
    );
    assert!(!bad.exists());
}
