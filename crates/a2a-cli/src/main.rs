//! The `a2a` command. Today it prints the version and a fresh idempotency key; `serve`, `send`
//! and the rest arrive with the server and client.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("key") => {
            println!("{}", a2a_protocol_types::idempotency::generate_key());
            ExitCode::SUCCESS
        }
        Some("--version") | Some("version") => {
            println!("a2a {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: a2a key | a2a version");
            ExitCode::from(2)
        }
    }
}
