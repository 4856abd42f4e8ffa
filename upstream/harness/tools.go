//go:build tools

package main

// The end-to-end tests' cluster is built from this module, so it shares the harness's
// pinned k8s.io/kubernetes v1.35.4 and its compiled packages: kube-apiserver, kube-scheduler
// (preemptd as its extender) and the etcd server that v1.35.4 requires.
import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
