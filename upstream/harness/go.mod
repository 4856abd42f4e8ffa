// The harness is one source tree built against three Kubernetes releases: each one's
// requirements are in v1.35/go.mod, v1.36/go.mod and v1.37/go.mod (each with its go.sum), passed
// with -modfile, and its build tag selects its version_v1_*.go, e.g.
//   go vet -modfile=v1.37/go.mod -tags=k8s_1_37 .
// (../build-harness does this; ../kubernetes-versions.sh has the flags).
module preemptd/upstream/harness

go 1.26
