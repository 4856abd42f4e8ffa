#!/usr/bin/env bash
# Each client installed the way its README says into a clean consumer project in a temporary
# directory outside the tree — Python: a wheel built by `python -m build` into a fresh venv;
# TypeScript: the `npm pack` tarball into a fresh npm project, the example compiled there with
# tsc; Go: a fresh module with the README's require/replace recipe; Java: `mvn install`
# without a server binary, then a fresh Maven project depending on the coordinates — and the
# README's example run from there against `preemptd serve --tls-cert ... --authz ...` with a
# bearer token (clients/testdata/make-tls.sh writes the CA, certificate, tokens and authz
# file). Reuses the toolchains and caches of .ci/clients-py-ts.sh and .ci/clients-go-java.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
bin=${PREEMPTD_BIN:-${repo}/target/debug/preemptd}
mvn_flags=(-B -ntp "-Dmaven.repo.local=${repo}/clients/java/.m2")
SECONDS=0

if [ ! -x "${bin}" ]; then
  cargo build --locked
fi
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "${server_pid}" ]; then kill "${server_pid}" 2>/dev/null || true; fi
  rm -rf "${work}"
}
trap cleanup EXIT
clients/testdata/make-tls.sh "${work}/tls"
tls_args=(--ca-cert "${work}/tls/ca.crt" --token-file "${work}/tls/writer.token")

# A fresh server for each example (each commits a decision): TLS, roles, tokens. Sets addr.
start_server() {
  # Emptied here, not by the child's redirect: the loop below must not read the last
  # server's address before the new server's shell has truncated the log.
  : >"${work}/server.log"
  "${bin}" serve --listen 127.0.0.1:0 --metrics-listen off --log-format json \
    --tls-cert "${work}/tls/server.crt" --tls-key "${work}/tls/server.key" \
    --authz "${work}/tls/authz.yaml" >"${work}/server.log" 2>&1 &
  server_pid=$!
  local port=
  for _ in $(seq 1 300); do
    port=$(grep -o 'serving.*' "${work}/server.log" | grep -oE '127\.0\.0\.1:[0-9]+' | head -n1 | cut -d: -f2 || true)
    if [ -n "${port}" ]; then
      addr="localhost:${port}"
      return 0
    fi
    sleep 0.1
  done
  cat "${work}/server.log"
  return 1
}
stop_server() {
  kill -TERM "${server_pid}"
  wait "${server_pid}"
  server_pid=
}
check_example() {
  echo "$1" | tail -n 3
  grep -q 'OUTCOME_PREEMPT' <<<"$1"
  grep -Eq 'NOMINATION_EVENT_TYPE_NOMINATED shop/checkout (on )?node-b' <<<"$1"
}
untracked() {
  git status --porcelain --untracked-files=all -- "$1" | grep '^??' || true
}

echo "== [${SECONDS}s] python: python -m build --wheel, installed into a fresh venv"
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
"${python}" -m venv "${work}/build-venv"
"${work}/build-venv/bin/pip" install --quiet --disable-pip-version-check build==1.6.1
"${work}/build-venv/bin/python" -m build --wheel --outdir "${work}/wheel" clients/python >"${work}/build.log" 2>&1 ||
  { cat "${work}/build.log"; exit 1; }
if [ -n "$(untracked clients/python)" ]; then
  echo "the wheel build left files git does not ignore:"; untracked clients/python; exit 1
fi
mkdir "${work}/py"
"${python}" -m venv "${work}/py/.venv"
"${work}/py/.venv/bin/pip" install --quiet --disable-pip-version-check "${work}"/wheel/preemptd_client-*.whl
cp clients/python/examples/example.py "${work}/py/"
start_server
check_example "$(cd "${work}/py" && .venv/bin/python example.py --addr "${addr}" --watch-seconds 1 \
  --cluster "${repo}/examples/cluster.json" --pod "${repo}/examples/pod.json" "${tls_args[@]}")"
stop_server

echo "== [${SECONDS}s] typescript: npm pack (prepack builds dist/), installed into a fresh project"
(cd clients/typescript &&
  { cmp -s package-lock.json node_modules/.installed-lock.json ||
    { npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.installed-lock.json; }; } &&
  npm pack --silent --pack-destination "${work}" >/dev/null)
tarball=$(ls "${work}"/preemptd-client-*.tgz)
listing=$(tar -tzf "${tarball}")
grep -qx 'package/dist/src/index.js' <<<"${listing}"
grep -qx 'package/dist/src/index.d.ts' <<<"${listing}"
mkdir "${work}/ts"
(cd "${work}/ts" && npm init -y >/dev/null &&
  npm install --no-audit --no-fund --loglevel=error "${tarball}" typescript@5.9.3 @types/node@20.19.43)
