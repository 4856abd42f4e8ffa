package preemptd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	preemptd "github.com/preemptd/preemptd/clients/go"
	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

// nominatedPods makes a node and n pending pods nominated to it: each pod is one
// NOMINATED event in the nominations log.
func nominatedPods(prefix string, n int) []*pb.SyncRequest {
	items := []*pb.SyncRequest{preemptd.NodeItem(&pb.Node{
		Name: "node-w", Allocatable: map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"},
	})}
	priority := int32(10)
	for i := range n {
		items = append(items, preemptd.PodItem(&pb.Pod{
			Namespace: "watch", Name: fmt.Sprintf("%s-%05d", prefix, i), Uid: fmt.Sprintf("%s-uid-%05d", prefix, i),
			Priority: &priority, NominatedNodeName: "node-w", Phase: "Pending",
			Containers: []*pb.Container{{Name: "c", Requests: map[string]string{"cpu": "1"}}},
		}))
	}
	return items
}

// recorder collects a watch's events and relists.
type recorder struct {
	mu        sync.Mutex
	revisions []uint64
	events    []*pb.WatchNominationsResponse
	relists   []*pb.ListNominationsResponse
	resumes   []error
	changed   chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) handler(gate <-chan struct{}) preemptd.WatchHandler {
	return preemptd.WatchHandler{
		Event: func(e *pb.WatchNominationsResponse) error {
			if gate != nil {
				<-gate
			}
			r.mu.Lock()
			r.revisions = append(r.revisions, e.GetRevision())
			r.events = append(r.events, e)
			r.mu.Unlock()
			r.notify()
			return nil
		},
		Relist: func(l *pb.ListNominationsResponse) error {
			r.mu.Lock()
			r.relists = append(r.relists, l)
			r.mu.Unlock()
			r.notify()
			return nil
		},
		Resumed: func(err error, _ uint64) {
			r.mu.Lock()
			r.resumes = append(r.resumes, err)
			r.mu.Unlock()
		},
	}
}

// waitFor polls cond (under the recorder's lock) until it holds or 30s pass.
func (r *recorder) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// runWatch runs WatchNominations until the test ends; its result must be the
// cancellation.
func runWatch(t *testing.T, client *preemptd.Client, after uint64, h preemptd.WatchHandler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- client.WatchNominations(ctx, after, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("watch ended with %v, want context.Canceled", err)
		}
	})
}

