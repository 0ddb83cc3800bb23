//! Prints the schedule-permuted source of a file: `cargo run -p cltrap-kernel --example permute -- FILE [OPTIONS]`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let Some(path) = a.get(1) else {
        eprintln!("usage: permute FILE [BUILD OPTIONS]");
        std::process::exit(2);
    };
    let res = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|src| {
            cltrap_kernel::parse_program(&src, &a[2..].join(" ")).map_err(|e| e.to_string())
        })
        .and_then(|p| cltrap_kernel::permute::permute_schedule(&p).map_err(|e| e.to_string()));
    match res {
        Ok(out) => {
            print!("{}", out.source);
            eprintln!("{:?}", out.map);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
