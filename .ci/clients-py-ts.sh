#!/usr/bin/env bash
# The Python and TypeScript clients and API governance, on a fresh machine: buf lint and
# buf breaking against the committed baseline, the generated code's freshness, both test
# suites and both examples against the real `preemptd serve`. Toolchains go into ignored
# folders (clients/python/.venv, clients/typescript/node_modules) and are reused when
# present. PREEMPTD_BIN names the server binary (default target/debug/preemptd, built when
# missing).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
bin=${PREEMPTD_BIN:-${repo}/target/debug/preemptd}
export PREEMPTD_BIN=${bin}
SECONDS=0

echo "== [${SECONDS}s] clients: toolchains (Python venv, npm ci)"
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
"${python}" --version
node --version
if [ ! -x clients/python/.venv/bin/python ]; then
  "${python}" -m venv clients/python/.venv
fi
# Reinstalled only when pyproject.toml (every pin) changed since the last install.
if ! cmp -s clients/python/pyproject.toml clients/python/.venv/.installed-pyproject.toml; then
  clients/python/.venv/bin/pip install --quiet --disable-pip-version-check -e 'clients/python[dev]'
  cp clients/python/pyproject.toml clients/python/.venv/.installed-pyproject.toml
fi
# npm ci starts from an empty node_modules every time: skip it when the lockfile is the
# one installed last.
if ! cmp -s clients/typescript/package-lock.json clients/typescript/node_modules/.installed-lock.json; then
  (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.installed-lock.json)
fi
buf=clients/typescript/node_modules/.bin/buf

echo "== [${SECONDS}s] buf $(${buf} --version): lint"
"${buf}" lint
echo "buf lint: clean"

echo "== [${SECONDS}s] buf breaking against proto/baseline/preemptd-v1.binpb"
"${buf}" breaking --against proto/baseline/preemptd-v1.binpb
echo "buf breaking: no breaking change"

echo "== [${SECONDS}s] generated code is fresh"
clients/python/.venv/bin/python clients/python/tools/generate.py --check
(cd clients/typescript && npm run --silent check-generated)

echo "== [${SECONDS}s] python: mypy --strict (the client and example against the generated .pyi)"
(cd clients/python && .venv/bin/mypy)

echo "== [${SECONDS}s] the four client READMEs' code is the examples'"
clients/python/.venv/bin/python - <<'EOF'
import re, sys
for title, example in [("clients/python/README.md", "clients/python/examples/example.py"),
                       ("clients/typescript/README.md", "clients/typescript/examples/example.ts"),
                       ("clients/go/README.md", "clients/go/examples/quickstart/main.go"),
                       ("clients/java/README.md", "clients/java/src/main/java/io/github/preemptd/client/Example.java")]:
    section = open(title).read()
    blocks = re.findall(r"```(?:python|ts|go|java)\n(.*?)```", section, re.S)
    lines = {line.strip() for line in open(example)}
    # "// ..." marks lines of the example the README leaves out.
    missing = [l for b in blocks for l in b.splitlines()
               if l.strip() and l.strip() != "// ..." and l.strip() not in lines]
    if not blocks or missing:
        sys.exit(f"{title}: lines not in {example}: {missing or 'no code block'}")
    print(f"{title}: {sum(len(b.splitlines()) for b in blocks)} lines, all in {example}")
EOF

if [ ! -x "${bin}" ]; then
  echo "== cargo build --locked (no ${bin})"
  cargo build --locked
fi

echo "== [${SECONDS}s] typescript: tsc"
(cd clients/typescript && npm run --silent build)

echo "== [${SECONDS}s] python client tests (pytest) against ${bin}"
(cd clients/python && .venv/bin/python -m pytest -q -p no:cacheprovider)

echo "== [${SECONDS}s] typescript client tests (node:test) against ${bin}"
(cd clients/typescript && npm run --silent test 2>&1 | grep -vE '^\s*✔ .*\[(json|typed)\]')

echo "== [${SECONDS}s] examples, each against a fresh server"
log=$(mktemp)
server_pid=
trap 'if [ -n "${server_pid}" ]; then kill "${server_pid}" 2>/dev/null || true; fi; rm -f "${log}"' EXIT
start_server() {
  # Emptied here, not by the child's redirect: the loop below must not read the last
  # server's address before the new server's shell has truncated the log.
  : >"${log}"
  "${bin}" serve --listen 127.0.0.1:0 --metrics-listen off --log-format json >"${log}" 2>&1 &
  server_pid=$!
  addr=
  for _ in $(seq 1 300); do
    addr=$(grep -o 'serving.*' "${log}" | grep -oE '127\.0\.0\.1:[0-9]+' | head -n1 || true)
    [ -n "${addr}" ] && return 0
    sleep 0.1
  done
  cat "${log}"
  return 1
}
stop_server() {
  kill -TERM "${server_pid}"
  wait "${server_pid}"
  server_pid=
}
check_example() {
  echo "$1"
  grep -q '"outcome": "OUTCOME_PREEMPT"' <<<"$1"
  grep -q 'NOMINATION_EVENT_TYPE_NOMINATED shop/checkout node-b' <<<"$1"
}
start_server
check_example "$(clients/python/.venv/bin/python clients/python/examples/example.py --addr "${addr}" --watch-seconds 1)"
stop_server
start_server
check_example "$(cd clients/typescript && node dist/examples/example.js --addr "${addr}" --watch-seconds 1)"
stop_server
echo "clients: both examples ran; the servers exited cleanly on SIGTERM (${SECONDS}s in all)"
