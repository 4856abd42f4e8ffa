// Package preemptd is a Go client for the preemptd.v1.Preemption gRPC service: push
// Kubernetes objects (as JSON or typed messages), bulk-load a List through Sync, ask
// Preempt for a decision and follow nominations with a watch that resumes by itself.
//
// Every call carries one deadline (Options.CallTimeout unless the context has an earlier
// one) over all its attempts, and is retried with exponential backoff while the server
// answers UNAVAILABLE or RESOURCE_EXHAUSTED: the retry and deadline contract every
// preemptd client shares (docs/clients.md).
// Every response's epoch is compared with the last one seen: when it changes, the
// server restarted with an empty cache and Options.OnEpochChange is called so the
// caller can push its state again.
package preemptd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

// Options configure a Client. The zero value of every field picks a default.
type Options struct {
	// TransportCredentials secure the connection; nil means plaintext. This is where
	// TLS and client certificates go (credentials.NewTLS(&tls.Config{...})).
	TransportCredentials credentials.TransportCredentials
	// Token, when set, is sent as `authorization: Bearer <token>` metadata on every call
	// of the client's connection, Stub() included (`serve --authz` maps it to a role). Use
	// it with TLS: tokens travel in the clear otherwise.
	Token string
	// CallTimeout bounds each call, its retries and the pauses between them (zero: the
	// default, 10s; negative: Dial fails). A context deadline that is earlier wins, which
	// is how one call gets a deadline of its own. Streams (WatchNominations) are bounded by
	// their context only.
	CallTimeout time.Duration
	// MaxAttempts is how often a call answered UNAVAILABLE or RESOURCE_EXHAUSTED is tried
	// in all (default 5).
	MaxAttempts int
	// InitialBackoff is the first pause between attempts (default 50ms); it doubles up
	// to MaxBackoff (default 2s). Each pause is drawn between half and all of it.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// OnEpochChange is called, on the goroutine of the call that noticed, when a
	// response carries an epoch other than the last one seen: the server restarted and
	// its cache is empty. previous is never empty.
	OnEpochChange func(previous, current string)
	// DialOptions are added to the client's own (interceptors, keepalive, ...).
	DialOptions []grpc.DialOption
}

// Client wraps the generated stub. It is safe for concurrent use.
type Client struct {
	conn *grpc.ClientConn
	stub pb.PreemptionClient
	opts Options

	mu    sync.Mutex
	epoch string
}

// Dial connects to a preemptd server at addr ("host:port"). The connection is made
// lazily; the first call waits for it within its deadline.
func Dial(addr string, opts Options) (*Client, error) {
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("call timeout must be positive, got %s", opts.CallTimeout)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 10 * time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 2 * time.Second
	}
	creds := opts.TransportCredentials
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// Reconnect quickly after a server restart rather than after gRPC's 1s base delay.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: opts.InitialBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: opts.MaxBackoff},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
	if opts.Token != "" {
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(bearerToken(opts.Token)))
	}
	dialOpts = append(dialOpts, opts.DialOptions...)
	conn, err := grpc.NewClient(addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return &Client{conn: conn, stub: pb.NewPreemptionClient(conn), opts: opts}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Stub is the generated client, for calls the wrapper does not cover.
func (c *Client) Stub() pb.PreemptionClient { return c.stub }

// Epoch is the last epoch a response carried ("" before the first response).
func (c *Client) Epoch() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// observeEpoch records epoch and calls OnEpochChange when it differs from the last one.
func (c *Client) observeEpoch(epoch string) {
	if epoch == "" {
		return
	}
	c.mu.Lock()
	previous := c.epoch
	c.epoch = epoch
	c.mu.Unlock()
	if previous != "" && previous != epoch && c.opts.OnEpochChange != nil {
		c.opts.OnEpochChange(previous, epoch)
	}
}

// bearerToken sends `authorization: Bearer <token>` with every call.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false: the server accepts tokens in plaintext too (and warns
// at start), as every preemptd client sends them.
func (bearerToken) RequireTransportSecurity() bool { return false }

// Retryable reports whether a call that failed with err is tried again: the server is
// restarting, draining or not reachable yet (UNAVAILABLE), or refused the call for load
// (RESOURCE_EXHAUSTED: too many Preempt, PlanDrain or Sync calls at once).
func Retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted:
		return true
	}
	return false
}

