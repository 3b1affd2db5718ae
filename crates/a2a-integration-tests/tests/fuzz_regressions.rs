//! Every input kept for the fuzz targets (the seeds under `fuzz/seeds`, and the crashes once
//! found under `fuzz/regressions`) replayed through the target's checks.

use std::path::PathBuf;

use a2a_integration_tests::fuzz::TARGETS;

fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("a readable input");
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_every_past_crash_passes_its_target_checks() {
    let mut replayed = 0;
    let mut failed = Vec::new();
    for (target, check) in TARGETS {
        let seeds = inputs("seeds", target);
        assert!(!seeds.is_empty(), "fuzz/seeds/{target} has inputs");
        for (path, bytes) in seeds.iter().chain(inputs("regressions", target).iter()) {
            if std::panic::catch_unwind(|| check(bytes)).is_err() {
                failed.push(format!("{target} fails on {}", path.display()));
            }
            replayed += 1;
        }
    }
    println!("replayed {replayed} fuzz inputs");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
