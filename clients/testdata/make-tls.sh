#!/usr/bin/env bash
# Writes what the clients' TLS and token tests and examples run against into DIR: a CA
# (ca.crt), a server certificate for 127.0.0.1 and localhost signed by it (server.crt,
# server.key), two bearer tokens (writer.token, reader.token) and the --authz file mapping
# them to their roles (authz.yaml). Serve with:
#   preemptd serve --tls-cert DIR/server.crt --tls-key DIR/server.key --authz DIR/authz.yaml
set -euo pipefail
dir=${1:?usage: make-tls.sh DIR}
if ! command -v openssl >/dev/null; then
  echo "make-tls.sh: openssl missing, installing it (Debian)" >&2
  apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi
mkdir -p "${dir}"
cd "${dir}"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj "/CN=preemptd test ca" -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=preemptd test server" -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.crt 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in server.key -out server.pkcs8.key
mv server.pkcs8.key server.key
rm -f server.csr server.ext ca.srl
# Tokens: 32 random bytes each, hex.
openssl rand -hex 32 | tr -d '\n' >writer.token
openssl rand -hex 32 | tr -d '\n' >reader.token
cat >authz.yaml <<'YAML'
clients:
  - token_file: writer.token
    name: writer
    role: writer
  - token_file: reader.token
    name: reader
    role: reader
YAML
