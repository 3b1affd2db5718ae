//! Rebuilds the crate when a migration is added: `sqlx::migrate!` embeds the directory's files,
//! but the compiler tracks only the files it read, not new ones.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
