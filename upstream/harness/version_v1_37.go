//go:build k8s_1_37

package main

// The scheduler calls whose signatures differ between the releases the harness is built
// against, in their v1.37 form. build-harness passes the tag; the other version_v1_*.go
// files have the other releases' forms.

import (
	"cmp"
	"context"
	policyv1informers "k8s.io/client-go/informers/policy/v1"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
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
// snapshot lister, which scheduler.New sets to the same snapshot. Preemption also reads an
// `all`-mode victim's pods there (PodGroupState.ScheduledPods), in the order of a Go map, and
// counts the victim's budget violations pod by pod in that order; the harness pins it to
// (namespace, name), the order preemptd walks them in (one of the orders upstream can give).
func snapshotOptions(snapshot *internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithMutableSnapshotLister(namedOrderSnapshot{snapshot}),
	}
}

// namedOrderSnapshot is the snapshot with its pod group states' scheduled pods by name.
type namedOrderSnapshot struct{ *internalcache.Snapshot }

func (s namedOrderSnapshot) PodGroupStates() fwk.PodGroupStateLister {
	return namedOrderStates{s.Snapshot.PodGroupStates()}
}

type namedOrderStates struct{ fwk.PodGroupStateLister }

func (l namedOrderStates) Get(namespace, name string) (fwk.PodGroupState, error) {
	state, err := l.PodGroupStateLister.Get(namespace, name)
	if err != nil || state == nil {
		return state, err
	}
	return namedOrderState{state}, nil
}

type namedOrderState struct{ fwk.PodGroupState }

func (s namedOrderState) ScheduledPods() []*v1.Pod {
	pods := slices.Clone(s.PodGroupState.ScheduledPods())
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return pods
}

// budgetInformer is what the informer factory hands out for PodDisruptionBudgets.
type budgetInformer = policyv1informers.TypedPodDisruptionBudgetInformer
