package preemptd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	preemptd "github.com/preemptd/preemptd/clients/go"
	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

// scenarioDir is $PREEMPTD_SCENARIOS or <repo>/tests/conformance; every *.json below it
// (recursively) is a scenario.
func scenarioFiles(t *testing.T) []string {
	t.Helper()
	dir := os.Getenv("PREEMPTD_SCENARIOS")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "tests", "conformance")
	}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("scenarios in %s: %v", dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenarios (*.json) in %s", dir)
	}
	sort.Strings(files)
	return files
}

type scenario struct {
	Cluster   json.RawMessage `json:"cluster"`
	Preemptor json.RawMessage `json:"preemptor"`
	Expect    struct {
		Outcome                    string              `json:"outcome"`
		NominatedNodeNameAnyOf     []string            `json:"nominatedNodeNameAnyOf"`
		VictimsByNode              map[string][]string `json:"victimsByNode"`
		NominatedPodsToClearByNode map[string][]string `json:"nominatedPodsToClearByNode"`
		FeasibleNodes              *[]string           `json:"feasibleNodes"`
	} `json:"expect"`
}

// mode is how a scenario's objects reach the server.
type mode struct {
	name  string
	typed bool // typed messages (converted here) rather than upsert_json / pod_json
	sync  bool // one Sync stream rather than one unary call per object
}

var modes = []mode{
	{"json-sync", false, true},
	{"typed-sync", true, true},
	{"json-unary", false, false},
	{"typed-unary", true, false},
}

// TestConformance runs every scenario through the client, in each mode, against one
// server; each scenario deletes its objects again so the next starts from an empty cache.
func TestConformance(t *testing.T) {
	srv := startServer(t)
	client, err := preemptd.Dial(srv.addr, preemptd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	files := scenarioFiles(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, file := range files {
				name := strings.TrimSuffix(filepath.Base(file), ".json")
				t.Run(name, func(t *testing.T) { runScenario(t, client, file, m) })
			}
		})
	}
}

func runScenario(t *testing.T, client *preemptd.Client, file string, m mode) {
	ctx := context.Background()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	items, err := preemptd.ItemsFromList(sc.Cluster, m.typed)
	if err != nil {
		t.Fatalf("convert cluster: %v", err)
	}
	t.Cleanup(func() { deleteAll(t, client, items) })
	if m.sync {
		report, err := client.Sync(ctx, items)
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		if report.GetRejected() != 0 {
			t.Fatalf("sync rejected %d items: %v", report.GetRejected(), report.GetRejections())
		}
		applied := report.GetApplied()
		stale := report.GetStale()
		total := applied.GetNodes() + applied.GetPods() + applied.GetPdbs() + stale.GetNodes() + stale.GetPods() + stale.GetPdbs()
		if total != uint64(len(items)) {
			t.Fatalf("sync accounted for %d of %d items: %v", total, len(items), report)
		}
	} else {
		for i, item := range items {
			if _, err := client.Update(ctx, item); err != nil {
				t.Fatalf("update item %d: %v", i, err)
			}
		}
	}

	var answer *pb.PreemptResponse
	if m.typed {
		pod, err := preemptd.PodFromJSON(sc.Preemptor)
		if err != nil {
			t.Fatalf("convert preemptor: %v", err)
		}
		answer, err = client.Preempt(ctx, pod, preemptd.PreemptOptions{DryRun: true})
		if err != nil {
			t.Fatalf("preempt: %v", err)
		}
	} else {
		answer, err = client.PreemptJSON(ctx, sc.Preemptor, preemptd.PreemptOptions{DryRun: true})
		if err != nil {
			t.Fatalf("preempt: %v", err)
		}
	}
	if problem := compare(&sc, answer); problem != "" {
		t.Errorf("%s: %s", file, problem)
	}
}

var outcomeNames = map[pb.Outcome]string{
	pb.Outcome_OUTCOME_PREEMPT:      "PREEMPT",
	pb.Outcome_OUTCOME_FITS:         "FITS",
	pb.Outcome_OUTCOME_NOT_ELIGIBLE: "NOT_ELIGIBLE",
	pb.Outcome_OUTCOME_NO_CANDIDATE: "NO_CANDIDATE",
}

