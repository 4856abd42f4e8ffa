package main

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Upstream's selectHost breaks equal total scores at random (the score heap's Randomizer).
// preemptd takes the highest total, then the lowest node name. The harness pins upstream to
// that rule through the framework's own extension points, without patching it: every default
// Score plugin's weight is multiplied by tieScale in the harness profile, so default totals are
// multiples of tieScale, and tiePinName, weight 1, adds at most fwk.MaxNodeScore (< tieScale)
// ranking the scored nodes by name. It can therefore only order nodes whose default totals are
// equal. Below fwk.MaxNodeScore+1 scored nodes every node gets its own pin score (the
// differential clusters stay under 100 nodes); beyond that the highest names share score 0.
const (
	tiePinName = "HarnessNodeNameTieBreak"
	tieScale   = 1000
)

type nodeNameTieBreak struct{}

var (
	_ fwk.ScorePlugin     = nodeNameTieBreak{}
	_ fwk.ScoreExtensions = nodeNameTieBreak{}
	_ fwk.SignPlugin      = nodeNameTieBreak{}
)

func newNodeNameTieBreak(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return nodeNameTieBreak{}, nil
}

func (nodeNameTieBreak) Name() string { return tiePinName }

// Score is a placeholder: a node's pin depends on the other scored nodes, so NormalizeScore
// assigns it.
func (nodeNameTieBreak) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}

func (p nodeNameTieBreak) ScoreExtensions() fwk.ScoreExtensions { return p }

// SignPod: the pin depends on no pod field, so every pod it scores may share a signature. A
// plugin that cannot sign turns pod signatures off for the whole profile, and with them
// upstream's opportunistic batching (KEP-5598), which the pin must not change.
func (nodeNameTieBreak) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// NormalizeScore gives the lowest name MaxNodeScore, the next one less, and so on.
func (nodeNameTieBreak) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return scores[order[a]].Name < scores[order[b]].Name })
	for rank, i := range order {
		scores[i].Score = max(fwk.MaxNodeScore-int64(rank), 0)
	}
	return nil
}
