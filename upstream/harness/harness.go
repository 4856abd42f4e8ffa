package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Answer is upstream's decision in the conformance scenarios' `expect` format, with every node
// upstream could nominate (the last tie-break follows Go map order, so any of them is upstream).
type Answer struct {
	Outcome                    string              `json:"outcome"`
	NominatedNodeNameAnyOf     []string            `json:"nominatedNodeNameAnyOf"`
	VictimsByNode              map[string][]string `json:"victimsByNode"`
	NominatedPodsToClearByNode map[string][]string `json:"nominatedPodsToClearByNode"`
	FeasibleNodes              []string            `json:"feasibleNodes"`
	// PlacementNode is, for FITS, the node upstream's schedulePod selects (Filter, then Score
	// with the harness's tie pin, tiepin.go).
	PlacementNode string `json:"placementNode,omitempty"`
	Message       string `json:"message,omitempty"`
}

// Scenario is one input: the same List and Pod that `preemptd simulate` reads.
type Scenario struct {
	Cluster   json.RawMessage `json:"cluster"`
	Preemptor json.RawMessage `json:"preemptor"`
	// BudgetOrder is the order of the PodDisruptionBudget list preemption sees: "" or "sorted"
	// for (namespace, name), the order preemptd walks them in; "listed" for the cluster List's
	// order (a diagnostic: which order would give another answer).
	BudgetOrder string `json:"budgetOrder,omitempty"`
}

type cluster struct {
	nodes []*v1.Node
	// bound: non-terminal pods with spec.nodeName, i.e. what the scheduler cache holds.
	bound []*v1.Pod
	// nominated: pending pods with status.nominatedNodeName, i.e. what the queue's nominator holds.
	nominated []*v1.Pod
	// pending: every non-terminal pod without spec.nodeName (a group preemptor's members).
	pending []*v1.Pod
	pdbs    []*policy.PodDisruptionBudget
	// podGroups: the List's PodGroup items, decoded by the build that knows the type.
	podGroups []json.RawMessage
}

// decodeCluster reads the List with its budgets in (namespace, name) order (see sortBudgets).
func decodeCluster(raw json.RawMessage) (*cluster, error) {
	c, err := decodeClusterListed(raw)
	if err != nil {
		return nil, err
	}
	sortBudgets(c.pdbs)
	return c, nil
}

// decodeClusterListed reads the List with its budgets in the List's order.
func decodeClusterListed(raw json.RawMessage) (*cluster, error) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &cluster{}
	for i, item := range list.Items {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		switch head.Kind {
		case "Node":
			n := &v1.Node{}
			if err := json.Unmarshal(item, n); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			c.nodes = append(c.nodes, n)
		case "Pod":
			p := &v1.Pod{}
			if err := json.Unmarshal(item, p); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			// The scheduler's pod informer excludes terminal pods.
			if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				continue
			}
			if err := checkSchedulingGroup(p); err != nil {
				return nil, fmt.Errorf("item %d: pod %s: %w", i, podKey(p), err)
			}
			if p.Spec.NodeName != "" {
				c.bound = append(c.bound, p)
				continue
			}
			c.pending = append(c.pending, p)
			if p.Status.NominatedNodeName != "" {
				c.nominated = append(c.nominated, p)
			}
		case "PodDisruptionBudget":
			pdb := &policy.PodDisruptionBudget{}
			if err := json.Unmarshal(item, pdb); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			c.pdbs = append(c.pdbs, pdb)
		case "PodGroup":
			c.podGroups = append(c.podGroups, item)
		default:
			// Namespaces and other kinds play no part in a preemption decision here.
		}
	}
	return c, nil
}

