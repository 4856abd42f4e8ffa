#!/usr/bin/env bash
# Differential test in CI, for each Kubernetes version preemptd answers as (1.35, 1.36, 1.37): a
# bounded budget of random scenarios (a fresh seed per version, printed) answered by that
# upstream kube-scheduler's DefaultPreemption (k8s.io/kubernetes v1.35.4, v1.36.3, v1.37.2) and
# by preemptd with PREEMPTD_KUBERNETES_VERSION set to it. Fails on any mismatch. First the
# harness's own checks per version (go vet, go test: it reproduces tests/conformance/ and pins
# the budget order) and the generator's (fmt, clippy, tests).
# Then gang preemption: 1.37 with GenericWorkload=true (PodGroups in most cases, PodGroup
# preemptors answered by upstream's PodGroupPostFilter), DIFFERENTIAL_GANG_CASES cases (500)
# under DIFFERENTIAL_GANG_SEED (2026: fixed, so CI re-checks known-good cases; the soak runs
# fresh seeds, see docs/testing.md).
# The soak (100,000+ cases per version) is the same command with a larger --cases; see
# docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source upstream/kubernetes-versions.sh

cases="${DIFFERENTIAL_CASES:-1000}"
gang_cases="${DIFFERENTIAL_GANG_CASES:-500}"
gang_seed="${DIFFERENTIAL_GANG_SEED:-2026}"
go version
echo "== preemptd-difftest: fmt, clippy, tests"
(cd upstream/difftest && cargo fmt -- --check \
  && cargo clippy --release --locked --quiet --all-targets -- -D warnings \
  && cargo test --release --locked --quiet)
# The debug binary `cargo test` has just built: no release build of the whole crate in CI.
cargo build --locked --quiet --bin preemptd
for version in "${kubernetes_versions[@]}"; do
  echo "== upstream harness for Kubernetes ${version}: build, go vet, go test"
  ./upstream/build-harness --kubernetes-version "${version}" >/dev/null
  # shellcheck disable=SC2046 # the flags are words
  (cd upstream/harness && go vet $(go_module_flags "${version}") . \
    && go test -count=1 $(go_module_flags "${version}") .)
  echo "== differential test against upstream kube-scheduler ${version} (${cases} cases)"
  PREEMPTD_BIN="$PWD/target/debug/preemptd" ./upstream/differential \
    --kubernetes-version "${version}" --cases "${cases}"
done
if [[ "${gang_cases}" -gt 0 ]]; then
  echo "== differential test against upstream kube-scheduler 1.37 with GenericWorkload=true (${gang_cases} cases, seed ${gang_seed})"
  PREEMPTD_BIN="$PWD/target/debug/preemptd" ./upstream/differential \
    --kubernetes-version 1.37 --feature-gates GenericWorkload=true --cases "${gang_cases}" \
    --seed "${gang_seed}"
else
  echo "== gang differential not run (DIFFERENTIAL_GANG_CASES=0)"
fi
