//go:build k8s_1_37

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

type obj = map[string]any

func gNode(name string, cpu int) obj {
	res := obj{"cpu": fmt.Sprint(cpu), "memory": "8Gi", "pods": "110"}
	return obj{"apiVersion": "v1", "kind": "Node", "metadata": obj{"name": name, "labels": obj{"kubernetes.io/hostname": name}},
		"status": obj{"allocatable": res, "capacity": res}}
}

// gPod is a pod requesting cpu cores; node "" makes it pending; group "" leaves it out of groups.
func gPod(name, node string, cpu, prio int, group, created string) obj {
	p := obj{"apiVersion": "v1", "kind": "Pod",
		"metadata": obj{"name": name, "namespace": "default", "uid": "uid-" + name, "creationTimestamp": created},
		"spec":     obj{"priority": prio, "containers": []obj{{"name": "c", "resources": obj{"requests": obj{"cpu": fmt.Sprint(cpu), "memory": "1Gi"}}}}},
		"status":   obj{"phase": "Pending"}}
	if node != "" {
		p["spec"].(obj)["nodeName"] = node
		p["status"] = obj{"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
	}
	if group != "" {
		p["spec"].(obj)["schedulingGroup"] = obj{"podGroupName": group}
	}
	return p
}

func gGroup(name string, prio, minCount int, mode string) obj {
	policy := obj{"basic": obj{}}
	if minCount > 0 {
		policy = obj{"gang": obj{"minCount": minCount}}
	}
	return obj{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
		"metadata": obj{"name": name, "namespace": "default", "uid": "uid-pg-" + name, "creationTimestamp": "2026-01-01T00:00:00Z"},
		"spec":     obj{"schedulingPolicy": policy, "priority": prio, "disruptionMode": obj{mode: obj{}}}}
}

func groupScenario(t *testing.T, items []obj, preemptor obj) *Scenario {
	t.Helper()
	cluster, err := json.Marshal(obj{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	pre, err := json.Marshal(preemptor)
	if err != nil {
		t.Fatal(err)
	}
	return &Scenario{Cluster: cluster, Preemptor: pre}
}

func withGenericWorkload(t *testing.T) {
	t.Helper()
	if err := setFeatureGates("GenericWorkload=true"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = utilfeature.DefaultMutableFeatureGate.Set("GenericWorkload=false") })
}

func answerGroup(t *testing.T, sc *Scenario) *GroupAnswer {
	t.Helper()
	metrics.Register()
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	a, err := decideAny(context.Background(), sc, prof)
	if err != nil {
		t.Fatal(err)
	}
	ga, ok := a.(*GroupAnswer)
	if !ok {
		t.Fatalf("not a group answer: %#v", a)
	}
	return ga
}

func refNames(refs []PodRef) []string {
	out := []string{}
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out
}

func nominations(ns []Nomination) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.Pod.Name+"@"+n.NodeName)
	}
	return out
}

func eq(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// A training gang of two 3-core members against an inference gang in mode all (one unit on
// n1 and n2) and a lower-priority pod on n3. With every victim removed the members go to n1
// and n2 (equal scores: the pin picks names in order; the earlier-created member first); the
// all-mode unit, reprieved first as the more important one, does not fit back, the pod on n3
// does. So the gang evicts both inference pods, nominated one per member.
func TestGroupPreemptsAnAllModeUnit(t *testing.T) {
	withGenericWorkload(t)
	items := []obj{gNode("n1", 4), gNode("n2", 4), gNode("n3", 4),
		gGroup("inf", 100, 2, "all"), gPod("inf-0", "n1", 3, 100, "inf", "2026-01-01T00:00:00Z"), gPod("inf-1", "n2", 3, 100, "inf", "2026-01-01T00:00:00Z"),
		gPod("batch-a", "n3", 3, 10, "", "2026-01-01T00:00:00Z"),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:01:00Z"), gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:30Z")}
	a := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 2, "single")))
	if a.Outcome != "PREEMPT" || !eq(refNames(a.Victims), []string{"inf-0", "inf-1"}) || a.PdbViolations != 0 {
		t.Fatalf("got %+v", a)
	}
	if !eq(nominations(a.Nominations), []string{"train-1@n1", "train-0@n2"}) {
		t.Fatalf("nominations %v", nominations(a.Nominations))
	}
	if len(a.NominatedPodsToClear) != 0 || a.KubernetesVersion != "1.37" {
		t.Fatalf("got %+v", a)
	}
	if len(a.VictimUnits) != 1 || !eq(refNames(a.VictimUnits[0]), []string{"inf-0", "inf-1"}) {
		t.Fatalf("units %+v", a.VictimUnits)
	}
}

