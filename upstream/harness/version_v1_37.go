//go:build k8s_1_37

package main

// The scheduler calls whose signatures differ between the releases the harness is built
// against, in their v1.37 form. build-harness passes the tag; the other version_v1_*.go
// files have the other releases' forms.

import (
	"context"
	policyv1informers "k8s.io/client-go/informers/policy/v1"

	v1 "k8s.io/api/core/v1"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func enqueue(ctx context.Context, queue internalqueue.SchedulingQueue, p *v1.Pod) {
	queue.Add(ctx, p)
}

// newEvaluator shares the plugin's executor, which carries the feature gates it was built with.
func newEvaluator(fw framework.Framework, plugin *defaultpreemption.DefaultPreemption, pi preemption.Interface) *preemption.Evaluator {
	return preemption.NewEvaluator(names.DefaultPreemption, fw, pi, plugin.Executor)
}

// snapshotOptions: from v1.37 preemption reads the nodes through the framework's mutable
// snapshot lister, which scheduler.New sets to the same snapshot.
func snapshotOptions(snapshot *internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithMutableSnapshotLister(snapshot),
	}
}

// budgetInformer is what the informer factory hands out for PodDisruptionBudgets.
type budgetInformer = policyv1informers.TypedPodDisruptionBudgetInformer