// sortBudgets pins the budgets to (namespace, name) order. Upstream lists them from the PDB
// informer's store, a Go map, so their order varies from call to call; from v1.37 on, the
// classification of a pod matched by two or more budgets depends on that order (it stops at
// the first budget that goes negative). preemptd walks them in this order, so the comparison
// is exact and reproducible.
func sortBudgets(pdbs []*policy.PodDisruptionBudget) {
	sort.SliceStable(pdbs, func(i, j int) bool {
		if pdbs[i].Namespace != pdbs[j].Namespace {
			return pdbs[i].Namespace < pdbs[j].Namespace
		}
		return pdbs[i].Name < pdbs[j].Name
	})
}

// harnessPlugins are the default profile's plugins the brief covers: the default filters
// without the volume and DRA ones, the default scorers, DefaultPreemption as PostFilter (and
// PodGroupPostFilter), GangScheduling (present when GenericWorkload is on), and what a profile
// needs.
var harnessPlugins = map[string]bool{
	names.NodeResourcesBalancedAllocation: true,
	names.ImageLocality:                   true,
	names.GangScheduling:                  true,
	names.PrioritySort:                    true,
	names.NodeUnschedulable:               true,
	names.NodeName:                        true,
	names.TaintToleration:                 true,
	names.NodeAffinity:                    true,
	names.NodePorts:                       true,
	names.NodeResourcesFit:                true,
	names.PodTopologySpread:               true,
	names.InterPodAffinity:                true,
	names.DefaultPreemption:               true,
	names.DefaultBinder:                   true,
}

// profile returns kube-scheduler's defaulted profile restricted to harnessPlugins (keeping
// the default order) with DefaultPreemptionArgs.MinCandidateNodesPercentage as given (the
// differential tests use 100; the rest of the arguments keep their defaults).
func profile(minCandidatePercentage int32) (*config.KubeSchedulerProfile, error) {
	return profileWith(minCandidatePercentage, true)
}

// profileWith is profile with (tiePinned) or without the tie pin and its weight scaling.
func profileWith(minCandidatePercentage int32, tiePinned bool) (*config.KubeSchedulerProfile, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	prof := cfg.Profiles[0].DeepCopy()
	restrict := func(set *config.PluginSet) {
		var kept []config.Plugin
		for _, p := range set.Enabled {
			if harnessPlugins[p.Name] {
				kept = append(kept, p)
			}
		}
		set.Enabled = kept
	}
	restrict(&prof.Plugins.MultiPoint)
	restrict(&prof.Plugins.PreFilter)
	restrict(&prof.Plugins.Filter)
	restrict(&prof.Plugins.PostFilter)
	restrict(&prof.Plugins.Score)
	restrict(&prof.Plugins.PreScore)
	if tiePinned {
		scaleWeights(&prof.Plugins.MultiPoint)
		scaleWeights(&prof.Plugins.Score)
		prof.Plugins.MultiPoint.Enabled = append(prof.Plugins.MultiPoint.Enabled, config.Plugin{Name: tiePinName, Weight: 1})
	}
	for i := range prof.PluginConfig {
		if args, ok := prof.PluginConfig[i].Args.(*config.DefaultPreemptionArgs); ok {
			args.MinCandidateNodesPercentage = minCandidatePercentage
		}
	}
	return prof, nil
}

// scaleWeights multiplies every weighted plugin's weight by tieScale (see tiepin.go).
func scaleWeights(set *config.PluginSet) {
	for i := range set.Enabled {
		set.Enabled[i].Weight *= tieScale
	}
}

// pinnedOffset is DefaultPreemption with its random candidate offset pinned to 0. The
// Evaluator takes its sampling through preemption.Interface, so wrapping the plugin is enough:
// no upstream code is copied or patched. With MinCandidateNodesPercentage = 100 the dry run
// then visits every potential node and only stops once all are done.
type pinnedOffset struct {
	*defaultpreemption.DefaultPreemption
}

func (p pinnedOffset) GetOffsetAndNumCandidates(nodes int32) (int32, int32) {
	_, n := p.DefaultPreemption.GetOffsetAndNumCandidates(nodes)
	return 0, n
}