// compare checks an answer as every client's suite does (docs/clients.md): the outcome; for
// PREEMPT the node (one of nominatedNodeNameAnyOf) and that node's victims and
// nominations to clear; for FITS the feasible nodes when the scenario lists them.
func compare(sc *scenario, answer *pb.PreemptResponse) string {
	got, ok := outcomeNames[answer.GetOutcome()]
	if !ok {
		got = answer.GetOutcome().String()
	}
	expect := sc.Expect
	if got != expect.Outcome {
		return fmt.Sprintf("outcome %s != %s: %s", got, expect.Outcome, answer.GetMessage())
	}
	switch got {
	case "PREEMPT":
		node := answer.GetNominatedNodeName()
		if !slices.Contains(expect.NominatedNodeNameAnyOf, node) {
			return fmt.Sprintf("node %q not in %v", node, expect.NominatedNodeNameAnyOf)
		}
		if victims, want := refs(answer.GetVictims()), sorted(expect.VictimsByNode[node]); !slices.Equal(victims, want) {
			return fmt.Sprintf("victims %v != %v", victims, want)
		}
		if cleared, want := refs(answer.GetNominatedPodsToClear()), sorted(expect.NominatedPodsToClearByNode[node]); !slices.Equal(cleared, want) {
			return fmt.Sprintf("cleared %v != %v", cleared, want)
		}
	case "FITS":
		if expect.FeasibleNodes != nil {
			if feasible, want := sorted(answer.GetFeasibleNodes()), sorted(*expect.FeasibleNodes); !slices.Equal(feasible, want) {
				return fmt.Sprintf("feasible %v != %v", feasible, want)
			}
		}
	}
	return ""
}

func refs(pods []*pb.PodRef) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.GetNamespace()+"/"+p.GetName())
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// deleteAll deletes what items upserted: pods first, so nodes and budgets leave an empty
// cache behind. Every delete must succeed.
func deleteAll(t *testing.T, client *preemptd.Client, items []*pb.SyncRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := func(j string, typed interface {
		GetNamespace() string
		GetName() string
	}) (string, string) {
		if typed != nil && typed.GetName() != "" {
			return typed.GetNamespace(), typed.GetName()
		}
		var obj struct {
			Metadata struct{ Namespace, Name string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(j), &obj); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		return obj.Metadata.Namespace, obj.Metadata.Name
	}
	seen := map[string]bool{}
	for _, kind := range []string{"pod", "node", "pdb"} {
		for _, item := range items {
			var ns, name string
			var del func() (*preemptd.UpdateResult, error)
			switch {
			case kind == "pod" && item.GetPod() != nil:
				ns, name = ref(item.GetPod().GetUpsertJson(), item.GetPod().GetUpsert())
				del = func() (*preemptd.UpdateResult, error) { return client.DeletePod(ctx, ns, name) }
			case kind == "node" && item.GetNode() != nil:
				_, name = ref(item.GetNode().GetUpsertJson(), nodeName{item.GetNode().GetUpsert()})
				del = func() (*preemptd.UpdateResult, error) { return client.DeleteNode(ctx, name) }
			case kind == "pdb" && item.GetPdb() != nil:
				ns, name = ref(item.GetPdb().GetUpsertJson(), item.GetPdb().GetUpsert())
				del = func() (*preemptd.UpdateResult, error) { return client.DeletePodDisruptionBudget(ctx, ns, name) }
			default:
				continue
			}
			key := kind + "/" + ns + "/" + name
			if seen[key] {
				continue
			}
			seen[key] = true
			// NOT_FOUND: the server dropped it already (a Succeeded or Failed pod).
			if _, err := del(); err != nil && status.Code(err) != codes.NotFound {
				t.Errorf("cleanup %s: %v", key, err)
			}
		}
	}
}

// nodeName gives a typed node the namespace accessor the other kinds have.
type nodeName struct{ n *pb.Node }

func (n nodeName) GetNamespace() string { return "" }
func (n nodeName) GetName() string      { return n.n.GetName() }