// retry runs call under the client's one deadline, again after a backoff while it fails
// with a Retryable code, at most MaxAttempts times in all; a pause that would outlast the
// deadline is not taken.
func retry[T any](ctx context.Context, c *Client, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	backoff := c.opts.InitialBackoff
	for attempt := 1; ; attempt++ {
		result, err := call(ctx)
		if err == nil || !Retryable(err) || attempt >= c.opts.MaxAttempts {
			return result, err
		}
		pause := backoff/2 + rand.N(backoff/2+1)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= pause {
			return result, err
		}
		if !sleep(ctx, pause) {
			return result, err
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}

// sleep waits d or until ctx is done; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// UpdateResult is what an upsert or delete did (the three Update* responses alike).
type UpdateResult struct {
	Applied         bool
	ResourceVersion uint64
	Revision        uint64
	Epoch           string
	// Stale says why the update was not applied; empty when applied.
	Stale string
}

type updateResponse interface {
	GetApplied() bool
	GetResourceVersion() uint64
	GetRevision() uint64
	GetEpoch() string
	GetStale() string
}

func (c *Client) result(r updateResponse) *UpdateResult {
	c.observeEpoch(r.GetEpoch())
	return &UpdateResult{r.GetApplied(), r.GetResourceVersion(), r.GetRevision(), r.GetEpoch(), r.GetStale()}
}

// Update sends one update (a node, pod, PodDisruptionBudget, PodGroup or Workload
// request, as built by the Upsert*/Delete* helpers or by ItemFromJSON).
func (c *Client) Update(ctx context.Context, item *pb.SyncRequest) (*UpdateResult, error) {
	var r updateResponse
	var err error
	switch it := item.GetItem().(type) {
	case *pb.SyncRequest_Node:
		r, err = retry(ctx, c, func(ctx context.Context) (*pb.UpdateNodeResponse, error) { return c.stub.UpdateNode(ctx, it.Node) })
	case *pb.SyncRequest_Pod:
		r, err = retry(ctx, c, func(ctx context.Context) (*pb.UpdatePodResponse, error) { return c.stub.UpdatePod(ctx, it.Pod) })
	case *pb.SyncRequest_Pdb:
		r, err = retry(ctx, c, func(ctx context.Context) (*pb.UpdatePodDisruptionBudgetResponse, error) {
			return c.stub.UpdatePodDisruptionBudget(ctx, it.Pdb)
		})
	case *pb.SyncRequest_PodGroup:
		r, err = retry(ctx, c, func(ctx context.Context) (*pb.UpdatePodGroupResponse, error) {
			return c.stub.UpdatePodGroup(ctx, it.PodGroup)
		})
	case *pb.SyncRequest_Workload:
		r, err = retry(ctx, c, func(ctx context.Context) (*pb.UpdateWorkloadResponse, error) {
			return c.stub.UpdateWorkload(ctx, it.Workload)
		})
	default:
		return nil, errors.New("update: empty item")
	}
	if err != nil {
		return nil, err
	}
	return c.result(r), nil
}

// UpsertJSON pushes one Kubernetes Node, Pod, PodDisruptionBudget, PodGroup or Workload
// given as JSON (e.g.
// `kubectl get pod NAME -o json`); the server decodes it.
func (c *Client) UpsertJSON(ctx context.Context, object []byte) (*UpdateResult, error) {
	item, err := ItemFromJSON(object, false)
	if err != nil {
		return nil, err
	}
	return c.Update(ctx, item)
}

// UpsertNode pushes a typed node.
func (c *Client) UpsertNode(ctx context.Context, node *pb.Node) (*UpdateResult, error) {
	return c.Update(ctx, NodeItem(node))
}

// UpsertPod pushes a typed pod.
func (c *Client) UpsertPod(ctx context.Context, pod *pb.Pod) (*UpdateResult, error) {
	return c.Update(ctx, PodItem(pod))
}

// UpsertPodDisruptionBudget pushes a typed PodDisruptionBudget.
func (c *Client) UpsertPodDisruptionBudget(ctx context.Context, pdb *pb.PodDisruptionBudget) (*UpdateResult, error) {
	return c.Update(ctx, PDBItem(pdb))
}

// UpdatePodGroup sends one UpdatePodGroup request (an upsert, typed or JSON, or a delete).
func (c *Client) UpdatePodGroup(ctx context.Context, req *pb.UpdatePodGroupRequest) (*UpdateResult, error) {
	return c.Update(ctx, &pb.SyncRequest{Item: &pb.SyncRequest_PodGroup{PodGroup: req}})
}

// UpdateWorkload sends one UpdateWorkload request (an upsert, typed or JSON, or a delete).
func (c *Client) UpdateWorkload(ctx context.Context, req *pb.UpdateWorkloadRequest) (*UpdateResult, error) {
	return c.Update(ctx, &pb.SyncRequest{Item: &pb.SyncRequest_Workload{Workload: req}})
}

// UpsertPodGroup pushes a typed PodGroup.
func (c *Client) UpsertPodGroup(ctx context.Context, group *pb.PodGroup) (*UpdateResult, error) {
	return c.Update(ctx, PodGroupItem(group))
}

// UpsertWorkload pushes a typed Workload.
func (c *Client) UpsertWorkload(ctx context.Context, workload *pb.Workload) (*UpdateResult, error) {
	return c.Update(ctx, WorkloadItem(workload))
}

// DeleteNode deletes a node by name.
func (c *Client) DeleteNode(ctx context.Context, name string) (*UpdateResult, error) {
	return c.Update(ctx, &pb.SyncRequest{Item: &pb.SyncRequest_Node{Node: &pb.UpdateNodeRequest{
		Change: &pb.UpdateNodeRequest_Delete{Delete: &pb.ObjectRef{Name: name}}}}})
}

// DeletePod deletes a pod by namespace and name.
func (c *Client) DeletePod(ctx context.Context, namespace, name string) (*UpdateResult, error) {
	return c.Update(ctx, &pb.SyncRequest{Item: &pb.SyncRequest_Pod{Pod: &pb.UpdatePodRequest{
		Change: &pb.UpdatePodRequest_Delete{Delete: &pb.ObjectRef{Namespace: namespace, Name: name}}}}})
}

// DeletePodDisruptionBudget deletes a PodDisruptionBudget by namespace and name.
func (c *Client) DeletePodDisruptionBudget(ctx context.Context, namespace, name string) (*UpdateResult, error) {
	return c.Update(ctx, &pb.SyncRequest{Item: &pb.SyncRequest_Pdb{Pdb: &pb.UpdatePodDisruptionBudgetRequest{
		Change: &pb.UpdatePodDisruptionBudgetRequest_Delete{Delete: &pb.ObjectRef{Namespace: namespace, Name: name}}}}})
}

// DeletePodGroup deletes a PodGroup by namespace and name; its pods keep naming it.
func (c *Client) DeletePodGroup(ctx context.Context, namespace, name string) (*UpdateResult, error) {
	return c.UpdatePodGroup(ctx, &pb.UpdatePodGroupRequest{
		Change: &pb.UpdatePodGroupRequest_Delete{Delete: &pb.ObjectRef{Namespace: namespace, Name: name}}})
}

// DeleteWorkload deletes a Workload by namespace and name.
func (c *Client) DeleteWorkload(ctx context.Context, namespace, name string) (*UpdateResult, error) {
	return c.UpdateWorkload(ctx, &pb.UpdateWorkloadRequest{
		Change: &pb.UpdateWorkloadRequest_Delete{Delete: &pb.ObjectRef{Namespace: namespace, Name: name}}})
}

// Sync streams items to the server in order through the client-streaming Sync RPC (a
// bulk load) and returns its report. Items that the server rejects are listed in the
// response's Rejections; they do not fail the call. A stream that fails with
// UNAVAILABLE is sent again whole (updates are idempotent by resource_version).
func (c *Client) Sync(ctx context.Context, items []*pb.SyncRequest) (*pb.SyncResponse, error) {
	r, err := retry(ctx, c, func(ctx context.Context) (*pb.SyncResponse, error) {
		stream, err := c.stub.Sync(ctx)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if err := stream.Send(item); err != nil {
				if err == io.EOF {
					// The server ended the stream: CloseAndRecv has its status.
					break
				}
				return nil, err
			}
		}
		return stream.CloseAndRecv()
	})
	if err != nil {
		return nil, err
	}
	c.observeEpoch(r.GetEpoch())
	return r, nil
}

// SyncList bulk-loads a Kubernetes List (`kubectl get nodes,pods,pdb -A -o json`), each
// item sent as JSON for the server to decode, or, with typed, converted here into the
// typed message (see NodeFromJSON, PodFromJSON, PDBFromJSON).
func (c *Client) SyncList(ctx context.Context, list []byte, typed bool) (*pb.SyncResponse, error) {
	items, err := ItemsFromList(list, typed)
	if err != nil {
		return nil, err
	}
	return c.Sync(ctx, items)
}

// PreemptOptions are the flags of a Preempt call.
type PreemptOptions struct {
	// DryRun decides without recording anything.
	DryRun bool
	// Explain adds one diagnostic per node to the response.
	Explain bool
	// PdbMode overrides the server's policy for PodDisruptionBudgets (PDB_MODE_PREFER,
	// PDB_MODE_STRICT); unset, the policy decides.
	PdbMode pb.PdbMode
}

// Preempt asks for a decision for a typed pod that failed scheduling.
func (c *Client) Preempt(ctx context.Context, pod *pb.Pod, opts PreemptOptions) (*pb.PreemptResponse, error) {
	return c.preempt(ctx, &pb.PreemptRequest{Preemptor: &pb.PreemptRequest_Pod{Pod: pod}}, opts)
}

// PreemptJSON asks for a decision for a pod given as Kubernetes JSON.
func (c *Client) PreemptJSON(ctx context.Context, pod []byte, opts PreemptOptions) (*pb.PreemptResponse, error) {
	return c.preempt(ctx, &pb.PreemptRequest{Preemptor: &pb.PreemptRequest_PodJson{PodJson: string(pod)}}, opts)
}

// PreemptRef asks for a decision for a pending pod the server's cache holds, by namespace
// and name (the uid, when set, must match): NOT_FOUND when it holds none.
func (c *Client) PreemptRef(ctx context.Context, ref *pb.PodRef, opts PreemptOptions) (*pb.PreemptResponse, error) {
	return c.preempt(ctx, &pb.PreemptRequest{Preemptor: &pb.PreemptRequest_PodRef{PodRef: ref}}, opts)
}

func (c *Client) preempt(ctx context.Context, req *pb.PreemptRequest, opts PreemptOptions) (*pb.PreemptResponse, error) {
	req.DryRun, req.Explain, req.PdbMode = opts.DryRun, opts.Explain, opts.PdbMode
	r, err := retry(ctx, c, func(ctx context.Context) (*pb.PreemptResponse, error) { return c.stub.Preempt(ctx, req) })
	if err != nil {
		return nil, err
	}
	c.observeEpoch(r.GetEpoch())
	return r, nil
}

// PreemptGroup asks for a group preemption of the PodGroup the server's cache holds under
// ref (the server must answer as kubernetes 1.37 with GenericWorkload=true, else
// FAILED_PRECONDITION). members are the group's pending pods, typed; none means the
// pending pods the cache holds that name the group. opts are Preempt's flags.
func (c *Client) PreemptGroup(ctx context.Context, ref *pb.PodGroupRef, members []*pb.Pod, opts PreemptOptions) (*pb.PreemptGroupResponse, error) {
	return c.preemptGroup(ctx, &pb.PreemptGroupRequest{Group: &pb.PreemptGroupRequest_GroupRef{GroupRef: ref}, Members: members}, opts)
}

// PreemptGroupJSON is PreemptGroup with the members given as Kubernetes JSON, one pod each.
func (c *Client) PreemptGroupJSON(ctx context.Context, ref *pb.PodGroupRef, members [][]byte, opts PreemptOptions) (*pb.PreemptGroupResponse, error) {
	memberJSON := make([]string, len(members))
	for i, m := range members {
		memberJSON[i] = string(m)
	}
	return c.preemptGroup(ctx, &pb.PreemptGroupRequest{Group: &pb.PreemptGroupRequest_GroupRef{GroupRef: ref}, MemberJson: memberJSON}, opts)
}

func (c *Client) preemptGroup(ctx context.Context, req *pb.PreemptGroupRequest, opts PreemptOptions) (*pb.PreemptGroupResponse, error) {
	req.DryRun, req.Explain, req.PdbMode = opts.DryRun, opts.Explain, opts.PdbMode
	r, err := retry(ctx, c, func(ctx context.Context) (*pb.PreemptGroupResponse, error) { return c.stub.PreemptGroup(ctx, req) })
	if err != nil {
		return nil, err
	}
	c.observeEpoch(r.GetEpoch())
	return r, nil
}

// PlanDrainOptions are the flags of a PlanDrain call.
type PlanDrainOptions struct {
	// PdbMode overrides the server's policy for PodDisruptionBudgets; unset, the policy
	// decides.
	PdbMode pb.PdbMode
	// Explain adds one diagnostic per node to each pod's plan.
	Explain bool
}

// PlanDrain plans where the pods of the nodes about to go away would go, in eviction
// batches that respect every PodDisruptionBudget (docs/drain-plans.md).
func (c *Client) PlanDrain(ctx context.Context, nodeNames []string, opts PlanDrainOptions) (*pb.PlanDrainResponse, error) {
	req := &pb.PlanDrainRequest{NodeNames: nodeNames, PdbMode: opts.PdbMode, Explain: opts.Explain}
	r, err := retry(ctx, c, func(ctx context.Context) (*pb.PlanDrainResponse, error) { return c.stub.PlanDrain(ctx, req) })
	if err != nil {
		return nil, err
	}
	c.observeEpoch(r.GetEpoch())
	return r, nil
}

// ListNominations returns the current nominations and the revision they are as of.
func (c *Client) ListNominations(ctx context.Context) (*pb.ListNominationsResponse, error) {
	r, err := retry(ctx, c, func(ctx context.Context) (*pb.ListNominationsResponse, error) {
		return c.stub.ListNominations(ctx, &pb.ListNominationsRequest{})
	})
	if err != nil {
		return nil, err
	}
	c.observeEpoch(r.GetEpoch())
	return r, nil
}
