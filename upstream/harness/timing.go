package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// timeConfig is one way DefaultPreemption is configured for timing.
type timeConfig struct {
	name string
	// percentage is DefaultPreemptionArgs.MinCandidateNodesPercentage; the other
	// arguments keep their defaults (MinCandidateNodesAbsolute = 100).
	percentage int32
	// pinned pins the candidate offset to 0 (exhaustive runs need no random start).
	pinned bool
}

var timeConfigs = []timeConfig{
	{name: "exhaustive", percentage: 100, pinned: true},
	{name: "sampled", percentage: 10, pinned: false},
}

type latency struct {
	Runs  int     `json:"runs"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Candidates is the dry run's candidate count of the last run.
	Candidates int `json:"candidates"`
	// CutOff counts runs stopped at --max-seconds: the figures are then lower bounds.
	CutOff int `json:"cut_off"`
}

type kindTiming struct {
	Kind    string `json:"kind"`
	Outcome string `json:"outcome"`
	// Filter is the cycle's PreFilter and Filter over every node before PostFilter, run on
	// one goroutine (kube-scheduler spreads Filter over 16).
	Filter  latency            `json:"filter"`
	Configs map[string]latency `json:"postfilter"`
}

type timeReport struct {
	Nodes           int     `json:"nodes"`
	Pods            int     `json:"pods"`
	DecodeSeconds   float64 `json:"decode_s"`
	SnapshotSeconds float64 `json:"snapshot_s"`
	// HeapBytes is the live Go heap once built: the informer stores' objects, the snapshot
	// and the frameworks, what kube-scheduler holds for the cluster.
	HeapBytes uint64       `json:"heap_bytes"`
	Kinds     []kindTiming `json:"kinds"`
}

// timeMode times DefaultPreemption as kube-scheduler runs it in PostFilter (candidate
// search and pick), per preemptor file, in each timeConfig. The snapshot is built once;
// each run is a scheduling cycle's filtering (timed apart) then PostFilter. Returns the
// exit code; the last stdout line is the report as JSON.
func timeMode(ctx context.Context, args []string) int {
	cmd := flag.NewFlagSet("time", flag.ExitOnError)
	clusterPath := cmd.String("cluster", "", "v1 List of Nodes, Pods and PodDisruptionBudgets")
	preemptorPaths := cmd.String("preemptors", "", "comma-separated v1 Lists of preemptor Pods, one per kind (kind: the file name without preemptors- and .json)")
	groupPaths := cmd.String("groups", "", "comma-separated v1 Lists of PodGroup preemptors, one per kind (kind: the file name without groups- and .json); their pending members are in the cluster List; needs --feature-gates GenericWorkload=true")
	runs := cmd.Int("runs", 10, "timed PostFilter runs per kind and configuration (preemptors taken in turn)")
	maxSeconds := cmd.Float64("max-seconds", 60, "stop a kind's configuration after this long (at least one run), and stop a run there (counted in cut_off)")
	_ = cmd.Parse(args)
	if *clusterPath == "" || (*preemptorPaths == "" && *groupPaths == "") || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: harness time --cluster F (--preemptors F[,F...] | --groups F[,F...]) [--runs N] [--max-seconds S]")
		return 2
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	t := time.Now()
	progress("reading %s", *clusterPath)
	raw, err := os.ReadFile(*clusterPath)
	if err != nil {
		fatal(err)
	}
	c, err := decodeCluster(raw)
	if err != nil {
		fatal(err)
	}
	kinds := map[string][]*v1.Pod{}
	var order []string
	var all []*v1.Pod
	for _, path := range strings.Split(*preemptorPaths, ",") {
		if path == "" {
			continue
		}
		pods, err := readPods(path)
		if err != nil {
			fatal(err)
		}
		kind := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "preemptors-"), ".json")
		kinds[kind] = pods
		order = append(order, kind)
		all = append(all, pods...)
	}
	report := timeReport{Nodes: len(c.nodes), Pods: len(c.bound) + len(c.nominated), DecodeSeconds: time.Since(t).Seconds()}
	progress("decoded %d nodes, %d pods in %.1f s", report.Nodes, report.Pods, report.DecodeSeconds)
	if *groupPaths != "" {
		if err := timeGroups(ctx, c, strings.Split(*groupPaths, ","), *runs, *maxSeconds, &report); err != nil {
			fatal(err)
		}
		if len(order) == 0 {
			out, err := json.Marshal(report)
			if err != nil {
				fatal(err)
			}
			fmt.Println(string(out))
			return 0
		}
	}

	t = time.Now()
	w, err := newWorld(c, all)
	if err != nil {
		fatal(err)
	}
	report.SnapshotSeconds = time.Since(t).Seconds()
	progress("informer stores and snapshot built in %.1f s", report.SnapshotSeconds)
	envs := map[string]*env{}
	for _, tc := range timeConfigs {
		prof, err := profile(tc.percentage)
		if err != nil {
			fatal(err)
		}
		if envs[tc.name], err = w.env(ctx, prof, tc.pinned); err != nil {
			fatal(err)
		}
	}
	// What decoding left behind is not the scheduler's: collect it before timing.
	runtime.GC()
	debug.FreeOSMemory()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	report.HeapBytes = mem.HeapAlloc
	progress("live heap %.0f MB, %.0f bytes per pod", float64(mem.HeapAlloc)/1e6, float64(mem.HeapAlloc)/float64(max(report.Pods, 1)))

	for _, kind := range order {
		pods := kinds[kind]
		if len(pods) == 0 {
			fatal(fmt.Errorf("no preemptors of kind %s", kind))
		}
		kt := kindTiming{Kind: kind, Configs: map[string]latency{}}
		limit := time.Duration(*maxSeconds * float64(time.Second))
		// One untimed cycle first (sampled, the cheaper), so no run pays first-use costs.
		if state, statuses, early, err := envs["sampled"].filter(ctx, pods[0]); err != nil {
			fatal(err)
		} else if early == nil {
			if _, _, _, err := timedSearch(ctx, envs["sampled"], state, pods[0], statuses, limit); err != nil {
				fatal(err)
			}
		}
		var filterTimes []time.Duration
		for _, tc := range timeConfigs {
			e := envs[tc.name]
			var times []time.Duration
			candidates, cutOff := 0, 0
			started := time.Now()
			for i := 0; i < *runs && (i == 0 || time.Since(started).Seconds() < *maxSeconds); i++ {
				pod := pods[i%len(pods)]
				ft := time.Now()
				state, statuses, early, err := e.filter(ctx, pod)
				filterTimes = append(filterTimes, time.Since(ft))
				if err != nil {
					fatal(err)
				}
				if early != nil {
					kt.Outcome = early.Outcome
					break
				}
				found, a, elapsed, err := timedSearch(ctx, e, state, pod, statuses, limit)
				if err != nil {
					fatal(err)
				}
				times = append(times, elapsed)
				note := ""
				switch {
				case found == nil && a == nil:
					cutOff++
					note = ", cut off"
				case a != nil:
					kt.Outcome = a.Outcome
				default:
					kt.Outcome = "PREEMPT"
					candidates = len(found.candidates)
				}
				progress("%s %s run %d: %.2f ms (%s, %d candidates%s)", kind, tc.name, i+1, ms(elapsed), kt.Outcome, candidates, note)
			}
			l := summarizeTimes(times)
			l.Candidates = candidates
			l.CutOff = cutOff
			kt.Configs[tc.name] = l
		}
		kt.Filter = summarizeTimes(filterTimes)
		report.Kinds = append(report.Kinds, kt)
		for _, tc := range timeConfigs {
			l := kt.Configs[tc.name]
			fmt.Printf("%s, %s: PostFilter p50 %.1f ms, p99 %.1f ms over %d runs (%s)\n", kind, tc.name, l.P50ms, l.P99ms, l.Runs, kt.Outcome)
		}
	}
	out, err := json.Marshal(report)
	if err != nil {
		fatal(err)
	}
	fmt.Println(string(out))
	return 0
}

// timedSearch times e.search, stopping it after limit: the dry run stops visiting nodes once
// its context ends. A run stopped so returns neither a search nor an answer.
func timedSearch(ctx context.Context, e *env, state fwk.CycleState, pod *v1.Pod, statuses *framework.NodeToStatus, limit time.Duration) (*searched, *Answer, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t := time.Now()
	found, a, err := e.search(ctx, state, pod, statuses)
	elapsed := time.Since(t)
	if ctx.Err() != nil {
		return nil, nil, elapsed, nil
	}
	return found, a, elapsed, err
}

func readPods(path string) ([]*v1.Pod, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []*v1.Pod `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list.Items, nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "harness time: "+format+"\n", args...)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summarizeTimes gives nearest-rank percentiles.
func summarizeTimes(times []time.Duration) latency {
	if len(times) == 0 {
		return latency{}
	}
	sorted := append([]time.Duration(nil), times...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := func(q float64) time.Duration {
		return sorted[int(math.Ceil(q*float64(len(sorted))))-1]
	}
	return latency{Runs: len(sorted), P50ms: ms(rank(0.5)), P99ms: ms(rank(0.99)), MaxMs: ms(sorted[len(sorted)-1])}
}
