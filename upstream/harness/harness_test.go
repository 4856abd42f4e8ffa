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
