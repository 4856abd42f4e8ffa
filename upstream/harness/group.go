package main

import (
	"encoding/json"
	"fmt"
	"sort"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// genericWorkloadGate is kube-scheduler's GenericWorkload feature gate (KEP-5710).
const genericWorkloadGate featuregate.Feature = "GenericWorkload"

// PodRef names a pod in a group answer.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Nomination is the node upstream nominates one member pod for.
type Nomination struct {
	Pod      PodRef `json:"pod"`
	NodeName string `json:"nodeName"`
}

// GroupAnswer is upstream's answer for a PodGroup preemptor, in the shape of preemptd's
// PreemptGroupResponse as `preemptd simulate` prints it (outcome without the OUTCOME_ prefix).
type GroupAnswer struct {
	// Outcome: FITS (the group cycle places it), PREEMPT (PodGroupPostFilter succeeded),
	// NOT_ELIGIBLE (preemption policy Never), NO_CANDIDATE (anything else).
	Outcome string `json:"outcome"`
	// Victims in the order upstream's executor receives them (units in importance order, each
	// unit's pods in its order).
	Victims []PodRef `json:"victims"`
	// VictimUnits are the victims grouped in their units, in order. Upstream lists the pods of
	// a disruption-mode-all unit in Go map order (podGroupStateData.scheduledPods), so within
	// such a unit any order is upstream's; here they are sorted by namespace and name, and
	// Victims is this list flattened.
	VictimUnits   [][]PodRef `json:"victimUnits"`
	PdbViolations int64      `json:"pdbViolations"`
	// Nominations: one per placed member, in member order (see orderMembers).
	Nominations []Nomination `json:"nominations"`
	// NominatedPodsToClear: the lower-priority pods nominated to the candidate's "node", which
	// for a group is the whole cluster, named "cluster" (executor.getLowerPriorityNominatedPods).
	NominatedPodsToClear []PodRef `json:"nominatedPodsToClear"`
	Message              string   `json:"message,omitempty"`
	KubernetesVersion    string   `json:"kubernetesVersion"`
}

func newGroupAnswer(outcome string) *GroupAnswer {
	return &GroupAnswer{
		Outcome:              outcome,
		Victims:              []PodRef{},
		VictimUnits:          [][]PodRef{},
		Nominations:          []Nomination{},
		NominatedPodsToClear: []PodRef{},
		KubernetesVersion:    kubernetesMinor(),
	}
}

// setFeatureGates sets kube-scheduler's feature gates from NAME=BOOL[,...] before any
// profile or framework reads them.
func setFeatureGates(spec string) error {
	if err := utilfeature.DefaultMutableFeatureGate.Set(spec); err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	return checkFeatureGates()
}

func genericWorkload() bool {
	return utilfeature.DefaultFeatureGate.Enabled(genericWorkloadGate)
}

// kubernetesMinor is "1.37" for k8s.io/kubernetes v1.37.2.
func kubernetesMinor() string {
	v := kubernetesVersion()
	var major, minor int
	if _, err := fmt.Sscanf(v, "v%d.%d", &major, &minor); err != nil {
		return v
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// unitsOf groups victims in the executor's order into their units: consecutive pods of one
// disruption-mode-all group (allGroup names it, "" for a pod that is a unit of its own) form
// one unit, sorted by namespace and name.
func unitsOf(victims []PodRef, allGroup func(PodRef) string) [][]PodRef {
	units := [][]PodRef{}
	last := ""
	for _, v := range victims {
		g := allGroup(v)
		if g != "" && g == last {
			units[len(units)-1] = append(units[len(units)-1], v)
			continue
		}
		units = append(units, []PodRef{v})
		last = g
	}
	for _, u := range units {
		sort.Slice(u, func(i, j int) bool {
			if u[i].Namespace != u[j].Namespace {
				return u[i].Namespace < u[j].Namespace
			}
			return u[i].Name < u[j].Name
		})
	}
	return units
}

// setUnits fills VictimUnits and re-flattens Victims in their order.
func (a *GroupAnswer) setUnits(allGroup func(PodRef) string) {
	a.VictimUnits = unitsOf(a.Victims, allGroup)
	a.Victims = []PodRef{}
	for _, u := range a.VictimUnits {
		a.Victims = append(a.Victims, u...)
	}
}

// isGroupScenario: the preemptor is a PodGroup.
func isGroupScenario(sc *Scenario) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(sc.Preemptor, &head) == nil && head.Kind == "PodGroup"
}

func refKeys(refs []PodRef) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

// compareGroupAnswers is the differential's group rule: outcome, the victims unit by unit in
// order (any order inside a unit), budget violations, every member's node, nominations to
// clear. "" when they agree.
func compareGroupAnswers(expect, got *GroupAnswer) string {
	if expect.Outcome != got.Outcome {
		return fmt.Sprintf("outcome %s, recorded %s (%s)", got.Outcome, expect.Outcome, got.Message)
	}
	units := func(a *GroupAnswer) []string {
		var out []string
		for _, u := range a.VictimUnits {
			out = append(out, setOf(refKeys(u)))
		}
		return out
	}
	if fmt.Sprint(units(expect)) != fmt.Sprint(units(got)) {
		return fmt.Sprintf("victim units %v, recorded %v", units(got), units(expect))
	}
	if expect.PdbViolations != got.PdbViolations {
		return fmt.Sprintf("pdbViolations %d, recorded %d", got.PdbViolations, expect.PdbViolations)
	}
	noms := func(a *GroupAnswer) []string {
		var out []string
		for _, n := range a.Nominations {
			out = append(out, n.Pod.Namespace+"/"+n.Pod.Name+"@"+n.NodeName)
		}
		return out
	}
	if setOf(noms(expect)) != setOf(noms(got)) {
		return fmt.Sprintf("nominations [%s], recorded [%s]", setOf(noms(got)), setOf(noms(expect)))
	}
	if setOf(refKeys(expect.NominatedPodsToClear)) != setOf(refKeys(got.NominatedPodsToClear)) {
		return fmt.Sprintf("nominations to clear [%s], recorded [%s]", setOf(refKeys(got.NominatedPodsToClear)), setOf(refKeys(expect.NominatedPodsToClear)))
	}
	return ""
}
