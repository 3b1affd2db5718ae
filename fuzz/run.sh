#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) from its seeds, on the stable toolchain, and
# fails if any target crashed, ran out of memory or timed out. The failing input is left in
# fuzz/artifacts/<target>/: fix the bug, and keep the input in fuzz/regressions/<target>/ so
# `cargo test` replays it.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
# cargo-fuzz passes nightly-only flags; RUSTC_BOOTSTRAP lets the stable compiler take them.
export RUSTC_BOOTSTRAP=1
target_dir="${CARGO_TARGET_DIR:-target}/fuzz"
cargo fuzz build -s none --target-dir "$target_dir"

# Inputs a target failed on, in this run or an earlier one that was never cleaned up.
failing_inputs() {
  find "artifacts/$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' \) \
    2>/dev/null || true
}

failed=()
for target in $(cargo fuzz list); do
  corpus="$(mktemp -d)"
  echo "== fuzz $target for ${seconds}s"
  status=0
  cargo fuzz run -s none --target-dir "$target_dir" "$target" "$corpus" "seeds/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 >"$corpus.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|==|SUMMARY|thread|Test unit)' \
    "$corpus.log" || true
  rm -rf "$corpus"
  found="$(failing_inputs "$target")"
  if [ "$status" -ne 0 ] || [ -n "$found" ]; then
    # The panic and libFuzzer's summary; cargo-fuzz's own backtrace after them says nothing new.
    grep -E -A12 'panicked at|^==[0-9]+== ERROR' "$corpus.log" | head -n 40 >&2 || true
    echo "fuzz $target failed (exit $status); failing inputs: ${found:-none saved}" >&2
    failed+=("$target")
  fi
  rm -f "$corpus.log"
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
