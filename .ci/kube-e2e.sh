#!/usr/bin/env bash
# Kubernetes mode end to end: the real preemptd binary mirrors a real kube-apiserver
# (k8s.io/kubernetes v1.37.2 with the etcd it requires, v3.7.0, built from upstream/harness's
# v1.37 module file and cached in upstream/.cache) and answers from what it watched; see
# cli/tests/kube_mode.rs. Then the stock kube-scheduler v1.37.2 (same module, same cache)
# schedules and preempts with preemptd as its extender; see cli/tests/scheduler_extender.rs.
# On 1.37 only (it needs scheduling.k8s.io/v1beta1), the same scheduler with GenericWorkload
# on preempts for a gang as preemptd's PreemptGroup dry run decided; see
# cli/tests/scheduler_gang.rs.
# KUBE_E2E_KUBERNETES_VERSION=1.35 (or 1.36) runs the first two against that release instead. On a cold
# machine the first run builds etcd, kube-apiserver and kube-scheduler (several minutes; later
# runs reuse upstream/.cache) and the test binaries; each test file gets its own fresh API server.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${KUBE_E2E_KUBERNETES_VERSION:-1.37}"
echo "== kubernetes mode against a real kube-apiserver ${version} and etcd"
go version
./upstream/with-kube-apiserver --kubernetes-version "${version}" \
  cargo test --locked -p preemptd-cli --features kube-e2e --test kube_mode -- --test-threads 1
echo "== kube-scheduler ${version} with preemptd as its extender"
./upstream/with-kube-apiserver --kubernetes-version "${version}" \
  cargo test --locked -p preemptd-cli --features kube-e2e --test scheduler_extender
if [[ "${version}" == "1.37" ]]; then
  echo "== kube-scheduler ${version} with GenericWorkload preempts for a gang as preemptd decided"
  KUBE_APISERVER_EXTRA_ARGS="--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true" \
    ./upstream/with-kube-apiserver --kubernetes-version "${version}" \
    cargo test --locked -p preemptd-cli --features kube-e2e --test scheduler_gang
fi
