package main

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

func testNode(name string, cpu, mem int64, labels map[string]string) *v1.Node {
	alloc := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	l := map[string]string{v1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Status: v1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
}

func testPod(name, node string, cpu, mem int64, labels map[string]string) *v1.Pod {
	req := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI),
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: labels},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}},
	}
}

// scoresFor filters and scores pod on c under prof, as schedulePod does.
func scoresFor(t *testing.T, c *cluster, pod *v1.Pod, pinned bool) (map[string]int64, string) {
	t.Helper()
	prof, err := profileWith(100, pinned)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := newEnv(ctx, c, pod, prof)
	if err != nil {
		t.Fatal(err)
	}
	all, err := e.snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	state := framework.NewCycleState()
	feasible, _, _, err := e.fitNodes(ctx, state, pod, all, len(all), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) < 2 {
		return nil, ""
	}
	scores, err := e.scoreNodes(ctx, state, pod, feasible)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, s := range scores {
		out[s.Name] = s.TotalScore
	}
	host, err := e.selectHost(ctx, state, pod, feasible)
	if err != nil {
		t.Fatal(err)
	}
	return out, host
}

// The pin changes nothing but ties: on random clusters (some nodes alike, so that default
// totals tie often), whenever the default scorers' top total is unique the pinned profile
// selects that node, and when several share it, the lowest name among them; every pinned
// total is the default total times tieScale plus at most fwk.MaxNodeScore.
func TestTiePinOnlyBreaksTies(t *testing.T) {
	metrics.Register()
	rng := rand.New(rand.NewSource(7))
	unique, tied := 0, 0
	for round := 0; round < 60; round++ {
		c := &cluster{}
		n := 3 + rng.Intn(12)
		for i := 0; i < n; i++ {
			cpu := int64(4000 * (1 + rng.Intn(2)))
			zone := fmt.Sprintf("z%d", rng.Intn(2))
			c.nodes = append(c.nodes, testNode(fmt.Sprintf("n%02d", (i*7)%n), cpu, 8192, map[string]string{v1.LabelTopologyZone: zone}))
		}
		for i := 0; i < rng.Intn(2*n); i++ {
			node := c.nodes[rng.Intn(n)].Name
			c.bound = append(c.bound, testPod(fmt.Sprintf("p%d", i), node, int64(250*(1+rng.Intn(4))), int64(256*(1+rng.Intn(4))), map[string]string{"app": fmt.Sprintf("a%d", rng.Intn(2))}))
		}
		pod := testPod("incoming", "", 500, 512, map[string]string{"app": "a0"})
		if rng.Intn(2) == 0 {
			pod.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
				Weight: 10, PodAffinityTerm: v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a1"}}, TopologyKey: v1.LabelTopologyZone},
			}}}}
		}
		plain, _ := scoresFor(t, c, pod, false)
		if plain == nil {
			continue
		}
		pinned, host := scoresFor(t, c, pod, true)
		var top int64 = -1
		var best []string
		for name, s := range plain {
			if p := pinned[name] - s*tieScale; p < 0 || p > fwk.MaxNodeScore {
				t.Fatalf("round %d: node %s pinned total %d is not %d*%d plus a pin", round, name, pinned[name], s, tieScale)
			}
			if s > top {
				top, best = s, []string{name}
			} else if s == top {
				best = append(best, name)
			}
		}
		want := best[0]
		for _, b := range best {
			if b < want {
				want = b
			}
		}
		if len(best) == 1 {
			unique++
		} else {
			tied++
		}
		if host != want {
			t.Fatalf("round %d: pinned selects %s, default top %v (total %d)", round, host, best, top)
		}
	}
	if unique == 0 || tied == 0 {
		t.Fatalf("the rounds must cover both unique tops (%d) and ties (%d)", unique, tied)
	}
}
