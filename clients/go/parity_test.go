package preemptd_test

// One test per row of the client parity table (docs/clients.md) that the conformance and
// watch tests do not cover already: Preempt by pod_ref, PdbMode, PlanDrain, TLS with bearer
// tokens, and the converters refusing the shared bad inputs
// (clients/testdata/bad-objects.json) at their field path.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	preemptd "github.com/preemptd/preemptd/clients/go"
	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

func kubeNode(name, cpu string) string {
	return fmt.Sprintf(`{"kind": "Node", "metadata": {"name": %q}, "status": {"allocatable": {"cpu": %q, "pods": "10"}}}`, name, cpu)
}

func kubePod(name, cpu string, priority int, nodeName, app string) string {
	phase := "Pending"
	if nodeName != "" {
		phase = "Running"
	}
	return fmt.Sprintf(`{"kind": "Pod", "metadata": {"namespace": "parity", "name": %q, "uid": "uid-%s", "labels": {"app": %q}},
		"spec": {"nodeName": %q, "priority": %d, "containers": [{"name": "c", "resources": {"requests": {"cpu": %q}}}]},
		"status": {"phase": %q}}`, name, name, app, nodeName, priority, cpu, phase)
}

const keepVictim = `{"kind": "PodDisruptionBudget", "metadata": {"namespace": "parity", "name": "keep-victim"},
	"spec": {"selector": {"matchLabels": {"app": "victim"}}}, "status": {"disruptionsAllowed": 0}}`