cp clients/typescript/examples/example.ts "${work}/ts/"
cat >"${work}/ts/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022", "module": "commonjs", "moduleResolution": "node", "lib": ["ES2022"],
    "types": ["node"], "strict": true, "esModuleInterop": true, "outDir": "dist"
  },
  "files": ["example.ts"]
}
JSON
(cd "${work}/ts" && npx tsc -p .)
start_server
check_example "$(cd "${work}/ts" && node dist/example.js --addr "${addr}" --watch-seconds 1 \
  --cluster "${repo}/examples/cluster.json" --pod "${repo}/examples/pod.json" "${tls_args[@]}")"
stop_server

echo "== [${SECONDS}s] go: a fresh module with the README's require/replace recipe"
mkdir "${work}/go"
cp clients/go/examples/quickstart/main.go "${work}/go/"
(cd "${work}/go" && go mod init example.com/consumer >/dev/null 2>&1 &&
  go mod edit -require=github.com/preemptd/preemptd/clients/go@v0.1.0 \
    -replace=github.com/preemptd/preemptd/clients/go="${repo}/clients/go" &&
  go mod tidy && go build -o consumer .)
start_server
check_example "$("${work}/go/consumer" -addr "${addr}" -follow 1s -cluster "${repo}/examples/cluster.json" \
  -pod "${repo}/examples/pod.json" -ca-cert "${work}/tls/ca.crt" -token-file "${work}/tls/writer.token")"
stop_server

echo "== [${SECONDS}s] go: the tag scheme — go get @v0.1.0 of what a clients/go/v0.1.0 tag holds"
# The module zip a tag clients/go/v0.1.0 on this commit yields, served by a file:// module
# proxy in front of the public one: a consumer resolves the module path by version alone.
proxy="${work}/goproxy/github.com/preemptd/preemptd/clients/go/@v"
mkdir -p "${proxy}"
git archive --format=zip --prefix=github.com/preemptd/preemptd/clients/go@v0.1.0/ \
  -o "${proxy}/v0.1.0.zip" HEAD:clients/go
git show HEAD:clients/go/go.mod >"${proxy}/v0.1.0.mod"
printf '{"Version":"v0.1.0","Time":"%s"}\n' "$(git show -s --format=%cI HEAD)" >"${proxy}/v0.1.0.info"
echo v0.1.0 >"${proxy}/list"
mkdir "${work}/go-tagged"
cp clients/go/examples/quickstart/main.go "${work}/go-tagged/"
# A module cache of its own, so no version of this zip outlives the run; the shared cache's
# download folder serves the dependencies (itself a module proxy), the public proxy the rest.
(cd "${work}/go-tagged" && go mod init example.com/tagged >/dev/null 2>&1 &&
  export GOMODCACHE="${work}/gomodcache" GOFLAGS=-modcacherw GONOSUMDB=github.com/preemptd/preemptd \
    GOPROXY="file://${work}/goproxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" &&
  go get github.com/preemptd/preemptd/clients/go@v0.1.0 && go mod tidy && go build -o consumer . &&
  grep -q 'github.com/preemptd/preemptd/clients/go v0.1.0' go.mod)
echo "go get github.com/preemptd/preemptd/clients/go@v0.1.0: resolved and built"

echo "== [${SECONDS}s] java: mvn install without a server binary, then a fresh Maven project"
(cd clients/java && PREEMPTD_BIN="${work}/no-such-binary" mvn "${mvn_flags[@]}" install) >"${work}/install.log" 2>&1 ||
  { cat "${work}/install.log"; exit 1; }
grep -E 'Tests run:.*Skipped: [1-9]' "${work}/install.log" | tail -n 1
grep -q 'preemptd binary .* not found: the tests against the real server are skipped' "${work}/install.log" ||
  grep -rq 'not found: the tests against the real server are skipped' clients/java/target/surefire-reports
mkdir -p "${work}/java/src/main/java/example"
sed -e 's/^package io\.github\.preemptd\.client;$/package example;\n\nimport io.github.preemptd.client.NominationWatch;\nimport io.github.preemptd.client.PreemptdClient;/' \
  clients/java/src/main/java/io/github/preemptd/client/Example.java >"${work}/java/src/main/java/example/Example.java"
cat >"${work}/java/pom.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>consumer</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>io.github.preemptd</groupId>
      <artifactId>preemptd-client</artifactId>
      <version>0.1.0</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.14.0</version></plugin>
      <plugin>
        <groupId>org.codehaus.mojo</groupId><artifactId>exec-maven-plugin</artifactId><version>3.6.2</version>
        <configuration><mainClass>example.Example</mainClass></configuration>
      </plugin>
    </plugins>
  </build>
</project>
XML
start_server
check_example "$(cd "${work}/java" && mvn "${mvn_flags[@]}" -q compile exec:java \
  -Dexec.args="${addr} 1 ${repo}/examples ${tls_args[*]}")"
stop_server

echo "clients: installed and ran in clean consumer projects, over TLS with a token (${SECONDS}s in all)"
