package main

import (
	"fmt"

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
	Victims       []PodRef `json:"victims"`
	PdbViolations int64    `json:"pdbViolations"`
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