type env struct {
	fw        framework.Framework
	snapshot  *internalcache.Snapshot
	plugin    *defaultpreemption.DefaultPreemption
	evaluator *preemption.Evaluator
	pdbs      []*policy.PodDisruptionBudget
	// queue is the framework's nominator (the scheduling queue, as scheduler.New makes it).
	queue internalqueue.SchedulingQueue
}

// world is what every profile's framework shares: the informers' stores and the snapshot.
type world struct {
	cs              *clientsetfake.Clientset
	informerFactory informers.SharedInformerFactory
	snapshot        *internalcache.Snapshot
	nominated       []*v1.Pod
	pdbs            []*policy.PodDisruptionBudget
}

func newEnv(ctx context.Context, c *cluster, preemptor *v1.Pod, prof *config.KubeSchedulerProfile) (*env, error) {
	w, err := newWorld(c, []*v1.Pod{preemptor})
	if err != nil {
		return nil, err
	}
	return w.env(ctx, prof, true)
}

func newWorld(c *cluster, preemptors []*v1.Pod) (*world, error) {
	cs := clientsetfake.NewClientset()
	informerFactory := informers.NewSharedInformerFactory(cs, 0)
	podStore := informerFactory.Core().V1().Pods().Informer().GetStore()
	for _, p := range c.bound {
		if err := podStore.Add(p); err != nil {
			return nil, err
		}
	}
	// The nominator only keeps (and hands back) pods its pod lister knows and that are unbound.
	for _, p := range c.nominated {
		if err := podStore.Add(p); err != nil {
			return nil, err
		}
	}
	// Namespace selectors are resolved through the namespace lister: every namespace a pod
	// lives in exists, labelled only with kubernetes.io/metadata.name (as the API server does).
	nsStore := informerFactory.Core().V1().Namespaces().Informer().GetStore()
	seen := map[string]bool{}
	for _, p := range append(append(append([]*v1.Pod{}, c.bound...), c.nominated...), preemptors...) {
		ns := p.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		if seen[ns] {
			continue
		}
		seen[ns] = true
		obj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1.LabelMetadataName: ns}}}
		if err := nsStore.Add(obj); err != nil {
			return nil, err
		}
	}
	snapshot, err := newSnapshot(c)
	if err != nil {
		return nil, err
	}
	factory, err := withBudgets(informerFactory, c.pdbs)
	if err != nil {
		return nil, err
	}
	return &world{cs: cs, informerFactory: factory, snapshot: snapshot, nominated: c.nominated, pdbs: c.pdbs}, nil
}

