#!/usr/bin/env bash
# The Go and Java clients against the real server: the Go stubs' freshness, both test
# suites (every conformance scenario, watch resume, OUT_OF_RANGE re-list, epoch change) and
# both examples of the client READMEs. Caches: clients/go/.bin (pinned generators, buf's cache),
# clients/java/.m2 (Maven's repository), Go's module cache; all ignored by git.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PREEMPTD_BIN="${PREEMPTD_BIN:-$root/target/debug/preemptd}"
mvn_flags=(-B -ntp "-Dmaven.repo.local=$root/clients/java/.m2")
SECONDS=0

echo "== go/java clients: toolchains"
if [[ ! -x "$PREEMPTD_BIN" ]]; then
  cargo build --locked
fi
if ! command -v mvn >/dev/null || ! command -v javac >/dev/null || ! command -v npx >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq maven openjdk-17-jdk-headless npm >/dev/null
fi
go version
java -version 2>&1 | sed -n 1p
mvn -B -v | sed -n 1p

# Maven's downloads and the Java build overlap the Go steps (network-bound beside CPU-bound).
(cd clients/java && mvn "${mvn_flags[@]}" -q test-compile) >.ci/clients-java-build.log 2>&1 &
java_build_pid=$!
children=("${java_build_pid}")
trap 'kill "${children[@]}" 2>/dev/null || true' EXIT

echo "== go client: generated code is fresh (pinned protoc-gen-go, protoc-gen-go-grpc, buf)"
clients/go/gen.sh --check

echo "== go client: vet and tests against the real server"
(cd clients/go && go vet ./... && go test -count=1 ./...)

echo "== java client: build and tests against the real server"
if ! wait "${java_build_pid}"; then
  cat .ci/clients-java-build.log
  exit 1
fi
(cd clients/java && mvn "${mvn_flags[@]}" -Dpreemptd.requireServer=true test)

echo "== examples against the real server"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >.ci/clients-server.log # a previous run's "serving" must not pass the wait below
"$PREEMPTD_BIN" serve --listen "127.0.0.1:${port}" --metrics-listen off >.ci/clients-server.log 2>&1 &
server_pid=$!
children+=("${server_pid}")
for _ in $(seq 100); do
  grep -q serving .ci/clients-server.log && break
  sleep 0.1
done
out=$(cd clients/go && go run ./examples/quickstart -addr "127.0.0.1:${port}" -follow 1s)
echo "$out"
grep -q "decision: OUTCOME_PREEMPT node=node-b victims=\[shop/batch-2\]" <<<"$out"
grep -q "NOMINATION_EVENT_TYPE_NOMINATED shop/checkout on node-b" <<<"$out"
out=$(cd clients/java && mvn "${mvn_flags[@]}" -q compile exec:java -Dexec.args="127.0.0.1:${port} 1")
echo "$out"
grep -q "decision: OUTCOME_PREEMPT node=node-b victims=\[shop/batch-2\]" <<<"$out"
grep -q "NOMINATION_EVENT_TYPE_NOMINATED shop/checkout on node-b" <<<"$out"
kill -TERM "${server_pid}"
wait "${server_pid}"
echo "go/java clients: done in ${SECONDS}s"