// parityClient is a client of a fresh server holding node-a (1 cpu) running "victim",
// which a budget allowing no disruption covers.
func parityClient(t *testing.T) *preemptd.Client {
	t.Helper()
	srv := startServer(t)
	client, err := preemptd.Dial(srv.addr, preemptd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	list := fmt.Sprintf(`{"kind": "List", "items": [%s, %s, %s]}`, kubeNode("node-a", "1"), kubePod("victim", "1", 0, "node-a", "victim"), keepVictim)
	report, err := client.SyncList(context.Background(), []byte(list), false)
	if err != nil || report.GetRejected() != 0 {
		t.Fatalf("sync: %v %v", err, report.GetRejections())
	}
	return client
}

func TestPreemptRefDecidesOnTheCachedPod(t *testing.T) {
	client := parityClient(t)
	ctx := context.Background()
	if _, err := client.UpsertJSON(ctx, []byte(kubePod("urgent", "1", 100, "", "urgent"))); err != nil {
		t.Fatal(err)
	}
	answer, err := client.PreemptRef(ctx, &pb.PodRef{Namespace: "parity", Name: "urgent"}, preemptd.PreemptOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if answer.GetOutcome() != pb.Outcome_OUTCOME_PREEMPT || len(answer.GetVictims()) != 1 || answer.GetVictims()[0].GetName() != "victim" {
		t.Fatalf("decision %v", answer)
	}
	_, err = client.PreemptRef(ctx, &pb.PodRef{Namespace: "parity", Name: "absent"}, preemptd.PreemptOptions{DryRun: true})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("absent pod: %v, want NOT_FOUND", err)
	}
}

func TestPdbModeStrictRefusesANodeWhoseVictimABudgetProtects(t *testing.T) {
	client := parityClient(t)
	ctx := context.Background()
	urgent := []byte(kubePod("urgent", "1", 100, "", "urgent"))
	prefer, err := client.PreemptJSON(ctx, urgent, preemptd.PreemptOptions{DryRun: true, PdbMode: pb.PdbMode_PDB_MODE_PREFER})
	if err != nil || prefer.GetOutcome() != pb.Outcome_OUTCOME_PREEMPT || prefer.GetPdbViolations() != 1 {
		t.Fatalf("prefer: %v %v", prefer, err)
	}
	strict, err := client.PreemptJSON(ctx, urgent, preemptd.PreemptOptions{DryRun: true, PdbMode: pb.PdbMode_PDB_MODE_STRICT})
	if err != nil || strict.GetOutcome() != pb.Outcome_OUTCOME_NO_CANDIDATE {
		t.Fatalf("strict: %v %v", strict, err)
	}
}

func TestPlanDrainPlacesThePodsOfTheDrainedNode(t *testing.T) {
	client := parityClient(t)
	ctx := context.Background()
	if _, err := client.UpsertJSON(ctx, []byte(kubeNode("node-b", "2"))); err != nil {
		t.Fatal(err)
	}
	plan, err := client.PlanDrain(ctx, []string{"node-a"}, preemptd.PlanDrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := plan.GetPods()
	if len(pods) != 1 || pods[0].GetPod().GetName() != "victim" || pods[0].GetOutcome() != pb.DrainOutcome_DRAIN_OUTCOME_FITS ||
		pods[0].GetNodeName() != "node-b" || pods[0].GetBlockedByPdb().GetName() != "keep-victim" {
		t.Fatalf("plan %v", plan)
	}
	if _, err := client.PlanDrain(ctx, nil, preemptd.PlanDrainOptions{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no nodes: %v, want INVALID_ARGUMENT", err)
	}
}

func TestTLSAndBearerTokensMapToRoles(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command(filepath.Join(repoRoot(t), "clients", "testdata", "make-tls.sh"), dir).CombinedOutput(); err != nil {
		t.Fatalf("make-tls.sh: %v\n%s", err, out)
	}
	srv := startServer(t, "--tls-cert", filepath.Join(dir, "server.crt"), "--tls-key", filepath.Join(dir, "server.key"),
		"--authz", filepath.Join(dir, "authz.yaml"))
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	tlsCreds := credentials.NewTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	dial := func(tokenFile string) *preemptd.Client {
		token := ""
		if tokenFile != "" {
			b, err := os.ReadFile(filepath.Join(dir, tokenFile))
			if err != nil {
				t.Fatal(err)
			}
			token = string(b)
		}
		c, err := preemptd.Dial(srv.addr, preemptd.Options{TransportCredentials: tlsCreds, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	writer, reader, anonymous := dial("writer.token"), dial("reader.token"), dial("")
	if r, err := writer.UpsertJSON(ctx, []byte(kubeNode("node-a", "1"))); err != nil || !r.Applied {
		t.Fatalf("writer: %v %v", r, err)
	}
	if d, err := reader.PreemptJSON(ctx, []byte(kubePod("p", "1", 0, "", "p")), preemptd.PreemptOptions{DryRun: true}); err != nil || d.GetOutcome() != pb.Outcome_OUTCOME_FITS {
		t.Fatalf("reader dry run: %v %v", d, err)
	}
	if _, err := reader.UpsertJSON(ctx, []byte(kubeNode("node-b", "1"))); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("reader update: %v, want PERMISSION_DENIED", err)
	}
	if _, err := anonymous.ListNominations(ctx); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no token: %v, want UNAUTHENTICATED", err)
	}
	// The generated stub shares the client's connection, token included.
	if list, err := reader.Stub().ListNominations(ctx, &pb.ListNominationsRequest{}); err != nil || list.GetEpoch() == "" {
		t.Fatalf("stub: %v %v", list, err)
	}
}

func TestConvertersRefuseBadInputAtItsField(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "clients", "testdata", "bad-objects.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name   string          `json:"name"`
			Path   string          `json:"path"`
			Object json.RawMessage `json:"object"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			_, err := preemptd.ItemFromJSON(c.Object, true)
			if err == nil || !strings.HasPrefix(err.Error(), c.Path+": ") {
				t.Fatalf("error %v, want one starting %q", err, c.Path+": ")
			}
		})
	}
	list := fmt.Sprintf(`{"kind": "List", "items": [%s, %s]}`, kubeNode("ok", "1"), file.Cases[0].Object)
	if _, err := preemptd.ItemsFromList([]byte(list), true); err == nil || !strings.HasPrefix(err.Error(), "items[1].spec.priority: ") {
		t.Fatalf("list item: %v, want an error naming items[1].spec.priority", err)
	}
}

func TestConverterMatchesTheSharedGolden(t *testing.T) {
	testdata := filepath.Join(repoRoot(t), "clients", "testdata")
	input, err := os.ReadFile(filepath.Join(testdata, "converter-input.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join(testdata, "converter-golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(golden, &file); err != nil {
		t.Fatal(err)
	}
	converted, err := preemptd.ItemsFromList(input, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(converted) != len(file.Items) {
		t.Fatalf("%d items, the golden has %d", len(converted), len(file.Items))
	}
	for i, raw := range file.Items {
		want := &pb.SyncRequest{}
		if err := protojson.Unmarshal(raw, want); err != nil {
			t.Fatalf("golden item %d: %v", i, err)
		}
		if !proto.Equal(converted[i], want) {
			t.Errorf("item %d:\n got %v\nwant %v", i, protojson.Format(converted[i]), protojson.Format(want))
		}
	}
}

func gangPod(name string, priority int, nodeName, group string) string {
	phase := "Pending"
	if nodeName != "" {
		phase = "Running"
	}
	return fmt.Sprintf(`{"kind": "Pod", "metadata": {"namespace": "gang", "name": %q, "uid": "uid-%s"},
		"spec": {"nodeName": %q, "priority": %d, "schedulingGroup": {"podGroupName": %q},
		"containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]}, "status": {"phase": %q}}`,
		name, name, nodeName, priority, group, phase)
}

func gangGroup(name string, priority int) string {
	return fmt.Sprintf(`{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
		"metadata": {"namespace": "gang", "name": %q},
		"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}, "priority": %d}}`, name, priority)
}

func TestPreemptGroupEvictsAnAllModeGangForEveryMember(t *testing.T) {
	srv := startServer(t, "--kubernetes-version", "1.37", "--feature-gates", "GenericWorkload=true")
	client, err := preemptd.Dial(srv.addr, preemptd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	list := fmt.Sprintf(`{"kind": "List", "items": [%s, %s, %s, %s, %s, %s]}`, kubeNode("n1", "8"), kubeNode("n2", "8"),
		gangGroup("inference", 100), gangPod("inf-0", 100, "n1", "inference"), gangPod("inf-1", 100, "n2", "inference"),
		gangGroup("training", 1000))
	report, err := client.SyncList(ctx, []byte(list), true)
	if err != nil || report.GetRejected() != 0 || report.GetApplied().GetPodGroups() != 2 {
		t.Fatalf("sync: %v %v %v", err, report.GetApplied(), report.GetRejections())
	}
	members := []*pb.Pod{}
	for _, name := range []string{"train-1", "train-0"} {
		member, err := preemptd.PodFromJSON([]byte(gangPod(name, 1000, "", "training")))
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, member)
	}
	ref := &pb.PodGroupRef{Namespace: "gang", Name: "training"}
	answer, err := client.PreemptGroup(ctx, ref, members, preemptd.PreemptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var victims, nominations []string
	for _, v := range answer.GetVictims() {
		victims = append(victims, v.GetName())
	}
	for _, n := range answer.GetNominations() {
		nominations = append(nominations, n.GetPod().GetName()+"@"+n.GetNodeName())
	}
	if answer.GetOutcome() != pb.Outcome_OUTCOME_PREEMPT || answer.GetPodGroupDisruptions() != 1 ||
		fmt.Sprint(victims) != "[inf-0 inf-1]" || fmt.Sprint(nominations) != "[train-0@n1 train-1@n2]" {
		t.Fatalf("decision %v", answer)
	}
	held, err := client.ListNominations(ctx)
	if err != nil || len(held.GetNominations()) != 2 {
		t.Fatalf("nominations after the commit: %v %v", held, err)
	}
	// A group unknown to the cache is NOT_FOUND, by the same retry and deadline contract.
	_, err = client.PreemptGroupJSON(ctx, &pb.PodGroupRef{Namespace: "gang", Name: "absent"},
		[][]byte{[]byte(gangPod("x", 1000, "", "absent"))}, preemptd.PreemptOptions{DryRun: true})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("absent group: %v, want NOT_FOUND", err)
	}
	workload, err := preemptd.WorkloadFromJSON([]byte(`{"kind": "Workload", "metadata": {"namespace": "gang", "name": "job"},
		"spec": {"podGroupTemplates": [{"name": "workers"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, update := range []func() (*preemptd.UpdateResult, error){
		func() (*preemptd.UpdateResult, error) { return client.UpsertWorkload(ctx, workload) },
		func() (*preemptd.UpdateResult, error) { return client.DeleteWorkload(ctx, "gang", "job") },
		func() (*preemptd.UpdateResult, error) { return client.DeletePodGroup(ctx, "gang", "training") },
	} {
		if r, err := update(); err != nil || !r.Applied {
			t.Fatalf("update: %v %v", r, err)
		}
	}
	if _, err := client.PreemptGroup(ctx, ref, members, preemptd.PreemptOptions{DryRun: true}); status.Code(err) != codes.NotFound {
		t.Fatalf("deleted group: %v, want NOT_FOUND", err)
	}
}
