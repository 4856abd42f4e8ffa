//go:build k8s_1_35

package main

// The scheduler calls whose signatures differ between the releases the harness is built
// against, in their v1.35 form. build-harness passes the tag; the other version_v1_*.go
// files have the other releases' forms.

import (
	"context"
	policyv1informers "k8s.io/client-go/informers/policy/v1"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

func enqueue(ctx context.Context, queue internalqueue.SchedulingQueue, p *v1.Pod) {
	queue.Add(klog.FromContext(ctx), p)
}

func newEvaluator(fw framework.Framework, _ *defaultpreemption.DefaultPreemption, pi preemption.Interface) *preemption.Evaluator {
	asyncPreemption := utilfeature.DefaultFeatureGate.Enabled(features.SchedulerAsyncPreemption)
	return preemption.NewEvaluator(names.DefaultPreemption, fw, pi, asyncPreemption)
}

func snapshotOptions(snapshot *internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithSnapshotSharedLister(snapshot)}
}

// budgetInformer is what the informer factory hands out for PodDisruptionBudgets.
type budgetInformer = policyv1informers.PodDisruptionBudgetInformer
