package preemptd_test

// The retry and deadline contract every preemptd client follows (docs/clients.md): 5
// attempts, 50 ms backoff doubling to 2 s, retries on UNAVAILABLE and RESOURCE_EXHAUSTED
// only, one deadline over the call and its retries, a negative timeout refused. Checked
// against an in-process server that answers what each test needs and counts the calls.

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	preemptd "github.com/preemptd/preemptd/clients/go"
	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

// scripted answers Preempt with its codes in order, then with a decision.
type scripted struct {
	pb.UnimplementedPreemptionServer
	mu    sync.Mutex
	codes []codes.Code
	calls int
}

func (s *scripted) Preempt(context.Context, *pb.PreemptRequest) (*pb.PreemptResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.codes) > 0 {
		code := s.codes[0]
		s.codes = s.codes[1:]
		return nil, status.Errorf(code, "scripted %s", code)
	}
	return &pb.PreemptResponse{Outcome: pb.Outcome_OUTCOME_FITS, Epoch: "scripted"}, nil
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func startScripted(t *testing.T, opts preemptd.Options, codes ...codes.Code) (*scripted, *preemptd.Client) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{codes: codes}
	srv := grpc.NewServer()
	pb.RegisterPreemptionServer(srv, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	client, err := preemptd.Dial(lis.Addr().String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return s, client
}

var pod = []byte(`{"kind": "Pod", "metadata": {"name": "p"}}`)

func TestRetriesUnavailableAndResourceExhausted(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted} {
		t.Run(code.String(), func(t *testing.T) {
			s, client := startScripted(t, preemptd.Options{}, code, code)
			r, err := client.PreemptJSON(context.Background(), pod, preemptd.PreemptOptions{})
			if err != nil || r.GetEpoch() != "scripted" || s.count() != 3 {
				t.Fatalf("answer %v, error %v after %d calls; want the decision after 3", r, err, s.count())
			}
		})
	}
}

func TestOtherCodesAreNotRetried(t *testing.T) {
	s, client := startScripted(t, preemptd.Options{}, codes.InvalidArgument)
	_, err := client.PreemptJSON(context.Background(), pod, preemptd.PreemptOptions{})
	if status.Code(err) != codes.InvalidArgument || s.count() != 1 {
		t.Fatalf("error %v after %d calls; want INVALID_ARGUMENT after 1", err, s.count())
	}
}

func TestAttemptsAreBoundedByTheDefaultFive(t *testing.T) {
	s, client := startScripted(t, preemptd.Options{}, codes.Unavailable, codes.Unavailable, codes.Unavailable,
		codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable)
	_, err := client.PreemptJSON(context.Background(), pod, preemptd.PreemptOptions{})
	if status.Code(err) != codes.Unavailable || s.count() != 5 {
		t.Fatalf("error %v after %d calls; want UNAVAILABLE after 5", err, s.count())
	}
}

func TestTheDeadlineCoversTheRetries(t *testing.T) {
	many := make([]codes.Code, 1000)
	for i := range many {
		many[i] = codes.Unavailable
	}
	// Were the timeout per attempt, 1000 attempts 200 ms apart would take over 3 minutes.
	s, client := startScripted(t, preemptd.Options{CallTimeout: time.Second, MaxAttempts: 1000,
		InitialBackoff: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, many...)
	started := time.Now()
	if _, err := client.PreemptJSON(context.Background(), pod, preemptd.PreemptOptions{}); err == nil {
		t.Fatal("succeeded")
	}
	if elapsed := time.Since(started); elapsed > 30*time.Second || s.count() >= 1000 {
		t.Fatalf("%d calls in %s; want the 1s deadline to end them", s.count(), elapsed)
	}
}

func TestANegativeTimeoutIsRefused(t *testing.T) {
	if _, err := preemptd.Dial("127.0.0.1:1", preemptd.Options{CallTimeout: -time.Second}); err == nil {
		t.Fatal("Dial accepted a negative call timeout")
	}
}
