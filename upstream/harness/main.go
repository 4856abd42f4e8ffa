// Command harness answers preemption scenarios as kube-scheduler's DefaultPreemption does,
// through the real scheduler framework of the k8s.io/kubernetes release it is built against
// (v1.35.4, v1.36.3 or v1.37.2: see ../build-harness), for differential testing of preemptd.
//
//	harness answer --cluster LIST.json --pod POD.json   one answer as JSON
//	harness serve                                       JSON lines: {cluster, preemptor} in, answer out
//	harness batch IN_DIR OUT_DIR                        every IN_DIR/*.json scenario, answers to OUT_DIR
//	harness check FILE_OR_DIR...                        compare with the scenarios' `expect`
//	harness time --cluster LIST.json --preemptors LIST.json[,...] [--runs N] [--max-seconds S]
//	                                                    time PostFilter, exhaustive and sampled (timing.go)
//	harness version                                     the k8s.io/kubernetes release, e.g. v1.37.2
//
// Before the command, `--feature-gates NAME=BOOL[,...]` sets kube-scheduler's feature gates (as
// its own flag does) before any profile or framework is built; GenericWorkload=true needs the
// v1.37 build and makes the harness answer PodGroup preemptors through PodGroupPostFilter
// (group_v1_37.go).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

func main() {
	klog.LogToStderr(true)
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "0")
	_ = fs.Set("stderrthreshold", "FATAL")

	if len(os.Args) >= 3 && os.Args[1] == "--feature-gates" {
		if err := setFeatureGates(os.Args[2]); err != nil {
			fatal(err)
		}
		os.Args = append(os.Args[:1], os.Args[3:]...)
	}
	if len(os.Args) < 2 {
		usage()
	}
	if os.Args[1] == "version" {
		fmt.Println(kubernetesVersion())
		return
	}
	// The queue and framework record into the scheduler's metrics, which must exist.
	metrics.Register()
	ctx := context.Background()
	prof, err := profile(100)
	if err != nil {
		fatal(err)
	}
	switch os.Args[1] {
	case "answer":
		cmd := flag.NewFlagSet("answer", flag.ExitOnError)
		clusterPath := cmd.String("cluster", "", "v1 List of Nodes, Pods and PodDisruptionBudgets")
		podPath := cmd.String("pod", "", "the preemptor Pod, or PodGroup (with --feature-gates GenericWorkload=true)")
		_ = cmd.Parse(os.Args[2:])
		cluster, err := os.ReadFile(*clusterPath)
		if err != nil {
			fatal(err)
		}
		pod, err := os.ReadFile(*podPath)
		if err != nil {
			fatal(err)
		}
		a, err := decideAny(ctx, &Scenario{Cluster: cluster, Preemptor: pod}, prof)
		if err != nil {
			fatal(err)
		}
		writeJSON(os.Stdout, a)
	case "serve":
		serve(ctx, prof)
	case "batch":
		if len(os.Args) != 4 {
			usage()
		}
		batch(ctx, prof, os.Args[2], os.Args[3])
	case "check":
		if len(os.Args) < 3 {
			usage()
		}
		os.Exit(check(ctx, prof, os.Args[2:]))
	case "time":
		os.Exit(timeMode(ctx, os.Args[2:]))
	default:
		usage()
	}
}

// kubernetesVersion is the k8s.io/kubernetes module the binary was built with.
func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: harness [--feature-gates G=B,...] answer --cluster F --pod F | serve | batch IN OUT | check PATH... | time --cluster F --preemptors F[,F...] | version")
	os.Exit(2)
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "harness: %v\n", err)
	os.Exit(1)
}

func writeJSON(f *os.File, v any) {
	enc := json.NewEncoder(f)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		fatal(err)
	}
}

// serve answers one scenario per input line, one JSON object per output line; a scenario it
// cannot answer gets {"error": "..."} so the peer can tell it from a decision.
func serve(ctx context.Context, prof *config.KubeSchedulerProfile) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var sc Scenario
			var reply any
			if jerr := json.Unmarshal(line, &sc); jerr != nil {
				reply = map[string]string{"error": jerr.Error()}
			} else if a, derr := decideAny(ctx, &sc, prof); derr != nil {
				reply = map[string]string{"error": derr.Error()}
			} else {
				reply = a
			}
			if eerr := enc.Encode(reply); eerr != nil {
				fatal(eerr)
			}
			if ferr := out.Flush(); ferr != nil {
				fatal(ferr)
			}
		}
		if err != nil {
			return
		}
	}
}

func scenarioFiles(paths []string) []string {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			fatal(err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			fatal(err)
		}
		files = append(files, matches...)
	}
	sort.Strings(files)
	return files
}

