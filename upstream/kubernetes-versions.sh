# Sourced by the scripts in upstream/: the Kubernetes minors the harness is built for, each a
# Go module file under harness/vMINOR/ (go.mod, go.sum) pinned to one release:
#   1.35 -> k8s.io/kubernetes v1.35.4, 1.36 -> v1.36.3, 1.37 -> v1.37.2
# (staging k8s.io/* modules replaced to v0.35.4, v0.36.3, v0.37.2).
kubernetes_versions=(1.35 1.36 1.37)
default_kubernetes_version=1.37

# check_kubernetes_version V: returns, or exits 64 naming V and the supported versions.
check_kubernetes_version() {
  local v
  for v in "${kubernetes_versions[@]}"; do
    [[ "$1" == "${v}" ]] && return 0
  done
  echo "unknown kubernetes version '$1' (supported: ${kubernetes_versions[*]})" >&2
  exit 64
}

# go_module_flags V: the `go` flags that build upstream/harness against V's module file
# (-modfile; its go.sum is the one beside it) with V's build tag (k8s_1_35 selects the few
# calls whose signatures changed after v1.35).
go_module_flags() {
  echo "-modfile=v$1/go.mod -tags=k8s_${1//./_}"
}
