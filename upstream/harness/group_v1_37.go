//go:build k8s_1_37

package main

// A PodGroup preemptor (GenericWorkload on) answered as kube-scheduler v1.37.2 does in
// scheduleOnePodGroup (pkg/scheduler/schedule_one_podgroup.go): the group cycle places the
// members one after another, each through PreFilter, Filter and Score with the earlier ones
// assumed and reserved; when the cycle ends Unschedulable, the framework's
// RunPodGroupPostFilterPlugins runs DefaultPreemption's PodGroupPostFilter with a
// PodGroupSchedulingFunc that reruns the cycle. The cycle lives in unexported Scheduler
// methods (podGroupSchedulingDefaultAlgorithm, podGroupPodSchedulingAlgorithm, schedulePod,
// assumeAndReserve, unreserveAndForget); runGroupCycle and scheduleMember repeat their steps
// with the framework's and the snapshot's exported calls (listed on each). Everything the
// evaluator decides is upstream's own code; its victims are read where the executor receives
// them (Executor.PreemptPod, an exported hook), so nothing is deleted.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics/testutil"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

func checkFeatureGates() error { return nil }

// groupCycleCount is the scheduling cycle every group cycle of one answer runs in.
const groupCycleCount = 1

// batching: kube-scheduler's OpportunisticBatching gate (KEP-5598; beta, on by default).
func batching() bool {
	return utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature("OpportunisticBatching"))
}

// checkSchedulingGroup refuses a spec.schedulingGroup without a PodGroup name, which the API
// server refuses (upstream's snapshot would dereference it).
func checkSchedulingGroup(p *v1.Pod) error {
	if g := p.Spec.SchedulingGroup; g != nil && (g.PodGroupName == nil || *g.PodGroupName == "") {
		return fmt.Errorf("spec.schedulingGroup.podGroupName: required")
	}
	return nil
}

// newSnapshot holds the List's PodGroups when GenericWorkload is on (the snapshot is then the
// framework's PodGroup lister and pod group states, as the scheduler cache fills it).
func newSnapshot(c *cluster) (*internalcache.Snapshot, error) {
	if !genericWorkload() {
		return internalcache.NewSnapshot(c.bound, c.nodes), nil
	}
	groups := make([]*schedulingv1beta1.PodGroup, 0, len(c.podGroups))
	for i, raw := range c.podGroups {
		pg := &schedulingv1beta1.PodGroup{}
		if err := json.Unmarshal(raw, pg); err != nil {
			return nil, fmt.Errorf("cluster: PodGroup %d: %w", i, err)
		}
		groups = append(groups, pg)
	}
	return internalcache.NewTestSnapshotWithPodGroups(c.bound, c.nodes, groups), nil
}

// podGroupOptions: the snapshot serves the PodGroupManager calls plugins make (the scheduler
// passes its cache, which answers them from the same objects).
func podGroupOptions(snapshot *internalcache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithPodGroupManager(snapshot)}
}