// env builds prof's framework over the world; pinned pins DefaultPreemption's random
// candidate offset to 0 (see pinnedOffset), else sampling is upstream's own.
func (w *world) env(ctx context.Context, prof *config.KubeSchedulerProfile, pinned bool) (*env, error) {
	var plugin *defaultpreemption.DefaultPreemption
	registry := frameworkplugins.NewInTreeRegistry()
	registry[tiePinName] = newNodeNameTieBreak
	inTree := registry[names.DefaultPreemption]
	registry[names.DefaultPreemption] = func(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
		p, err := inTree(ctx, args, fh)
		if err != nil {
			return nil, err
		}
		plugin = p.(*defaultpreemption.DefaultPreemption)
		return p, nil
	}
	opts := append([]frameworkruntime.Option{
		frameworkruntime.WithClientSet(w.cs),
		frameworkruntime.WithInformerFactory(w.informerFactory),
	}, snapshotOptions(w.snapshot)...)
	opts = append(opts, podGroupOptions(w.snapshot)...)
	fw, err := frameworkruntime.NewFramework(ctx, registry, prof, opts...)
	if err != nil {
		return nil, err
	}
	if plugin == nil {
		return nil, fmt.Errorf("profile built no DefaultPreemption plugin")
	}
	// As scheduler.New does: the queue sorts with the profile's QueueSort and becomes the
	// framework's nominator. Nominated pods enter it as unscheduled pods do (Add), which also
	// nominates them from status.nominatedNodeName; the nominator hands back a nominated pod's
	// full spec only while the queue holds it.
	queue := internalqueue.NewSchedulingQueue(fw.QueueSortFunc(), w.informerFactory,
		internalqueue.WithPodLister(w.informerFactory.Core().V1().Pods().Lister()))
	for _, p := range w.nominated {
		enqueue(ctx, queue, p)
	}
	fw.SetPodNominator(queue)
	var pi preemption.Interface = plugin
	if pinned {
		pi = pinnedOffset{plugin}
	}
	evaluator := newEvaluator(fw, plugin, pi)
	return &env{fw: fw, snapshot: w.snapshot, plugin: plugin, evaluator: evaluator, pdbs: w.pdbs, queue: queue}, nil
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func emptyAnswer(outcome string) *Answer {
	return &Answer{
		Outcome:                    outcome,
		NominatedNodeNameAnyOf:     []string{},
		VictimsByNode:              map[string][]string{},
		NominatedPodsToClearByNode: map[string][]string{},
		FeasibleNodes:              []string{},
	}
}

// decideAny answers a scenario whose preemptor is a Pod (decide) or, with GenericWorkload on,
// a PodGroup (decideGroup).
func decideAny(ctx context.Context, sc *Scenario, prof *config.KubeSchedulerProfile) (answer any, err error) {
	// Upstream's code trusts objects the API server validated; a scenario that is not one must
	// not take the serving harness down.
	defer func() {
		if r := recover(); r != nil {
			answer, err = nil, fmt.Errorf("upstream panicked on this scenario: %v", r)
		}
	}()
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(sc.Preemptor, &head); err != nil {
		return nil, fmt.Errorf("preemptor: %w", err)
	}
	if head.Kind == "PodGroup" {
		return decideGroup(ctx, sc, prof)
	}
	return decide(ctx, sc, prof)
}

// decide runs one scheduling cycle's filtering for pod, then DefaultPreemption as PostFilter,
// following schedulePod/findNodesThatFitPod of pkg/scheduler/schedule_one.go.
func decide(ctx context.Context, sc *Scenario, prof *config.KubeSchedulerProfile) (*Answer, error) {
	// The framework starts background work (its metrics recorder) bound to this context.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var c *cluster
	var err error
	switch sc.BudgetOrder {
	case "", "sorted":
		c, err = decodeCluster(sc.Cluster)
	case "listed":
		c, err = decodeClusterListed(sc.Cluster)
	default:
		err = fmt.Errorf("budgetOrder %q: want sorted or listed", sc.BudgetOrder)
	}
	if err != nil {
		return nil, err
	}
	pod := &v1.Pod{}
	if err := json.Unmarshal(sc.Preemptor, pod); err != nil {
		return nil, fmt.Errorf("preemptor: %w", err)
	}
	e, err := newEnv(ctx, c, pod, prof)
	if err != nil {
		return nil, err
	}
	state, statuses, early, err := e.filter(ctx, pod)
	if err != nil || early != nil {
		return early, err
	}
	return e.postFilter(ctx, state, pod, statuses)
}

// filter is one scheduling cycle's PreFilter and Filter for pod. A non-nil answer means the
// cycle ends there (no nodes, or the pod fits) and PostFilter does not run.
func (e *env) filter(ctx context.Context, pod *v1.Pod) (fwk.CycleState, *framework.NodeToStatus, *Answer, error) {
	state := framework.NewCycleState()
	allNodes, err := e.snapshot.NodeInfos().List()
	if err != nil {
		return nil, nil, nil, err
	}
	if len(allNodes) == 0 {
		// The scheduler does not even start a cycle without nodes; preemption finds nothing.
		a := emptyAnswer("NO_CANDIDATE")
		a.Message = "no nodes available"
		return nil, nil, a, nil
	}
	feasible, statuses, _, err := e.fitNodes(ctx, state, pod, allNodes, len(allNodes), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(feasible) > 0 {
		host, err := e.selectHost(ctx, state, pod, feasible)
		if err != nil {
			return nil, nil, nil, err
		}
		names := make([]string, 0, len(feasible))
		for _, ni := range feasible {
			names = append(names, ni.Node().Name)
		}
		sort.Strings(names)
		a := emptyAnswer("FITS")
		a.FeasibleNodes = names
		a.PlacementNode = host
		return nil, nil, a, nil
	}
	return state, statuses, nil, nil
}

// fitNodes is findNodesThatFitPod: PreFilter, then the nominated node alone if it passes
// Filter (else, without one, the batch's hint: hinter, when given, is the framework's
// GetNodeHint), else Filter on the nodes PreFilter leaves until `enough` pass. The statuses are
// the failed nodes'; the hint is returned for StoreScheduleResults.
func (e *env) fitNodes(ctx context.Context, state fwk.CycleState, pod *v1.Pod, allNodes []fwk.NodeInfo, enough int, hinter func(fwk.CycleState) string) ([]fwk.NodeInfo, *framework.NodeToStatus, string, error) {
	statuses := framework.NewDefaultNodeToStatus()
	preRes, s, unschedulablePlugins := e.fw.RunPreFilterPlugins(ctx, state, pod)
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, nil, "", s.AsError()
		}
		statuses.SetAbsentNodesStatus(s)
		return nil, statuses, "", nil
	}
	hint := ""
	if hinter != nil {
		hint = hinter(state)
	}
	// The nominated node (or the hint) is tried first, even outside the PreFilter result.
	first := pod.Status.NominatedNodeName
	if first == "" {
		first = hint
	}
	if first != "" {
		if ni, err := e.snapshot.Get(first); err == nil {
			st := e.fw.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if st.Code() == fwk.Error {
				return nil, nil, "", st.AsError()
			}
			if st.IsSuccess() {
				return []fwk.NodeInfo{ni}, statuses, hint, nil
			}
			statuses.Set(first, st)
		}
	}
	nodes := allNodes
	if !preRes.AllNodes() {
		nodes = nil
		for _, ni := range allNodes {
			if preRes.NodeNames.Has(ni.Node().Name) {
				nodes = append(nodes, ni)
			}
		}
		statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sortedSet(unschedulablePlugins))))
	}
	// The scheduler stops at numFeasibleNodesToFind (every node below 100), which only trims
	// the feasible set, never turns a FITS into a preemption.
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		if len(feasible) >= enough {
			break
		}
		st := e.fw.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
		if st.Code() == fwk.Error {
			return nil, nil, "", st.AsError()
		}
		if st.IsSuccess() {
			feasible = append(feasible, ni)
		} else {
			statuses.Set(ni.Node().Name, st)
		}
	}
	return feasible, statuses, hint, nil
}

