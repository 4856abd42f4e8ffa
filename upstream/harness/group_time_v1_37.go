//go:build k8s_1_37

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// timeGroups times PodGroupPostFilter (GenericWorkload on) for the PodGroup preemptors of each
// file in paths (a v1 List of PodGroups, kind = the file name without groups- and .json; their
// pending members are in the cluster List, as in a scenario). Each run is the group cycle
// (reported as `filter`) and, when it leaves the group Unschedulable, the framework's
// RunPodGroupPostFilterPlugins (reported under postfilter.podgroup), the preemptors taken in
// turn. Nothing is deleted: the executor's hook records the victims.
func timeGroups(ctx context.Context, c *cluster, paths []string, runs int, maxSeconds float64, report *timeReport) error {
	if !genericWorkload() {
		return fmt.Errorf("--groups needs --feature-gates GenericWorkload=true")
	}
	kinds := map[string][]*schedulingv1beta1.PodGroup{}
	var order []string
	preemptors := map[string]bool{}
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var list struct {
			Items []*schedulingv1beta1.PodGroup `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		kind := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "groups-"), ".json")
		if len(list.Items) == 0 {
			return fmt.Errorf("%s: no PodGroups", path)
		}
		for _, pg := range list.Items {
			if pg.Namespace == "" {
				pg.Namespace = "default"
			}
			preemptors[pg.Namespace+"/"+pg.Name] = true
			raw, err := json.Marshal(pg)
			if err != nil {
				return err
			}
			c.podGroups = append(c.podGroups, raw)
		}
		kinds[kind] = list.Items
		order = append(order, kind)
	}
	membersOf := map[string][]*v1.Pod{}
	var all []*v1.Pod
	for _, p := range c.pending {
		if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil && preemptors[p.Namespace+"/"+*g.PodGroupName] {
			key := p.Namespace + "/" + *g.PodGroupName
			membersOf[key] = append(membersOf[key], p)
			all = append(all, p)
		}
	}
	t := time.Now()
	w, err := newWorld(c, all)
	if err != nil {
		return err
	}
	prof, err := profile(100)
	if err != nil {
		return err
	}
	e, err := w.env(ctx, prof, true)
	if err != nil {
		return err
	}
	report.SnapshotSeconds += time.Since(t).Seconds()
	progress("group preemptors: %d kinds, %d pending members; snapshot in %.1f s", len(order), len(all), time.Since(t).Seconds())

	for _, kind := range order {
		groups := kinds[kind]
		kt := kindTiming{Kind: kind, Configs: map[string]latency{}}
		var cycles, postFilters []time.Duration
		candidates := 0
		started := time.Now()
		// One untimed run first, so no run pays first-use costs.
		for i := -1; i < runs && (i <= 0 || time.Since(started).Seconds() < maxSeconds); i++ {
			pg := groups[max(i, 0)%len(groups)]
			qpgi, queued, err := e.queuedGroup(ctx, pg, membersOf[pg.Namespace+"/"+pg.Name])
			if err != nil {
				return err
			}
			if len(queued) == 0 {
				return fmt.Errorf("pod group %s/%s has no pending members in the cluster", pg.Namespace, pg.Name)
			}
			podGroupCycleState := framework.NewCycleState()
			ct := time.Now()
			_, status := e.runGroupCycle(ctx, podGroupCycleState, qpgi.PodGroupInfo, queued)
			cycle := time.Since(ct)
			if status.IsSuccess() {
				kt.Outcome = "FITS"
				break
			}
			if status.Code() != fwk.Unschedulable {
				kt.Outcome = "NO_CANDIDATE"
				break
			}
			pf, err := e.podGroupPostFilter(ctx, pg, qpgi.PodGroupInfo, queued, podGroupCycleState)
			if err != nil {
				return err
			}
			switch {
			case pf.status.IsSuccess():
				kt.Outcome = "PREEMPT"
				if c := pf.recorded.get(); c != nil {
					candidates = len(c.Victims().Pods)
				}
			case pf.status.Code() == fwk.Error:
				return pf.status.AsError()
			default:
				kt.Outcome = "NO_CANDIDATE"
			}
			if i < 0 {
				continue
			}
			cycles = append(cycles, cycle)
			postFilters = append(postFilters, pf.elapsed)
			progress("gang %s run %d: group cycle %.2f ms, PodGroupPostFilter %.2f ms (%s, %d victims)", kind, i+1, ms(cycle), ms(pf.elapsed), kt.Outcome, candidates)
		}
		kt.Filter = summarizeTimes(cycles)
		l := summarizeTimes(postFilters)
		// For a group, candidates counts the victims of the last run.
		l.Candidates = candidates
		kt.Configs["podgroup"] = l
		report.Kinds = append(report.Kinds, kt)
		fmt.Printf("gang %s: PodGroupPostFilter p50 %.1f ms, p99 %.1f ms over %d runs (%s)\n", kind, l.P50ms, l.P99ms, l.Runs, kt.Outcome)
	}
	return nil
}
