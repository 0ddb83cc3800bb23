fn show(n: &cltrap_kernel::clang::RawNode, d: usize, src: &str) {
    let txt = match (n.loc.start, n.loc.end) {
        (Some(s), Some(e)) if s <= e && (e as usize) <= src.len() => {
            src[s as usize..e as usize].replace('\n', " ")
        }
        _ => "?".into(),
    };
    let txt: String = txt.chars().take(50).collect();
    println!(
        "{:w$}{} '{}' <{}> {:?}..{:?} m{}{} `{}`",
        "",
        cltrap_kernel::clang::kind_name(n.kind),
        n.spelling,
        n.ty,
        n.loc.start,
        n.loc.end,
        n.loc.start_in_macro as u8,
        n.loc.end_in_macro as u8,
        txt,
        w = d * 2
    );
    for c in &n.children {
        show(c, d + 1, src);
    }
}
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let src = std::fs::read_to_string(&a[1]).unwrap();
    let t = cltrap_kernel::clang::parse("program.cl", &src, &a[2..]).unwrap();
    println!("{}", cltrap_kernel::clang::libclang_version().unwrap());
    for d in &t.diags {
        println!("DIAG {:?}", d);
    }
    println!("{:?}", t.macro_expansions);
    for d in &t.decls {
        if d.loc.start.is_some() {
            show(d, 0, &src);
        }
    }
}
#[allow(dead_code)]
fn model() {}