// selectHost is schedulePod's choice among the feasible nodes: the only one, or the highest
// total of PreScore and Score (prioritizeNodes without extenders). With the harness's tie pin
// no two of up to 101 nodes share a total; beyond that (timing clusters only) equal totals go
// to the lowest name where upstream would pick at random.
func (e *env) selectHost(ctx context.Context, state fwk.CycleState, pod *v1.Pod, feasible []fwk.NodeInfo) (string, error) {
	if len(feasible) == 1 {
		return feasible[0].Node().Name, nil
	}
	scores, err := e.scoreNodes(ctx, state, pod, feasible)
	if err != nil {
		return "", err
	}
	return highestScore(scores).Name, nil
}

// highestScore is the highest total, the lowest name among equal totals.
func highestScore(scores []fwk.NodePluginScores) fwk.NodePluginScores {
	best := scores[0]
	for _, s := range scores[1:] {
		if s.TotalScore > best.TotalScore || (s.TotalScore == best.TotalScore && s.Name < best.Name) {
			best = s
		}
	}
	return best
}

// scoreNodes is prioritizeNodes (pkg/scheduler/schedule_one.go) without extenders.
func (e *env) scoreNodes(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, error) {
	if !e.fw.HasScorePlugins() {
		out := make([]fwk.NodePluginScores, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, fwk.NodePluginScores{Name: n.Node().Name, TotalScore: 1})
		}
		return out, nil
	}
	if st := e.fw.RunPreScorePlugins(ctx, state, pod, nodes); !st.IsSuccess() {
		return nil, st.AsError()
	}
	scores, st := e.fw.RunScorePlugins(ctx, state, pod, nodes)
	if !st.IsSuccess() {
		return nil, st.AsError()
	}
	return scores, nil
}