// A watcher that stalls is cut off (RESOURCE_EXHAUSTED with --subscriber-buffer 1) and
// resumes from the last revision it received: it sees every revision once, in order.
func TestWatchResumesAfterCutOff(t *testing.T) {
	srv := startServer(t, "--subscriber-buffer", "1")
	// Fixed HTTP/2 windows (no BDP growth) so a stalled reader backs up into the
	// server's per-watcher queue.
	client, err := preemptd.Dial(srv.addr, preemptd.Options{DialOptions: []grpc.DialOption{
		grpc.WithInitialWindowSize(64 << 10), grpc.WithInitialConnWindowSize(64 << 10),
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the watches, which are stopped by cleanups registered later.
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()

	rec := newRecorder()
	gate := make(chan struct{})
	runWatch(t, client, 0, rec.handler(gate))
	// The watch from 0 holds the stream open; let the handler block on the first event.
	time.Sleep(200 * time.Millisecond)
	const pods = 3000
	report, err := client.Sync(ctx, nominatedPods("cut", pods))
	if err != nil {
		t.Fatal(err)
	}
	if report.GetRejected() != 0 {
		t.Fatalf("rejected: %v", report.GetRejections())
	}
	final := report.GetNominationsRevision()
	if final < pods {
		t.Fatalf("nominations revision %d after %d nominated pods", final, pods)
	}
	close(gate)
	rec.waitFor(t, fmt.Sprintf("revision %d", final), func() bool {
		return len(rec.revisions) > 0 && rec.revisions[len(rec.revisions)-1] >= final
	})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	cutOff := 0
	for _, err := range rec.resumes {
		if status.Code(err) == codes.ResourceExhausted {
			cutOff++
		}
	}
	if cutOff == 0 {
		t.Fatalf("the watcher was never cut off (resumes: %v)", rec.resumes)
	}
	if len(rec.relists) != 0 {
		t.Fatalf("resumed by relisting, want resuming from the history: %d relists", len(rec.relists))
	}
	first := rec.revisions[0]
	for i, rev := range rec.revisions {
		if rev != first+uint64(i) {
			t.Fatalf("event %d has revision %d, want %d (missed or repeated)", i, rev, first+uint64(i))
		}
	}
	if got := rec.revisions[len(rec.revisions)-1]; got != final {
		t.Fatalf("last revision %d, want %d", got, final)
	}
	for _, e := range rec.events {
		if e.GetType() != pb.NominationEventType_NOMINATION_EVENT_TYPE_NOMINATED || e.GetNode() != "node-w" {
			t.Fatalf("unexpected event %v", e)
		}
	}
	t.Logf("%d events, cut off %d times", len(rec.revisions), cutOff)
}

// Resuming from a revision the history no longer holds (--history-capacity 2) is
// OUT_OF_RANGE: the watch re-lists and continues from the list's revision.
func TestWatchRelistsOnOutOfRange(t *testing.T) {
	srv := startServer(t, "--history-capacity", "2")
	client, err := preemptd.Dial(srv.addr, preemptd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the watches, which are stopped by cleanups registered later.
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	const pods = 10
	report, err := client.Sync(ctx, nominatedPods("oor", pods))
	if err != nil {
		t.Fatal(err)
	}
	listRevision := report.GetNominationsRevision()

	rec := newRecorder()
	runWatch(t, client, 1, rec.handler(nil))
	rec.waitFor(t, "a relist", func() bool { return len(rec.relists) > 0 })
	rec.mu.Lock()
	list := rec.relists[0]
	if list.GetRevision() != listRevision || len(list.GetNominations()) != pods {
		t.Errorf("relist at revision %d with %d nominations, want %d with %d", list.GetRevision(), len(list.GetNominations()), listRevision, pods)
	}
	if len(rec.events) != 0 {
		t.Errorf("events before the relist: %v", rec.events)
	}
	rec.mu.Unlock()

	// The watch goes on from the list's revision: the next change is the next revision.
	if _, err := client.DeletePod(ctx, "watch", "oor-00000"); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "the event after the relist", func() bool { return len(rec.events) > 0 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	e := rec.events[0]
	if e.GetRevision() != listRevision+1 || e.GetType() != pb.NominationEventType_NOMINATION_EVENT_TYPE_CLEARED || e.GetPod().GetName() != "oor-00000" {
		t.Errorf("first event after relist %v, want CLEARED watch/oor-00000 at revision %d", e, listRevision+1)
	}
}

// A server restarted on the same address has a new epoch: the callback fires on the
// first response from it, and a running watch re-lists from the new server.
func TestEpochChangeOnRestart(t *testing.T) {
	srv := startServer(t)
	var mu sync.Mutex
	var changes [][2]string
	client, err := preemptd.Dial(srv.addr, preemptd.Options{
		MaxAttempts: 40, MaxBackoff: 250 * time.Millisecond, CallTimeout: 30 * time.Second,
		OnEpochChange: func(previous, current string) {
			mu.Lock()
			changes = append(changes, [2]string{previous, current})
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the watches, which are stopped by cleanups registered later.
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	if _, err := client.Sync(ctx, nominatedPods("epoch", 3)); err != nil {
		t.Fatal(err)
	}
	before := client.Epoch()
	if before == "" {
		t.Fatal("no epoch after a call")
	}
	rec := newRecorder()
	runWatch(t, client, 0, rec.handler(nil))
	rec.waitFor(t, "the initial nominations", func() bool { return len(rec.events) == 3 })

	srv.restart()
	// Retried on UNAVAILABLE until the new server answers.
	list, err := client.ListNominations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if list.GetEpoch() == before {
		t.Fatalf("epoch %q unchanged by the restart", before)
	}
	mu.Lock()
	if len(changes) != 1 || changes[0] != [2]string{before, list.GetEpoch()} {
		t.Errorf("epoch changes %v, want one from %q to %q", changes, before, list.GetEpoch())
	}
	mu.Unlock()

	rec.waitFor(t, "the watch's relist from the new server", func() bool { return len(rec.relists) > 0 })
	rec.mu.Lock()
	relist := rec.relists[0]
	rec.mu.Unlock()
	if relist.GetEpoch() != list.GetEpoch() || len(relist.GetNominations()) != 0 {
		t.Errorf("relist %v, want the new server's empty list", relist)
	}
	// And the watch follows the new server.
	if _, err := client.Sync(ctx, nominatedPods("after", 1)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "an event from the new server", func() bool {
		last := rec.events[len(rec.events)-1]
		return last.GetEpoch() == list.GetEpoch() && last.GetPod().GetName() == "after-00000"
	})
}
