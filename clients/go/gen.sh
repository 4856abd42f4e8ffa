#!/usr/bin/env bash
# Regenerates the Go stubs from proto/ with pinned generators:
#   gen.sh            writes clients/go/gen (commit the result)
#   gen.sh --check    regenerates into a temporary directory and fails if gen/ differs
set -euo pipefail
cd "$(dirname "$0")"

# Pinned: protoc-gen-go comes from the protobuf module the client builds against.
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.1
BUF=@bufbuild/buf@1.75.0

GOBIN="$PWD/.bin" go install "$PROTOC_GEN_GO"
GOBIN="$PWD/.bin" go install "$PROTOC_GEN_GO_GRPC"

# buf.gen.yaml writes under <root>/gen; the check writes into a temporary root.
root=.
if [[ "${1:-}" == "--check" ]]; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
fi
rm -rf "${root:?}/gen/preemptd"
# buf's own cache stays inside the ignored .bin folder.
BUF_CACHE_DIR="$PWD/.bin/buf-cache" npx --yes "$BUF" generate ../../proto --template buf.gen.yaml -o "$root"
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -ru gen/preemptd "$root/gen/preemptd"; then
    echo "clients/go/gen is stale: run clients/go/gen.sh and commit the result" >&2
    exit 1
  fi
  echo "clients/go/gen is up to date"
fi
