//! Prints the coverage-instrumented source of a file (map on stderr):
//! `cargo run -p cltrap-kernel --example cover -- FILE [OPTIONS]`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let Some(path) = a.get(1) else {
        eprintln!("usage: cover FILE [BUILD OPTIONS]");
        std::process::exit(2);
    };
    let res = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|src| {
            cltrap_kernel::parse_program(&src, &a[2..].join(" ")).map_err(|e| e.to_string())
        })
        .and_then(|p| {
            cltrap_kernel::coverage::instrument_coverage(&p, Default::default())
                .map_err(|e| e.to_string())
        });
    match res {
        Ok(out) => {
            print!("{}", out.source);
            eprintln!(
                "{}",
                serde_json::to_string_pretty(&out.map).unwrap_or_default()
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