// In mode single each member of the inference group is a unit of its own. Without victims n3
// (8 cores, emptiest) scores highest for both training members (LeastAllocated), so both go
// there: batch-a must go, and each inference pod, reprieved on its own, fits back.
func TestGroupSingleModeUnitsAreReprievedOneByOne(t *testing.T) {
	withGenericWorkload(t)
	items := []obj{gNode("n1", 4), gNode("n2", 4), gNode("n3", 8),
		gGroup("inf", 100, 0, "single"), gPod("inf-0", "n1", 3, 100, "inf", "2026-01-01T00:00:00Z"), gPod("inf-1", "n2", 3, 100, "inf", "2026-01-01T00:00:00Z"),
		gPod("batch-a", "n3", 6, 10, "", "2026-01-01T00:00:00Z"),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z"), gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:00Z")}
	a := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 2, "single")))
	if a.Outcome != "PREEMPT" || !eq(refNames(a.Victims), []string{"batch-a"}) {
		t.Fatalf("got %+v", a)
	}
	if !eq(nominations(a.Nominations), []string{"train-0@n3", "train-1@n3"}) {
		t.Fatalf("nominations %v", nominations(a.Nominations))
	}
}

// A gang that fits is placed, every member nominated where the group cycle puts it.
func TestGroupFits(t *testing.T) {
	withGenericWorkload(t)
	items := []obj{gNode("n1", 4), gNode("n2", 4),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z"), gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:00Z")}
	a := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 2, "single")))
	if a.Outcome != "FITS" || len(a.Victims) != 0 || !eq(nominations(a.Nominations), []string{"train-0@n1", "train-1@n2"}) {
		t.Fatalf("got %+v", a)
	}
}

// A member with preemptionPolicy Never makes the whole group Never (PodGroupPreemptionPolicy
// off): not eligible, nothing evicted.
func TestGroupNeverIsNotEligible(t *testing.T) {
	withGenericWorkload(t)
	never := gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:00Z")
	never["spec"].(obj)["preemptionPolicy"] = "Never"
	items := []obj{gNode("n1", 4), gPod("low", "n1", 3, 1, "", "2026-01-01T00:00:00Z"),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z"), never}
	a := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 2, "single")))
	if a.Outcome != "NOT_ELIGIBLE" || len(a.Victims) != 0 {
		t.Fatalf("got %+v", a)
	}
}

// When even an empty cluster cannot hold the gang's minimum there is no candidate.
func TestGroupNoCandidateWhenTheGangCannotFit(t *testing.T) {
	withGenericWorkload(t)
	items := []obj{gNode("n1", 4), gPod("low", "n1", 3, 1, "", "2026-01-01T00:00:00Z"),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z"), gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:00Z")}
	a := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 2, "single")))
	if a.Outcome != "NO_CANDIDATE" || len(a.Victims) != 0 || len(a.Nominations) != 0 {
		t.Fatalf("got %+v", a)
	}
}

// Per-pod preemption with GenericWorkload on uses victim units: evicting for a single pod on
// n1 takes the all-mode inference unit, i.e. its pod on n2 as well.
func TestPodPreemptionTakesAWholeAllModeUnit(t *testing.T) {
	withGenericWorkload(t)
	items := []obj{gNode("n1", 4), gNode("n2", 4),
		gGroup("inf", 100, 2, "all"), gPod("inf-0", "n1", 3, 100, "inf", "2026-01-01T00:00:00Z"), gPod("inf-1", "n2", 3, 100, "inf", "2026-01-01T00:00:00Z")}
	pod := gPod("hi", "", 3, 1000, "", "2026-01-01T00:00:00Z")
	metrics.Register()
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decideAny(context.Background(), groupScenario(t, items, pod), prof)
	if err != nil {
		t.Fatal(err)
	}
	a := got.(*Answer)
	if a.Outcome != "PREEMPT" {
		t.Fatalf("got %+v", a)
	}
	for _, n := range a.NominatedNodeNameAnyOf {
		if len(a.VictimsByNode[n]) != 2 {
			t.Fatalf("node %s: victims %v, want the whole unit", n, a.VictimsByNode[n])
		}
	}
}

// A victim that is already terminating never reaches the executor's deletion hook; the
// answer still names it (from the executor's own account of the pods it skips), and its budget
// violation (from the executor's PreemptionPDBViolations count).
func TestGroupVictimsThatAreAllTerminating(t *testing.T) {
	withGenericWorkload(t)
	old := gPod("old", "n1", 3, 1, "", "2026-01-01T00:00:00Z")
	old["metadata"].(obj)["deletionTimestamp"] = "2026-01-02T00:00:00Z"
	old["metadata"].(obj)["labels"] = obj{"app": "old"}
	budget := obj{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
		"metadata": obj{"namespace": "default", "name": "old"},
		"spec":     obj{"selector": obj{"matchLabels": obj{"app": "old"}}}}
	items := []obj{gNode("n1", 4), old, budget, gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z")}
	a := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 1, "single")))
	if a.Outcome != "PREEMPT" || !eq(refNames(a.Victims), []string{"old"}) || !eq(nominations(a.Nominations), []string{"train-0@n1"}) || a.PdbViolations != 1 {
		t.Fatalf("got %+v", a)
	}
}

