#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer through libfuzzer-sys) of the loader, the /tree view, the
# exporter, the search decoder and the session index against edits in place (index).
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   default: 60 s, targets load tree export search index live
# Builds fuzz/ with SanitizerCoverage on stable Rust (no nightly: -C passes/llvm-args only),
# seeds the corpus from the repo's sessions (and ../shared's when present), runs each target
# for the time given, and prints one RELIABILITY line per target. A crash stops the run and
# leaves its input in fuzz/artifacts/TARGET/: move it to fuzz/regressions/TARGET/ (replayed by
# tests/fuzz_regressions.rs) once it is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(load tree export search index live)
triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# --target keeps the instrumentation off build scripts and proc macros.
cargo build --release --locked --quiet --manifest-path fuzz/Cargo.toml --target-dir target/fuzz --target "$triple" --bins
seeds=target/fuzz/seeds
rm -rf "$seeds" && mkdir -p "$seeds/load" "$seeds/tree" "$seeds/export" "$seeds/search" "$seeds/index" "$seeds/live"
for f in fixtures/*.jsonl fixtures/bad/*.jsonl fuzz/regressions/load/*; do
  [ -f "$f" ] && cp "$f" "$seeds/load/$(echo "$f" | tr / _)"
done
if [ -d ../shared/fixtures ]; then
  find ../shared/fixtures -name '*.jsonl' -size -256k | while read -r f; do cp "$f" "$seeds/load/shared_$(basename "$f")"; done
fi
for f in fuzz/regressions/tree/*; do [ -f "$f" ] && cp "$f" "$seeds/tree/"; done
# The exporter: hostile text, then a tree recipe; the search decoder: a query, then session lines.
printf '</details>\n<script>x</script>``a`\0' > "$seeds/export/html"
head -c 256 /dev/urandom >> "$seeds/export/html" 2>/dev/null || true
for f in fixtures/demo.jsonl fixtures/bad/*.jsonl fuzz/regressions/search/*; do
  [ -f "$f" ] && { printf '\003the'; head -c 60000 "$f"; } > "$seeds/search/$(echo "$f" | tr / _)"
done
head -c 512 /dev/urandom > "$seeds/tree/random" 2>/dev/null || true
# The index target: edits (up to 15 bytes), then a tree recipe (messages mostly).
for k in 1 2 3 4; do head -c 300 /dev/urandom > "$seeds/index/random$k" 2>/dev/null || true; done
# The live engine: a script of turns, jumps back, restarts and idle gaps.
for k in 1 2 3 4; do head -c 200 /dev/urandom > "$seeds/live/random$k" 2>/dev/null || true; done
for f in fuzz/regressions/live/*; do [ -f "$f" ] && cp "$f" "$seeds/live/"; done
status=0
for t in "${targets[@]}"; do
  corpus=target/fuzz/corpus/$t
  mkdir -p "$corpus" "fuzz/artifacts/$t"
  log=target/fuzz/$t.log
  set +e
  # A tree recipe is two bytes per entry: 1 KiB is a 512-entry tree, plenty for its shapes.
  max_len=65536
  [ "$t" = tree ] && max_len=1024
  [ "$t" = export ] && max_len=2048
  [ "$t" = index ] && max_len=256
  [ "$t" = live ] && max_len=256
  # The index target writes, indexes and edits a file per case (88 a second in CI, where 90 s
  # gave 7,963): twice as long, for its 10,000 cases a run.
  t_secs=$secs
  [ "$t" = index ] && t_secs=$((secs * 2))
  "target/fuzz/$triple/release/$t" "$corpus" "$seeds/$t" -max_total_time="$t_secs" -max_len=$max_len \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  corpus_n=$(ls "$corpus" | wc -l)
  if [ $rc -ne 0 ]; then
    status=1
    echo "fuzz $t: FAILED (exit $rc); the input is in fuzz/artifacts/$t/; the end of the log:" >&2
    tail -40 "$log" >&2
  fi
  line="fuzz $t: ${execs:-0} executions in ${t_secs} s, ${cov:-cov: ?}, corpus $corpus_n inputs, crashes: $([ $rc -eq 0 ] && echo 0 || echo 1)"
  echo "RELIABILITY $line"
  mkdir -p target/tmp/reliability && echo "$line" > "target/tmp/reliability/fuzz-$t.txt"
done
exit $status
