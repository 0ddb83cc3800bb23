//! Prints the kernel model of a file as JSON: `cargo run -p cltrap-kernel --example model -- FILE [OPTIONS]`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let Some(path) = a.get(1) else {
        eprintln!("usage: model FILE [BUILD OPTIONS]");
        std::process::exit(2);
    };
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    match cltrap_kernel::parse_program(&src, &a[2..].join(" ")) {
        Ok(p) => match serde_json::to_string_pretty(&p.functions) {
            Ok(j) => println!("{j}"),
            Err(e) => eprintln!("{e}"),
        },
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
