#!/usr/bin/env bash
# The decoders' fuzz targets (fuzz/, cargo-fuzz and libFuzzer with AddressSanitizer), each
# for a bounded time from a seed corpus of the conformance scenarios. cargo-fuzz needs a
# nightly compiler's flags: RUSTC_BOOTSTRAP lets the stable toolchain accept them.
# A crash fails the run; its input is in fuzz/artifacts/TARGET/ (make it a regression test).
# Longer runs: FUZZ_SECONDS=3600 .ci/fuzz.sh; some targets only: .ci/fuzz.sh wire_pod extender_json
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-30}"
echo "== fuzzing the decoders (${seconds}s a target)"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz@0.13.2
fi
export RUSTC_BOOTSTRAP=1
corpus=fuzz/corpus
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  targets=(kubernetes_json quantity wire_pod sync_stream label_selector extender_json)
fi
mkdir -p "${corpus}/kubernetes_json" "${corpus}/quantity"
for target in "${targets[@]}"; do
  mkdir -p "${corpus}/${target}"
done
# The extender's seeds: kube-scheduler request bodies.
mkdir -p "${corpus}/extender_json"
cp fuzz/seeds/extender_json/*.json "${corpus}/extender_json/"
# Seeds: every conformance scenario's cluster List and preemptor Pod, and some quantities.
python3 - "${corpus}/kubernetes_json" tests/conformance/*.json tests/conformance/*/*.json <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for path in map(pathlib.Path, sys.argv[2:]):
    scenario = json.loads(path.read_text())
    for part in ("cluster", "preemptor"):
        if part in scenario:
            (out / f"{path.parent.name}-{path.stem}-{part}.json").write_text(json.dumps(scenario[part]))
PY
for q in 100m 1.5Gi 2e3 0.5 1Ki 128974848 129e6 123Mi 1E-3 12345678901234567890; do
  printf '%s' "${q}" >"${corpus}/quantity/${q}"
done
cargo fuzz build --release
for target in "${targets[@]}"; do
  echo "== [${SECONDS}s] fuzz ${target}"
  # Earlier findings (fuzz/regressions/TARGET) are replayed as part of the corpus.
  regressions=()
  if [ -d "fuzz/regressions/${target}" ]; then
    regressions=("fuzz/regressions/${target}")
  fi
  cargo fuzz run --release "${target}" "${corpus}/${target}" "${regressions[@]}" -- \
    -max_total_time="${seconds}" -rss_limit_mb=4096 -print_final_stats=1 2>&1 | tail -n 12
done
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each without a crash"