// numFeasibleNodesToFind is the scheduler's (schedule_one.go) with the default
// percentageOfNodesToScore: every node below 100, else 50% less 1% per 125 nodes (at least 5%),
// at least 100.
func numFeasibleNodesToFind(nodes int) int {
	if nodes < 100 {
		return nodes
	}
	pct := max(50-nodes/125, 5)
	return max(nodes*pct/100, 100)
}

func sortedSet(s interface{ UnsortedList() []string }) []string {
	if s == nil {
		return nil
	}
	l := s.UnsortedList()
	sort.Strings(l)
	return l
}

// searched is what Evaluator.Preempt decides before carrying the decision out.
type searched struct {
	candidates []preemption.Candidate
	chosen     preemption.Candidate
	// offset and num of the plugin's sample of potential nodes.
	offset, num int32
	potential   int
}

// search is Evaluator.Preempt's decision in its order (eligibility, the potential nodes,
// the dry run over the plugin's sample of them, the pick), without extenders, the
// PodDisruptionBudget lister (the budgets are given) and the API calls that follow. A
// non-nil answer ends the search without a candidate.
func (e *env) search(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses *framework.NodeToStatus) (*searched, *Answer, error) {
	if ok, msg := e.evaluator.PodEligibleToPreemptOthers(ctx, pod, statuses.Get(pod.Status.NominatedNodeName)); !ok {
		a := emptyAnswer("NOT_ELIGIBLE")
		a.Message = msg
		return nil, a, nil
	}
	potential, err := statuses.NodesForStatusCode(e.snapshot.NodeInfos(), fwk.Unschedulable)
	if err != nil {
		return nil, nil, err
	}
	if len(potential) == 0 {
		a := emptyAnswer("NO_CANDIDATE")
		a.Message = "preemption will not help schedule pod on any node: " + summarize(statuses, e.snapshot)
		return nil, a, nil
	}
	offset, num := e.evaluator.GetOffsetAndNumCandidates(int32(len(potential)))
	candidates, _, err := e.evaluator.DryRunPreemption(ctx, state, pod, potential, e.pdbs, offset, num)
	if err != nil && len(candidates) == 0 {
		return nil, nil, err
	}
	if len(candidates) == 0 {
		a := emptyAnswer("NO_CANDIDATE")
		a.Message = "no preemption candidate"
		return nil, a, nil
	}
	chosen := e.evaluator.SelectCandidate(ctx, candidates)
	return &searched{candidates: candidates, chosen: chosen, offset: offset, num: num, potential: len(potential)}, nil, nil
}

