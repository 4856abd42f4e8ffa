package preemptd

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

// WatchHandler receives what WatchNominations delivers.
type WatchHandler struct {
	// Event is called for every event, in revision order, without gaps or repeats. The
	// events of one change (a Preempt or PreemptGroup commit) share BatchRevision; the
	// change is complete at the event whose Revision equals it.
	Event func(*pb.WatchNominationsResponse) error
	// Relist is called when the watch could not continue where it stopped (the
	// server's history no longer holds the revision: OUT_OF_RANGE, or the server
	// restarted): list is every current nomination, and the events that follow continue
	// from list.Revision. Replace the nominations you hold with it. When Relist is nil,
	// the list is passed to Event as initial NOMINATED events, as a watch from 0 begins.
	Relist func(list *pb.ListNominationsResponse) error
	// Resumed, when set, is told each time the stream was cut off (err) and the watch
	// goes on after revision.
	Resumed func(err error, revision uint64)
}

// WatchNominations follows nomination changes after afterRevision (0: the current
// nominations first, as initial events) until ctx ends or a handler fails. When the
// server cuts the stream off (RESOURCE_EXHAUSTED for a slow watcher, UNAVAILABLE on
// shutdown, a broken connection) it resumes from the last revision received, after a
// backoff; it re-lists through Relist when resuming is impossible. It returns
// ctx.Err(), the handler's error, or a status that resuming cannot cure.
func (c *Client) WatchNominations(ctx context.Context, afterRevision uint64, h WatchHandler) error {
	w := watcher{c: c, h: h, revision: afterRevision}
	pause := c.opts.InitialBackoff
	resuming := false
	for {
		if resuming {
			// A server that restarted meanwhile numbers its revisions anew: compare epochs
			// before trusting the revision held.
			list, err := c.ListNominations(ctx)
			switch {
			case err == nil && w.epoch != "" && list.GetEpoch() != w.epoch:
				if err := w.relist(list); err != nil {
					return err
				}
			case err == nil:
				w.epoch = list.GetEpoch()
			case ctx.Err() != nil:
				return ctx.Err()
			case resumable(err):
				if !sleep(ctx, pause) {
					return ctx.Err()
				}
				pause = min(2*pause, c.opts.MaxBackoff)
				continue
			default:
				return err
			}
		}
		received, err := w.follow(ctx)
		if received {
			pause = c.opts.InitialBackoff
		}
		var handlerErr handlerError
		switch {
		case errors.As(err, &handlerErr):
			return handlerErr.err
		case ctx.Err() != nil:
			return ctx.Err()
		case status.Code(err) == codes.OutOfRange:
			list, err := c.ListNominations(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				resuming = true
				continue
			}
			if err := w.relist(list); err != nil {
				return err
			}
			resuming = false
		case err == io.EOF || resumable(err):
			resuming = true
			if h.Resumed != nil {
				h.Resumed(err, w.revision)
			}
			if !sleep(ctx, pause) {
				return ctx.Err()
			}
			pause = min(2*pause, c.opts.MaxBackoff)
		default:
			return err
		}
	}
}

// resumable: the stream or call ended in a way that a later attempt may get past.
func resumable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Internal, codes.DeadlineExceeded:
		return true
	}
	return false
}

type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }

type watcher struct {
	c        *Client
	h        WatchHandler
	revision uint64
	epoch    string
}

// follow runs one stream from w.revision until it ends; received says whether any event
// arrived. Handler failures come back as handlerError.
func (w *watcher) follow(ctx context.Context) (received bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := w.c.stub.WatchNominations(ctx, &pb.WatchNominationsRequest{AfterRevision: w.revision})
	if err != nil {
		return false, err
	}
	for {
		event, err := stream.Recv()
		if err != nil {
			return received, err
		}
		received = true
		w.c.observeEpoch(event.GetEpoch())
		w.epoch = event.GetEpoch()
		// Initial events all carry the list's revision; later ones are strictly increasing.
		w.revision = event.GetRevision()
		if w.h.Event != nil {
			if err := w.h.Event(event); err != nil {
				return received, handlerError{err}
			}
		}
	}
}

func (w *watcher) relist(list *pb.ListNominationsResponse) error {
	w.revision = list.GetRevision()
	w.epoch = list.GetEpoch()
	if w.h.Relist != nil {
		return w.h.Relist(list)
	}
	if w.h.Event == nil {
		return nil
	}
	for _, n := range list.GetNominations() {
		err := w.h.Event(&pb.WatchNominationsResponse{
			Revision: list.GetRevision(), BatchRevision: list.GetRevision(), Type: pb.NominationEventType_NOMINATION_EVENT_TYPE_NOMINATED,
			Pod: n.GetPod(), Node: n.GetNode(), Priority: n.GetPriority(), Initial: true, Epoch: list.GetEpoch(),
		})
		if err != nil {
			return err
		}
	}
	return nil
}
