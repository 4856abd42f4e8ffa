package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// The time mode runs the real PostFilter in both configurations on a scenario upstream
// answers with a preemption, and reports that outcome and every run.
func TestTimeModeTimesBothConfigurations(t *testing.T) {
	metrics.Register()
	sc, _ := readScenario(filepath.Join("..", "..", "tests", "conformance", "upstream-selectbest-fits-both-nodes.json"))
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.json")
	preemptors := filepath.Join(dir, "preemptors-resources.json")
	if err := os.WriteFile(cluster, sc.Cluster, 0o644); err != nil {
		t.Fatal(err)
	}
	list := `{"apiVersion":"v1","kind":"List","items":[` + string(sc.Preemptor) + `]}`
	if err := os.WriteFile(preemptors, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() {
		if code := timeMode(context.Background(), []string{"--cluster", cluster, "--preemptors", preemptors, "--runs", "3"}); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var report timeReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &report); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if len(report.Kinds) != 1 || report.Kinds[0].Kind != "resources" || report.Kinds[0].Outcome != "PREEMPT" {
		t.Fatalf("report %+v", report)
	}
	for _, tc := range timeConfigs {
		l := report.Kinds[0].Configs[tc.name]
		if l.Runs != 3 || l.Candidates != 2 || l.P50ms <= 0 || l.P99ms < l.P50ms {
			t.Errorf("%s: %+v", tc.name, l)
		}
	}
}

func TestNearestRankPercentiles(t *testing.T) {
	var times []time.Duration
	for i := 100; i >= 1; i-- {
		times = append(times, time.Duration(i)*time.Millisecond)
	}
	l := summarizeTimes(times)
	if l.Runs != 100 || l.P50ms != 50 || l.P99ms != 99 || l.MaxMs != 100 {
		t.Fatalf("%+v", l)
	}
	if one := summarizeTimes(times[:1]); one.P50ms != 100 || one.P99ms != 100 {
		t.Fatalf("%+v", one)
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		var buf strings.Builder
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			buf.Write(b[:n])
			if err != nil {
				done <- []byte(buf.String())
				return
			}
		}
	}()
	defer func() { os.Stdout = saved }()
	f()
	w.Close()
	return string(<-done)
}

// A run that reaches its limit is reported as cut off, not as a decision.
func TestARunPastItsLimitIsCutOff(t *testing.T) {
	metrics.Register()
	sc, _ := readScenario(filepath.Join("..", "..", "tests", "conformance", "upstream-selectbest-fits-both-nodes.json"))
	c, err := decodeCluster(sc.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(sc.Preemptor, &pod); err != nil {
		t.Fatal(err)
	}
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(context.Background(), c, &pod, prof)
	if err != nil {
		t.Fatal(err)
	}
	state, statuses, early, err := e.filter(context.Background(), &pod)
	if err != nil || early != nil {
		t.Fatalf("filter: %v %+v", err, early)
	}
	if found, a, _, err := timedSearch(context.Background(), e, state, &pod, statuses, time.Nanosecond); found != nil || a != nil || err != nil {
		t.Fatalf("expected a cut-off run, got %+v %+v %v", found, a, err)
	}
	if found, _, _, err := timedSearch(context.Background(), e, state, &pod, statuses, time.Minute); found == nil || err != nil {
		t.Fatalf("expected a decision, got %v", err)
	}
}
