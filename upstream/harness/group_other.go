//go:build !k8s_1_37

package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Group preemption (PodGroupPostFilter) is v1.37's: the older builds refuse GenericWorkload.

func checkFeatureGates() error {
	if genericWorkload() {
		return fmt.Errorf("--feature-gates GenericWorkload=true needs the v1.37 harness (build-harness --kubernetes-version 1.37)")
	}
	return nil
}

// newSnapshot ignores PodGroup items, as a scheduler without GenericWorkload does.
func newSnapshot(c *cluster) (*internalcache.Snapshot, error) {
	return internalcache.NewSnapshot(c.bound, c.nodes), nil
}

// checkSchedulingGroup: these releases read no pod groups.
func checkSchedulingGroup(*v1.Pod) error { return nil }

func podGroupOptions(*internalcache.Snapshot) []frameworkruntime.Option { return nil }

func decideGroup(context.Context, *Scenario, *config.KubeSchedulerProfile) (*GroupAnswer, error) {
	return nil, fmt.Errorf("preemptor: a PodGroup needs the v1.37 harness with GenericWorkload=true")
}

func timeGroups(context.Context, *cluster, []string, int, float64, *timeReport) error {
	return fmt.Errorf("--groups needs the v1.37 harness with GenericWorkload=true")
}