// postFilter is Evaluator.Preempt up to the node pick, through the Evaluator's public pieces:
// Preempt itself would pick one node of the last tie at random (Go map order) and then delete
// the victims through the API. Here the dry run is the upstream one (DryRunPreemption with the
// plugin's SelectVictimsOnNode) and the pick criteria are applied to list the whole tied set;
// Evaluator.SelectCandidate is still asked and its node must be in that set.
func (e *env) postFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses *framework.NodeToStatus) (*Answer, error) {
	found, ended, err := e.search(ctx, state, pod, statuses)
	if err != nil || ended != nil {
		return ended, err
	}
	if found.offset != 0 || int(found.num) != found.potential {
		return nil, fmt.Errorf("sampling not exhaustive: offset %d, %d of %d nodes", found.offset, found.num, found.potential)
	}
	candidates, chosen := found.candidates, found.chosen
	victimsMap := e.evaluator.CandidatesToVictimsMap(candidates)
	tied := tiedNodes(victimsMap)
	if chosen == nil || !contains(tied, chosen.Name()) {
		return nil, fmt.Errorf("upstream picked %v outside the tied set %v", chosen, tied)
	}
	a := emptyAnswer("PREEMPT")
	a.NominatedNodeNameAnyOf = tied
	for _, node := range tied {
		victims := []string{}
		for _, v := range victimsMap[node].Pods {
			victims = append(victims, podKey(v))
		}
		sort.Strings(victims)
		a.VictimsByNode[node] = victims
		// The set getLowerPriorityNominatedPods computes, as the decision reports it. (The async
		// path, default on, does not start its goroutine, nor clear them, when every victim is
		// already terminating; that is execution, not the decision.)
		clear := []string{}
		prio := corev1helpers.PodPriority(pod)
		for _, pi := range e.fw.NominatedPodsForNode(node) {
			if corev1helpers.PodPriority(pi.GetPod()) < prio {
				clear = append(clear, podKey(pi.GetPod()))
			}
		}
		sort.Strings(clear)
		a.NominatedPodsToClearByNode[node] = clear
	}
	return a, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// tiedNodes applies pickOneNodeForPreemption's criteria (pkg/scheduler/framework/preemption)
// and returns every node left after the last one, where upstream takes the first of a list
// built from Go map iteration, i.e. any of them.
func tiedNodes(nodesToVictims map[string]*extenderv1.Victims) []string {
	var nodes []string
	for n := range nodesToVictims {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	scores := []func(string) int64{
		func(n string) int64 { return -nodesToVictims[n].NumPDBViolations },
		func(n string) int64 { return -int64(corev1helpers.PodPriority(nodesToVictims[n].Pods[0])) },
		func(n string) int64 {
			var sum int64
			for _, p := range nodesToVictims[n].Pods {
				sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32+1)
			}
			return -sum
		},
		func(n string) int64 { return -int64(len(nodesToVictims[n].Pods)) },
		func(n string) int64 { return earliestStartOfHighestPriority(nodesToVictims[n]) },
	}
	for _, f := range scores {
		var best []string
		max := int64(math.MinInt64)
		for _, n := range nodes {
			s := f(n)
			if s > max {
				max = s
				best = nil
			}
			if s == max {
				best = append(best, n)
			}
		}
		nodes = best
		if len(nodes) == 1 {
			break
		}
	}
	return nodes
}

// earliestStartOfHighestPriority is util.GetEarliestPodStartTime with a fixed "now" for pods
// without status.startTime: upstream reads time.Now() at each call, so such nodes score in the
// order the map is walked, which makes every one of them a possible pick.
func earliestStartOfHighestPriority(victims *extenderv1.Victims) int64 {
	highest := corev1helpers.PodPriority(victims.Pods[0])
	for _, p := range victims.Pods {
		if corev1helpers.PodPriority(p) > highest {
			highest = corev1helpers.PodPriority(p)
		}
	}
	earliest := int64(math.MaxInt64)
	for _, p := range victims.Pods {
		if corev1helpers.PodPriority(p) != highest || p.Status.StartTime == nil {
			continue
		}
		if t := p.Status.StartTime.UnixNano(); t < earliest {
			earliest = t
		}
	}
	return earliest
}

// summarize counts the nodes' filter failures by plugin, for messages.
func summarize(statuses *framework.NodeToStatus, snapshot *internalcache.Snapshot) string {
	counts := map[string]int{}
	nodes, _ := snapshot.NodeInfos().List()
	for _, ni := range nodes {
		st := statuses.Get(ni.Node().Name)
		counts[fmt.Sprintf("%s %v", st.Plugin(), st.Reasons())]++
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}