// A pod naming no PodGroup in spec.schedulingGroup is refused with its field path (upstream's
// snapshot would dereference the missing name).
func TestSchedulingGroupWithoutAName(t *testing.T) {
	withGenericWorkload(t)
	bad := gPod("bad", "n1", 1, 1, "", "2026-01-01T00:00:00Z")
	bad["spec"].(obj)["schedulingGroup"] = obj{}
	items := []obj{gNode("n1", 4), bad, gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z")}
	metrics.Register()
	prof, err := profile(100)
	if err != nil {
		t.Fatal(err)
	}
	_, err = decideAny(context.Background(), groupScenario(t, items, gGroup("train", 1000, 1, "single")), prof)
	if err == nil || !strings.Contains(err.Error(), "spec.schedulingGroup.podGroupName: required") {
		t.Fatalf("got %v", err)
	}
}

// check's group rule: a recorded answer with an all-mode unit's pods in another order still
// agrees; other victims, another member's node or another budget count do not.
func TestCompareGroupAnswers(t *testing.T) {
	withGenericWorkload(t)
	items := []obj{gNode("n1", 4), gNode("n2", 4), gNode("n3", 4),
		gGroup("inf", 100, 2, "all"), gPod("inf-0", "n1", 3, 100, "inf", "2026-01-01T00:00:00Z"), gPod("inf-1", "n2", 3, 100, "inf", "2026-01-01T00:00:00Z"),
		gPod("batch-a", "n3", 3, 10, "", "2026-01-01T00:00:00Z"),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:01:00Z"), gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:30Z")}
	got := answerGroup(t, groupScenario(t, items, gGroup("train", 1000, 2, "single")))
	recorded := *got
	recorded.VictimUnits = [][]PodRef{{got.VictimUnits[0][1], got.VictimUnits[0][0]}}
	if d := compareGroupAnswers(&recorded, got); d != "" {
		t.Fatal(d)
	}
	other := *got
	other.VictimUnits = [][]PodRef{{got.VictimUnits[0][0]}}
	if compareGroupAnswers(&other, got) == "" {
		t.Fatal("other victims agree")
	}
	moved := *got
	moved.Nominations = []Nomination{got.Nominations[0], {Pod: got.Nominations[1].Pod, NodeName: "n3"}}
	if compareGroupAnswers(&moved, got) == "" {
		t.Fatal("another node agrees")
	}
	budgets := *got
	budgets.PdbViolations = 1
	if compareGroupAnswers(&budgets, got) == "" {
		t.Fatal("another budget count agrees")
	}
}

// The time mode's --groups times PodGroupPostFilter on every kind's PodGroup preemptors, their
// pending members in the cluster List, and reports the outcome and every run.
func TestTimeModeTimesGroups(t *testing.T) {
	withGenericWorkload(t)
	metrics.Register()
	items := []obj{gNode("n1", 4), gNode("n2", 4), gNode("n3", 4),
		gGroup("inf", 100, 2, "all"), gPod("inf-0", "n1", 3, 100, "inf", "2026-01-01T00:00:00Z"), gPod("inf-1", "n2", 3, 100, "inf", "2026-01-01T00:00:00Z"),
		gPod("batch-a", "n3", 3, 10, "", "2026-01-01T00:00:00Z"),
		gPod("train-0", "", 3, 1000, "train", "2026-01-01T00:00:00Z"), gPod("train-1", "", 3, 1000, "train", "2026-01-01T00:00:00Z")}
	sc := groupScenario(t, items, gGroup("train", 1000, 2, "single"))
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.json")
	groups := filepath.Join(dir, "groups-2.json")
	if err := os.WriteFile(cluster, sc.Cluster, 0o644); err != nil {
		t.Fatal(err)
	}
	list := `{"apiVersion":"v1","kind":"List","items":[` + string(sc.Preemptor) + `]}`
	if err := os.WriteFile(groups, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() {
		if code := timeMode(context.Background(), []string{"--cluster", cluster, "--groups", groups, "--runs", "3"}); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var report timeReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &report); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if len(report.Kinds) != 1 || report.Kinds[0].Kind != "2" || report.Kinds[0].Outcome != "PREEMPT" {
		t.Fatalf("report %+v", report)
	}
	l := report.Kinds[0].Configs["podgroup"]
	if l.Runs != 3 || l.Candidates != 2 || l.P50ms <= 0 || l.P99ms < l.P50ms || report.Kinds[0].Filter.Runs != 3 {
		t.Fatalf("%+v", report.Kinds[0])
	}
}
