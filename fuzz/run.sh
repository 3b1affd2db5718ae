#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) from its seeds, on the stable toolchain.
# A crash stops the run and leaves its input in fuzz/artifacts/<target>/: fix it, and keep the
# input in fuzz/regressions/<target>/ so `cargo test` replays it.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
# cargo-fuzz passes nightly-only flags; RUSTC_BOOTSTRAP lets the stable compiler take them.
export RUSTC_BOOTSTRAP=1
target_dir="${CARGO_TARGET_DIR:-target}/fuzz"
cargo fuzz build -s none --target-dir "$target_dir"
for target in $(cargo fuzz list); do
  corpus="$(mktemp -d)"
  echo "== fuzz $target for ${seconds}s"
  cargo fuzz run -s none --target-dir "$target_dir" "$target" "$corpus" "seeds/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 2>&1 |
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|==|SUMMARY|thread|Test unit)' || true
  rm -rf "$corpus"
  if ls "artifacts/$target"/crash-* "artifacts/$target"/oom-* "artifacts/$target"/timeout-* >/dev/null 2>&1; then
    echo "fuzz $target found a failing input: see fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