func readScenario(path string) (*Scenario, map[string]json.RawMessage) {
	raw, err := os.ReadFile(path)
	if err != nil {
		fatal(err)
	}
	var sc Scenario
	if err := json.Unmarshal(raw, &sc); err != nil {
		fatal(fmt.Errorf("%s: %w", path, err))
	}
	var whole map[string]json.RawMessage
	if err := json.Unmarshal(raw, &whole); err != nil {
		fatal(fmt.Errorf("%s: %w", path, err))
	}
	return &sc, whole
}

func batch(ctx context.Context, prof *config.KubeSchedulerProfile, inDir, outDir string) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		fatal(err)
	}
	for _, path := range scenarioFiles([]string{inDir}) {
		sc, _ := readScenario(path)
		var reply any
		if a, err := decideAny(ctx, sc, prof); err != nil {
			reply = map[string]string{"error": err.Error()}
		} else {
			reply = a
		}
		f, err := os.Create(filepath.Join(outDir, filepath.Base(path)))
		if err != nil {
			fatal(err)
		}
		writeJSON(f, reply)
		if err := f.Close(); err != nil {
			fatal(err)
		}
	}
}

// check compares the harness with the scenarios' recorded upstream answers: outcome, the set of
// nodes upstream may nominate, and for each of them the victims and nominations to clear
// (feasible nodes for FITS). Returns the exit code.
func check(ctx context.Context, prof *config.KubeSchedulerProfile, paths []string) int {
	files := scenarioFiles(paths)
	failed := 0
	for _, path := range files {
		sc, whole := readScenario(path)
		if isGroupScenario(sc) {
			var expect GroupAnswer
			if err := json.Unmarshal(whole["expect"], &expect); err != nil {
				fatal(fmt.Errorf("%s: expect: %w", path, err))
			}
			got, err := decideGroup(ctx, sc, prof)
			if err == nil {
				if diff := compareGroupAnswers(&expect, got); diff != "" {
					err = fmt.Errorf("%s", diff)
				}
			}
			if err != nil {
				fmt.Printf("FAIL %s: %v\n", path, err)
				failed++
			}
			continue
		}
		var expect Answer
		if err := json.Unmarshal(whole["expect"], &expect); err != nil {
			fatal(fmt.Errorf("%s: expect: %w", path, err))
		}
		got, err := decide(ctx, sc, prof)
		if err != nil {
			fmt.Printf("FAIL %s: %v\n", path, err)
			failed++
			continue
		}
		if diff := compareAnswers(&expect, got); diff != "" {
			fmt.Printf("FAIL %s: %s\n", path, diff)
			failed++
		}
	}
	fmt.Printf("%d scenarios, %d differ from their recorded answer\n", len(files), failed)
	if failed > 0 {
		return 1
	}
	return 0
}

func setOf(l []string) string {
	c := append([]string(nil), l...)
	sort.Strings(c)
	return strings.Join(c, ",")
}

func compareAnswers(expect, got *Answer) string {
	if expect.Outcome != got.Outcome {
		return fmt.Sprintf("outcome %s, recorded %s (%s)", got.Outcome, expect.Outcome, got.Message)
	}
	switch got.Outcome {
	case "PREEMPT":
		if setOf(expect.NominatedNodeNameAnyOf) != setOf(got.NominatedNodeNameAnyOf) {
			return fmt.Sprintf("tied nodes [%s], recorded [%s]", setOf(got.NominatedNodeNameAnyOf), setOf(expect.NominatedNodeNameAnyOf))
		}
		for _, n := range got.NominatedNodeNameAnyOf {
			if setOf(expect.VictimsByNode[n]) != setOf(got.VictimsByNode[n]) {
				return fmt.Sprintf("victims on %s [%s], recorded [%s]", n, setOf(got.VictimsByNode[n]), setOf(expect.VictimsByNode[n]))
			}
			if setOf(expect.NominatedPodsToClearByNode[n]) != setOf(got.NominatedPodsToClearByNode[n]) {
				return fmt.Sprintf("nominations to clear on %s [%s], recorded [%s]", n, setOf(got.NominatedPodsToClearByNode[n]), setOf(expect.NominatedPodsToClearByNode[n]))
			}
		}
	case "FITS":
		if expect.FeasibleNodes != nil && setOf(expect.FeasibleNodes) != setOf(got.FeasibleNodes) {
			return fmt.Sprintf("feasible nodes [%s], recorded [%s]", setOf(got.FeasibleNodes), setOf(expect.FeasibleNodes))
		}
		if expect.PlacementNode != "" && expect.PlacementNode != got.PlacementNode {
			return fmt.Sprintf("placement %s, recorded %s", got.PlacementNode, expect.PlacementNode)
		}
	}
	return ""
}
