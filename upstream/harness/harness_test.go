package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Every recorded scenario of tests/conformance (upstream's own tests, and random scenarios
// whose answers came from upstream's code) must come out of the harness as recorded.
func TestRecordedScenarios(t *testing.T) {
	metrics.Register()
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "tests", "conformance")
	files := scenarioFiles([]string{root, filepath.Join(root, "random")})
	if len(files) < 150 {
		t.Fatalf("expected the shared scenarios, found %d", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			sc, whole := readScenario(path)
			var expect Answer
			if err := json.Unmarshal(whole["expect"], &expect); err != nil {
				t.Fatal(err)
			}
			got, err := decide(context.Background(), sc, prof)
			if err != nil {
				t.Fatal(err)
			}
			if diff := compareAnswers(&expect, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// The tied set is every node left after the last criterion, not one of them.
func TestTiedNodesListsTheWholeTie(t *testing.T) {
	sc, _ := readScenario(filepath.Join("..", "..", "tests", "conformance", "upstream-selectbest-fits-both-nodes.json"))
	metrics.Register()
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decide(context.Background(), sc, prof)
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != "PREEMPT" || len(got.NominatedNodeNameAnyOf) < 2 {
		t.Fatalf("expected a tie of several nodes, got %+v", got)
	}
}

// budgetOrderScenario needs one of x1, x2, x3 (same priority, x1 started first, then x3, then
// x2) evicted. x1 is matched by pdb-a (exhausted) and pdb-b (one disruption left), x2 by pdb-b,
// x3 by none; the List has pdb-b first. Decrementing every matching budget (v1.35, v1.36), or
// walking pdb-b first in v1.37, classifies x1 and x2 as violating, so x3 is reprieved last and
// evicted. Walking pdb-a first in v1.37 stops at it for x1, leaves pdb-b its disruption for x2,
// and x2 is evicted.
func budgetOrderScenario(order string) *Scenario {
	pod := func(name, start string, labels string) string {
		return `{"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default", "name": "` + name + `", "uid": "` + name + `", "labels": ` + labels + `},
			"spec": {"nodeName": "n1", "priority": 0, "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
			"status": {"phase": "Running", "startTime": "` + start + `"}}`
	}
	budget := func(name, selector string, allowed string) string {
		return `{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"namespace": "default", "name": "` + name + `"},
			"spec": {"minAvailable": 1, "selector": {"matchLabels": ` + selector + `}}, "status": {"disruptionsAllowed": ` + allowed + `}}`
	}
	cluster := `{"apiVersion": "v1", "kind": "List", "items": [
		{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1500m", "memory": "1Gi", "pods": "10"}}},
		` + pod("x1", "2026-01-01T00:00:01Z", `{"app": "x", "tier": "t"}`) + `,
		` + pod("x2", "2026-01-01T00:00:03Z", `{"tier": "t"}`) + `,
		` + pod("x3", "2026-01-01T00:00:02Z", `{}`) + `,
		` + budget("pdb-b", `{"tier": "t"}`, "1") + `,
		` + budget("pdb-a", `{"app": "x"}`, "0") + `]}`
	preemptor := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default", "name": "p", "uid": "p"},
		"spec": {"priority": 1000, "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}, "status": {"phase": "Pending"}}`
	return &Scenario{Cluster: json.RawMessage(cluster), Preemptor: json.RawMessage(preemptor), BudgetOrder: order}
}

// The budgets reach preemption in (namespace, name) order whatever the List's order, and from
// v1.37 on that order decides which pod a multi-budget classification evicts.
func TestBudgetsArePinnedToNamespaceAndNameOrder(t *testing.T) {
	metrics.Register()
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	version := kubernetesVersion()
	if version == "unknown" {
		t.Fatal("no k8s.io/kubernetes in the build info")
	}
	victims := func(order string) string {
		got, err := decide(context.Background(), budgetOrderScenario(order), prof)
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != "PREEMPT" {
			t.Fatalf("%s order: outcome %s (%s)", order, got.Outcome, got.Message)
		}
		return setOf(got.VictimsByNode["n1"])
	}
	sorted, listed := victims("sorted"), victims("listed")
	if victims("") != sorted {
		t.Fatalf("the default order is not the sorted one")
	}
	wantSorted, wantListed := "default/x3", "default/x3"
	if version >= "v1.37" {
		wantSorted = "default/x2"
	}
	if sorted != wantSorted || listed != wantListed {
		t.Fatalf("%s: victims %s in (namespace, name) order, %s in the List's order; want %s and %s",
			version, sorted, listed, wantSorted, wantListed)
	}
}
