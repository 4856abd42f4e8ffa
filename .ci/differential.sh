#!/usr/bin/env bash
# Differential test in CI: a bounded budget of random scenarios (fresh seed, printed) answered
# by upstream kube-scheduler v1.35.4's DefaultPreemption and by preemptd. Fails on any mismatch.
# The soak (100,000+ cases) is the same command with a larger --cases; see docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

cases="${DIFFERENTIAL_CASES:-2000}"
echo "== differential test against upstream kube-scheduler (${cases} cases)"
go version
# The debug binary `cargo test` has just built: no release build of the whole crate in CI.
cargo build --locked --quiet --bin preemptd
PREEMPTD_BIN="$PWD/target/debug/preemptd" ./upstream/differential --cases "${cases}"
