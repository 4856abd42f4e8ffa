//go:build tools

package main

// The end-to-end tests' cluster is built from the harness's module files, so it shares their
// pinned k8s.io/kubernetes release and its compiled packages: kube-apiserver, kube-scheduler
// (preemptd as its extender) and the etcd server that release requires.
import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
