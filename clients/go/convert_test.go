package preemptd_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	preemptd "github.com/preemptd/preemptd/clients/go"
	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

func TestPodFromJSONMapsFieldsAndDefaulting(t *testing.T) {
	pod, err := preemptd.PodFromJSON([]byte(`{
	  "apiVersion": "v1", "kind": "Pod",
	  "metadata": {"namespace": "ns", "name": "p", "uid": "u", "resourceVersion": "42",
	    "labels": {"app": "a"}, "deletionTimestamp": "2024-05-01T10:00:00Z"},
	  "spec": {"hostNetwork": true, "priority": 7, "preemptionPolicy": "Never",
	    "containers": [{"name": "c", "resources": {"requests": {"cpu": 1.5}, "limits": {"memory": "1Gi"}},
	      "ports": [{"containerPort": 8080}]}],
	    "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 30}],
	    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
	      "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
	        {"labelSelector": {}, "topologyKey": "zone"}]}},
	    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
	  "status": {"phase": "Pending", "nominatedNodeName": "n1", "startTime": "2024-05-01T09:00:00Z",
	    "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	seven, thirty := int32(7), int64(30)
	want := &pb.Pod{
		Namespace: "ns", Name: "p", Uid: "u", ResourceVersion: 42, Labels: map[string]string{"app": "a"},
		DeletionTimestamp: "2024-05-01T10:00:00Z", Priority: &seven, PreemptionPolicy: "Never",
		Containers: []*pb.Container{{
			Name: "c", Requests: map[string]string{"cpu": "1.5"}, Limits: map[string]string{"memory": "1Gi"},
			// hostNetwork: the API server defaults hostPort to containerPort.
			Ports: []*pb.ContainerPort{{HostPort: 8080, ContainerPort: 8080}},
		}},
		Tolerations: []*pb.Toleration{{Key: "k", Operator: "Exists", TolerationSeconds: &thirty}},
		Affinity: &pb.Affinity{
			// Present with no terms (matches no node) stays distinct from absent.
			NodeAffinity: &pb.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &pb.NodeSelector{}},
			PodAntiAffinity: &pb.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*pb.PodAffinityTerm{
				{LabelSelector: &pb.LabelSelector{}, TopologyKey: "zone"},
			}},
		},
		TopologySpreadConstraints: []*pb.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule"}},
		Phase:                     "Pending", NominatedNodeName: "n1", StartTime: "2024-05-01T09:00:00Z",
		Conditions: []*pb.PodCondition{{Type: "DisruptionTarget", Status: "True", Reason: "PreemptionByScheduler"}},
	}
	if !proto.Equal(pod, want) {
		t.Errorf("got  %v\nwant %v", pod, want)
	}
}

func TestPDBFromJSONKeepsSelectorPresenceAndDisruptedNames(t *testing.T) {
	absent, err := preemptd.PDBFromJSON([]byte(`{"metadata": {"name": "b"}, "spec": {}, "status": {"disruptionsAllowed": 2,
	  "disruptedPods": {"y": "2024-05-01T10:00:00Z", "x": "2024-05-01T10:00:00Z"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.PodDisruptionBudget{Name: "b", DisruptionsAllowed: 2, DisruptedPods: []string{"x", "y"}}
	if !proto.Equal(absent, want) {
		t.Errorf("got %v, want %v", absent, want)
	}
	empty, err := preemptd.PDBFromJSON([]byte(`{"metadata": {"name": "b"}, "spec": {"selector": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if empty.GetSelector() == nil {
		t.Error("an empty selector (matches every pod) was dropped")
	}
}

func TestItemsFromListTakesKindsFromTypedLists(t *testing.T) {
	items, err := preemptd.ItemsFromList([]byte(`{"kind": "NodeList", "items": [
	  {"metadata": {"name": "n1", "resourceVersion": 5}, "status": {"allocatable": {"cpu": 4, "pods": "110"}}}]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	want := preemptd.NodeItem(&pb.Node{Name: "n1", ResourceVersion: 5, Allocatable: map[string]string{"cpu": "4", "pods": "110"}})
	if len(items) != 1 || !proto.Equal(items[0], want) {
		t.Errorf("got %v, want %v", items, want)
	}
	jsonItems, err := preemptd.ItemsFromList([]byte(`{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonItems[0].GetPod().GetUpsertJson(); got != `{"kind": "Pod", "metadata": {"name": "p"}}` {
		t.Errorf("upsert_json %q, want the item's own text", got)
	}
}

func TestConversionErrorsNameTheField(t *testing.T) {
	for input, want := range map[string]string{
		`{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": 3}}]}`:                                            "items[0].metadata.name: expected a string",
		`{"kind": "List", "items": [{"kind": "Secret", "metadata": {"name": "s"}}]}`:                                       `unsupported kind "Secret"`,
		`{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {"cpu": true}}}]}}`: "spec.containers[0].resources.requests[cpu]: expected a quantity",
		`{"kind": "Node", "metadata": {"name": "n", "resourceVersion": "abc"}}`:                                            `metadata.resourceVersion: invalid resource version "abc"`,
	} {
		_, err := preemptd.ItemsFromList([]byte(input), true)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", input, err, want)
		}
	}
}