// decideGroup answers a scenario whose preemptor is a PodGroup (contract: its members are the
// List's pods in its namespace that name it in spec.schedulingGroup and have no spec.nodeName).
func decideGroup(ctx context.Context, sc *Scenario, prof *config.KubeSchedulerProfile) (*GroupAnswer, error) {
	if !genericWorkload() {
		return nil, fmt.Errorf("preemptor: a PodGroup needs --feature-gates GenericWorkload=true")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := decodeCluster(sc.Cluster)
	if err != nil {
		return nil, err
	}
	pg := &schedulingv1beta1.PodGroup{}
	if err := json.Unmarshal(sc.Preemptor, pg); err != nil {
		return nil, fmt.Errorf("preemptor: %w", err)
	}
	if pg.Namespace == "" {
		pg.Namespace = "default"
	}
	// The preemptor's PodGroup replaces a List item of the same name.
	kept := c.podGroups[:0]
	for _, raw := range c.podGroups {
		var meta struct {
			Metadata struct{ Namespace, Name string } `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &meta)
		if meta.Metadata.Namespace == pg.Namespace && meta.Metadata.Name == pg.Name {
			continue
		}
		kept = append(kept, raw)
	}
	raw, err := json.Marshal(pg)
	if err != nil {
		return nil, err
	}
	c.podGroups = append(kept, raw)
	var members []*v1.Pod
	for _, p := range c.pending {
		if p.Namespace == pg.Namespace && p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil && *p.Spec.SchedulingGroup.PodGroupName == pg.Name {
			members = append(members, p)
		}
	}
	w, err := newWorld(c, members)
	if err != nil {
		return nil, err
	}
	e, err := w.env(ctx, prof, true)
	if err != nil {
		return nil, err
	}
	return e.groupCycle(ctx, pg, members)
}

// queuedGroup is the QueuedPodGroupInfo the scheduling queue pops for pg: the members go in
// through QueuedPodGroupInfo.AddPod, so upstream's PodGroupMemberPodsOrderingFunc orders them
// (priority, highest first; then attempts, none here; then the time the queue took the pod,
// here its metadata.creationTimestamp; then name). Members being deleted are skipped, as
// skipPodGroupPodSchedule does.
func (e *env) queuedGroup(ctx context.Context, pg *schedulingv1beta1.PodGroup, members []*v1.Pod) (*framework.QueuedPodGroupInfo, []*framework.QueuedPodInfo, error) {
	pgi := &framework.PodGroupInfo{Namespace: pg.Namespace, Name: pg.Name, Type: fwk.PodGroupKeyType, PodGroup: pg}
	qpgi := &framework.QueuedPodGroupInfo{PodGroupInfo: pgi}
	for _, m := range members {
		if m.DeletionTimestamp != nil {
			continue
		}
		pi, err := framework.NewPodInfo(m)
		if err != nil {
			return nil, nil, err
		}
		// The queue signs a pod when it takes it (newQueuedPodInfo).
		qpgi.AddPod(&framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: m.CreationTimestamp.Time}, PodSignature: e.fw.SignPod(ctx, m)})
	}
	return qpgi, qpgi.QueuedPodInfos[fwk.PodGroupKey(pg.Namespace, pg.Name)], nil
}

// validateGroup is validatePodGroup's priority rule: every member, queued or scheduled, has
// the group's priority (else the scheduler fails the group before any cycle).
func (e *env) validateGroup(pg *schedulingv1beta1.PodGroup, queued []*framework.QueuedPodInfo) error {
	want := util.PodGroupPriority(pg)
	check := func(p *v1.Pod) error {
		if got := corev1helpers.PodPriority(p); got != want {
			return fmt.Errorf("pod group %s/%s: member %s has priority %d, the group %d (the scheduler rejects the group)", pg.Namespace, pg.Name, podKey(p), got, want)
		}
		return nil
	}
	for _, q := range queued {
		if err := check(q.Pod); err != nil {
			return err
		}
	}
	state, err := e.snapshot.PodGroupStates().Get(pg.Namespace, pg.Name)
	if err != nil {
		return nil
	}
	for _, p := range state.ScheduledPods() {
		if err := check(p); err != nil {
			return err
		}
	}
	return nil
}

// groupCycle is podGroupCycle for a single (non-composite) PodGroup without topology-aware
// placement: the cycle, then PodGroupPostFilter when it ends Unschedulable.
func (e *env) groupCycle(ctx context.Context, pg *schedulingv1beta1.PodGroup, members []*v1.Pod) (*GroupAnswer, error) {
	qpgi, queued, err := e.queuedGroup(ctx, pg, members)
	if err != nil {
		return nil, err
	}
	if len(queued) == 0 {
		a := newGroupAnswer("NO_CANDIDATE")
		a.Message = "pod group has no pending members"
		return a, nil
	}
	if err := e.validateGroup(pg, queued); err != nil {
		return nil, err
	}

	podGroupCycleState := framework.NewCycleState()
	results, status := e.runGroupCycle(ctx, podGroupCycleState, qpgi.PodGroupInfo, queued)
	if status.IsSuccess() {
		a := newGroupAnswer("FITS")
		for _, r := range results {
			if r.status.IsSuccess() && r.host != "" {
				a.Nominations = append(a.Nominations, Nomination{Pod: podRef(r.pod.Pod), NodeName: r.host})
			}
		}
		return a, nil
	}
	if status.Code() == fwk.Error {
		return nil, status.AsError()
	}
	if status.Code() != fwk.Unschedulable {
		a := newGroupAnswer("NO_CANDIDATE")
		a.Message = status.Message()
		return a, nil
	}

	pf, err := e.podGroupPostFilter(ctx, pg, qpgi.PodGroupInfo, queued, podGroupCycleState)
	if err != nil {
		return nil, err
	}
	res, pfStatus, rec, terminating := pf.result, pf.status, pf.recorded, pf.terminating
	switch {
	case pfStatus.IsSuccess():
	case pfStatus.Code() == fwk.Error:
		return nil, pfStatus.AsError()
	case strings.Contains(pfStatus.Message(), "not eligible"):
		a := newGroupAnswer("NOT_ELIGIBLE")
		a.Message = pfStatus.Message()
		return a, nil
	default:
		a := newGroupAnswer("NO_CANDIDATE")
		a.Message = pfStatus.Message()
		return a, nil
	}
	a := newGroupAnswer("PREEMPT")
	a.Message = pfStatus.Message()
	if c := rec.get(); c != nil {
		for _, p := range c.Victims().Pods {
			a.Victims = append(a.Victims, podRef(p))
		}
		a.PdbViolations = c.Victims().NumPDBViolations
		// What the executor's goroutine clears before its first deletion.
		prio := util.PodGroupPriority(pg)
		for _, pi := range e.fw.NominatedPodsForNode(c.Name()) {
			if corev1helpers.PodPriority(pi.GetPod()) < prio {
				a.NominatedPodsToClear = append(a.NominatedPodsToClear, podRef(pi.GetPod()))
			}
		}
	} else if !strings.Contains(pfStatus.Message(), "ongoing preemption") {
		// Every victim was already terminating: the executor skipped them all (and, in its
		// asynchronous form, cleared no nomination).
		byKey := map[string]*v1.Pod{}
		nodes, err := e.snapshot.NodeInfos().List()
		if err != nil {
			return nil, err
		}
		for _, ni := range nodes {
			for _, pi := range ni.GetPods() {
				byKey[podKey(pi.GetPod())] = pi.GetPod()
			}
		}
		for _, k := range terminating.keys() {
			p, ok := byKey[k]
			if !ok {
				return nil, fmt.Errorf("executor skipped victim %s, which the cluster does not hold", k)
			}
			a.Victims = append(a.Victims, podRef(p))
		}
		if want := fmt.Sprintf("preempting %d victims", len(a.Victims)); !strings.Contains(pfStatus.Message(), want) {
			return nil, fmt.Errorf("pod group preemption: %s, but the executor skipped %d terminating victims", pfStatus.Message(), len(a.Victims))
		}
		a.PdbViolations = pf.pdbViolations
	}
	a.setUnits(e.allModeGroupOf)
	if res != nil {
		for _, q := range queued {
			info, ok := res.NominatingInfos[keyOf(q.Pod)]
			if ok && info != nil && info.NominatedNodeName != "" {
				a.Nominations = append(a.Nominations, Nomination{Pod: podRef(q.Pod), NodeName: info.NominatedNodeName})
			}
		}
	}
	return a, nil
}

// postFiltered is one PodGroupPostFilter run: its result, what the executor was handed, and
// how long the framework call took.
type postFiltered struct {
	result      *fwk.PodGroupPostFilterResult
	status      *fwk.Status
	recorded    *victimRecorder
	terminating *skippedVictims
	// pdbViolations is what the executor counted into the scheduler's
	// PreemptionPDBViolations metric: the candidate's NumPDBViolations, seen even when no
	// victim reaches the hook.
	pdbViolations int64
	elapsed       time.Duration
}

// podGroupPostFilter is podGroupCycle's PodGroupPostFilter step: the framework's
// RunPodGroupPostFilterPlugins with a rerun of the group cycle as the PodGroupSchedulingFunc,
// then the wait for the executor's goroutine (SchedulerAsyncPreemption, default on).
func (e *env) podGroupPostFilter(ctx context.Context, pg *schedulingv1beta1.PodGroup, pgi *framework.PodGroupInfo, queued []*framework.QueuedPodInfo, podGroupCycleState *framework.CycleState) (*postFiltered, error) {
	// The executor's hook receives the candidate (all victims, in order) once per victim it
	// deletes; recording it instead of deleting keeps the fake API untouched.
	rec := &victimRecorder{}
	e.plugin.Executor.PreemptPod = func(_ context.Context, c preemption.Candidate, _ preemption.ExecutorPreemptor, _ *v1.Pod, _ string) (bool, error) {
		rec.record(c)
		return false, nil
	}
	rerun := func(ctx context.Context) (*fwk.PodGroupAssignments, *fwk.Status) {
		results, status := e.runGroupCycle(ctx, framework.NewCycleState(), pgi, queued)
		assignments := make([]fwk.ProposedAssignment, 0, len(results))
		for i := range results {
			if results[i].status.IsSuccess() && results[i].host != "" {
				assignments = append(assignments, &results[i])
			}
		}
		return &fwk.PodGroupAssignments{ProposedAssignments: assignments}, status
	}
	// A victim already terminating never reaches the hook; the executor logs it instead (V(2),
	// with the global logger, in the candidate's order), which is how such victims are seen.
	terminating := &skippedVictims{}
	klog.SetLoggerWithOptions(logr.New(terminating), klog.ContextualLogger(true))
	defer klog.ClearLogger()
	violations := metrics.PreemptionPDBViolations.WithLabelValues(string(fwk.PodGroupKeyType))
	violationsBefore, err := testutil.GetCounterMetricValue(violations)
	if err != nil {
		return nil, err
	}
	t := time.Now()
	res, status := e.fw.RunPodGroupPostFilterPlugins(ctx, podGroupCycleState, pgi, rerun)
	elapsed := time.Since(t)
	violationsAfter, err := testutil.GetCounterMetricValue(violations)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.plugin.Executor.IsPodGroupRunningPreemption(pg.UID) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod group preemption of %s/%s still running after 30s", pg.Namespace, pg.Name)
		}
		time.Sleep(time.Millisecond)
	}
	return &postFiltered{result: res, status: status, recorded: rec, terminating: terminating, pdbViolations: int64(violationsAfter - violationsBefore), elapsed: elapsed}, nil
}

// memberResult is one member's outcome in a group cycle; it is the fwk.ProposedAssignment the
// evaluator receives (algorithmResult's methods).
type memberResult struct {
	pod    *framework.QueuedPodInfo
	state  *framework.CycleState
	host   string
	status *fwk.Status
}

func (r *memberResult) GetPod() *v1.Pod               { return r.pod.Pod }
func (r *memberResult) GetPodInfo() fwk.PodInfo       { return r.pod }
func (r *memberResult) GetNodeName() string           { return r.host }
func (r *memberResult) GetCycleState() fwk.CycleState { return r.state }

// runGroupCycle is runRootSchedulingAlgorithm with podGroupSchedulingDefaultAlgorithm for a
// single PodGroup: PlacementFeasible (GangScheduling's minCount) before and after each member,
// the members in order, every assumed member reverted (last first) before it returns.
func (e *env) runGroupCycle(ctx context.Context, podGroupCycleState *framework.CycleState, pgi *framework.PodGroupInfo, queued []*framework.QueuedPodInfo) ([]memberResult, *fwk.Status) {
	var reverts []func()
	defer func() {
		for i := len(reverts) - 1; i >= 0; i-- {
			reverts[i]()
		}
	}()
	placementCycleState := framework.NewCycleState()
	placementCycleState.SetPodGroupSchedulingCycle(podGroupCycleState)
	unschedulable := fwk.NewStatus(fwk.Unschedulable, "pod group is unschedulable")

	pgState, err := e.snapshot.PodGroupStates().Get(pgi.Namespace, pgi.Name)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("failed to get podGroup state for podGroup %s/%s: %w", pgi.Namespace, pgi.Name, err))
	}
	progress := framework.PlacementProgress{Remaining: len(pgi.GetUnscheduledPods()), Scheduled: pgState.ScheduledPodsCount()}
	status := e.fw.RunPlacementFeasiblePlugins(ctx, placementCycleState, pgi, progress)
	if status.IsError() {
		return nil, fwk.AsStatus(fmt.Errorf("failed to evaluate placement feasibility: %w", status.AsError()))
	}
	if status.Code() == fwk.Unschedulable {
		return nil, fwk.NewStatus(fwk.Unschedulable, status.Reasons()...)
	}
	results := make([]memberResult, 0, len(queued))
	anyScheduled := false
	for _, q := range queued {
		r, revert := e.scheduleMember(ctx, placementCycleState, q)
		results = append(results, r)
		if revert != nil {
			reverts = append(reverts, revert)
		}
		if !r.status.IsSuccess() && !r.status.IsRejected() {
			return results, fwk.AsStatus(fmt.Errorf("failed to schedule other pod from a pod group: %w", r.status.AsError()))
		}
		progress.Remaining--
		if r.status.IsSuccess() {
			progress.Scheduled++
		}
		st := e.fw.RunPlacementFeasiblePlugins(ctx, placementCycleState, pgi, progress)
		if st.IsError() {
			return results, fwk.AsStatus(fmt.Errorf("failed to evaluate placement feasibility: %w", st.AsError()))
		}
		status = st
		if st.Code() == fwk.Unschedulable {
			break
		}
		anyScheduled = anyScheduled || r.status.IsSuccess()
	}
	if status.IsWait() {
		status = fwk.NewStatus(fwk.Unschedulable, status.Reasons()...)
	}
	if status.IsSuccess() && !anyScheduled {
		// The framework needs at least one scheduled pod for a success.
		return results, unschedulable
	}
	return results, status
}

// scheduleMember is podGroupPodSchedulingAlgorithm: a cycle state marked as the group's,
// schedulePod (fitNodes, then selectHost with the tie pin), then assumeAndReserve in the
// snapshot (Snapshot.AssumePod, the nominator dropping the pod, Reserve). The returned revert
// is unreserveAndForget's group branch.
func (e *env) scheduleMember(ctx context.Context, placementCycleState *framework.CycleState, q *framework.QueuedPodInfo) (memberResult, func()) {
	pod := q.Pod
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	state.SetPodGroupSchedulingCycle(placementCycleState.GetPodGroupSchedulingCycle())
	state.SetPlacementCycleState(placementCycleState)
	r := memberResult{pod: q, state: state}

	allNodes, err := e.snapshot.NodeInfos().List()
	if err != nil {
		r.status = fwk.AsStatus(err)
		return r, nil
	}
	if len(allNodes) == 0 {
		r.status = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no nodes available to schedule pods")
		return r, nil
	}
	// OpportunisticBatching (beta, on by default): a member with the signature of the member
	// placed before it in this cycle is offered that member's next-best node first (the
	// framework's GetNodeHint), and every placement is stored for the next
	// (StoreScheduleResults). Every cycle of one answer shares one cycle count, as the first
	// group cycle and PodGroupPostFilter's reruns of it share the scheduler's.
	var hinter func(fwk.CycleState) string
	if batching() {
		hinter = func(state fwk.CycleState) string {
			return e.fw.GetNodeHint(ctx, pod, q.PodSignature, state, groupCycleCount)
		}
	}
	feasible, _, hint, err := e.fitNodes(ctx, state, pod, allNodes, numFeasibleNodesToFind(len(allNodes)), hinter)
	if err != nil {
		r.status = fwk.AsStatus(err)
		return r, nil
	}
	if len(feasible) == 0 {
		r.status = fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("0/%d nodes are available", len(allNodes)))
		return r, nil
	}
	var host string
	if len(feasible) == 1 {
		host = feasible[0].Node().Name
		if batching() {
			e.fw.StoreScheduleResults(ctx, q.PodSignature, hint, host, nil, groupCycleCount)
		}
	} else {
		scores, err := e.scoreNodes(ctx, state, pod, feasible)
		if err != nil {
			r.status = fwk.AsStatus(err)
			return r, nil
		}
		// schedulePod's pick: the top of the framework's score heap (with the tie pin, the
		// highest total; among equal totals, the lowest name).
		sorted := framework.NewSortedScoredNodes(scores)
		host = sorted.Pop().Name
		if batching() {
			e.fw.StoreScheduleResults(ctx, q.PodSignature, hint, host, sorted, groupCycleCount)
		}
	}

	logger := klog.FromContext(ctx)
	assumed := q.DeepCopy()
	assumed.Pod.Spec.NodeName = host
	if err := e.snapshot.AssumePod(assumed.PodInfo); err != nil {
		r.status = fwk.AsStatus(err)
		return r, nil
	}
	e.queue.DeleteNominatedPodIfExists(assumed.Pod)
	forget := func() {
		e.fw.RunReservePluginsUnreserve(ctx, state, assumed.Pod, host)
		if err := e.snapshot.ForgetPod(logger, assumed.Pod); err != nil {
			logger.Error(err, "forget pod")
		}
		if nnn := assumed.Pod.Status.NominatedNodeName; nnn != "" {
			e.queue.AddNominatedPod(logger, assumed.PodInfo, &fwk.NominatingInfo{NominatedNodeName: nnn, NominatingMode: fwk.ModeOverride})
		}
	}
	if st := e.fw.RunReservePluginsReserve(ctx, state, assumed.Pod, host); !st.IsSuccess() {
		forget()
		r.status = st
		return r, nil
	}
	r.host = host
	return r, forget
}

type victimRecorder struct {
	mu        sync.Mutex
	candidate preemption.Candidate
}

func (v *victimRecorder) record(c preemption.Candidate) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.candidate = c
}

func (v *victimRecorder) get() preemption.Candidate {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.candidate
}

func podRef(p *v1.Pod) PodRef {
	return PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
}

func keyOf(p *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// skippedVictims is a logr sink that keeps, in order, the victims the executor logs as
// "already being deleted" and drops everything else.
type skippedVictims struct {
	mu      sync.Mutex
	victims []string
}

func (s *skippedVictims) Init(logr.RuntimeInfo)          {}
func (s *skippedVictims) Enabled(level int) bool         { return level <= 2 }
func (s *skippedVictims) Error(error, string, ...any)    {}
func (s *skippedVictims) WithValues(...any) logr.LogSink { return s }
func (s *skippedVictims) WithName(string) logr.LogSink   { return s }

func (s *skippedVictims) Info(_ int, msg string, kv ...any) {
	if msg != "Victim Pod is already being deleted, skipping the API call for it" {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "victim" {
			if ref, ok := kv[i+1].(klog.ObjectRef); ok {
				s.mu.Lock()
				s.victims = append(s.victims, ref.Namespace+"/"+ref.Name)
				s.mu.Unlock()
			}
		}
	}
}

func (s *skippedVictims) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.victims...)
}

// allModeGroupOf is "namespace/group" when the victim belongs to a PodGroup in disruption
// mode all (one unit across nodes), else "".
func (e *env) allModeGroupOf(v PodRef) string {
	nodes, err := e.snapshot.NodeInfos().List()
	if err != nil {
		return ""
	}
	for _, ni := range nodes {
		for _, pi := range ni.GetPods() {
			p := pi.GetPod()
			if p.Namespace != v.Namespace || p.Name != v.Name {
				continue
			}
			if p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil {
				return ""
			}
			pg, err := e.snapshot.PodGroups().Get(p.Namespace, *p.Spec.SchedulingGroup.PodGroupName)
			if err != nil || pg == nil || pg.Spec.DisruptionMode == nil || pg.Spec.DisruptionMode.All == nil {
				return ""
			}
			return p.Namespace + "/" + pg.Name
		}
	}
	return ""
}
