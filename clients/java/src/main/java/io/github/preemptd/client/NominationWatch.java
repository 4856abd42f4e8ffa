package io.github.preemptd.client;

import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import preemptd.v1.PreemptionGrpc;
import preemptd.v1.Preemptd.ListNominationsResponse;
import preemptd.v1.Preemptd.Nomination;
import preemptd.v1.Preemptd.NominationEventType;
import preemptd.v1.Preemptd.WatchNominationsRequest;
import preemptd.v1.Preemptd.WatchNominationsResponse;

/**
 * A running WatchNominations that resumes by itself. When the server cuts the stream off
 * (RESOURCE_EXHAUSTED for a slow watcher, UNAVAILABLE on shutdown, a broken connection) it
 * resumes from the last revision received after a backoff; when that is impossible (the
 * history no longer holds it: OUT_OF_RANGE, or the server restarted) it re-lists through {@link
 * Handler#onRelist}. Handlers run on the watch's own thread. {@link #close} stops it.
 */
public final class NominationWatch implements AutoCloseable {
  /** Receives what a watch delivers. */
  public interface Handler {
    /**
     * Every event, in revision order, without gaps or repeats. The events of one change (a
     * Preempt or PreemptGroup commit) share {@code getBatchRevision()}; the change is complete at
     * the event whose revision equals it.
     */
    void onEvent(WatchNominationsResponse event) throws Exception;

    /**
     * Every current nomination, when the watch could not continue where it stopped; the events
     * that follow continue from {@code list.getRevision()}. Replace the nominations you hold with
     * it. By default the list is passed to {@link #onEvent} as initial NOMINATED events, as a
     * watch from 0 begins.
     */
    default void onRelist(ListNominationsResponse list) throws Exception {
      for (Nomination n : list.getNominationsList()) {
        onEvent(
            WatchNominationsResponse.newBuilder()
                .setRevision(list.getRevision())
                .setBatchRevision(list.getRevision())
                .setType(NominationEventType.NOMINATION_EVENT_TYPE_NOMINATED)
                .setPod(n.getPod())
                .setNode(n.getNode())
                .setPriority(n.getPriority())
                .setInitial(true)
                .setEpoch(list.getEpoch())
                .build());
      }
    }

    /** Told each time the stream was cut off ({@code cause}) and the watch goes on. */
    default void onResumed(Throwable cause, long revision) {}
  }

  private final PreemptdClient client;
  private final PreemptionGrpc.PreemptionBlockingStub stub;
  private final Handler handler;
  private final Context.CancellableContext context;
  private final Thread thread;
  private volatile long revision;
  private volatile String epoch = "";
  private volatile Throwable failure;

  private NominationWatch(
      PreemptdClient client,
      PreemptionGrpc.PreemptionBlockingStub stub,
      long afterRevision,
      Handler handler) {
    this.client = client;
    this.stub = stub;
    this.handler = handler;
    this.revision = afterRevision;
    this.context = client.newCancellableContext();
    this.thread = new Thread(context.wrap(this::run), "preemptd-watch");
    this.thread.setDaemon(true);
  }

  static NominationWatch start(
      PreemptdClient client,
      PreemptionGrpc.PreemptionBlockingStub stub,
      long afterRevision,
      Handler handler) {
    NominationWatch watch = new NominationWatch(client, stub, afterRevision, handler);
    watch.thread.start();
    return watch;
  }

  /** The last revision delivered. */
  public long revision() {
    return revision;
  }

  /** Why the watch ended by itself (a handler's exception or an incurable status), or null. */
  public Throwable failure() {
    return failure;
  }

  /** Whether the watch is still running. */
  public boolean isRunning() {
    return thread.isAlive();
  }

  /** Stops the watch and waits for its thread. */
  @Override
  public void close() {
    context.cancel(null);
    thread.interrupt();
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static final class HandlerFailure extends RuntimeException {
    HandlerFailure(Exception cause) {
      super(cause);
    }
  }

  private void run() {
    long pause = client.initialBackoff.toMillis();
    boolean resuming = false;
    try {
      while (!context.isCancelled()) {
        if (resuming) {
          // A server that restarted meanwhile numbers its revisions anew: compare epochs
          // before trusting the revision held.
          ListNominationsResponse list;
          try {
            list = client.listNominations();
          } catch (StatusRuntimeException e) {
            if (context.isCancelled() || !resumable(e)) {
              throw e;
            }
            PreemptdClient.sleep(pause);
            pause = Math.min(2 * pause, client.maxBackoff.toMillis());
            continue;
          }
          if (!epoch.isEmpty() && !list.getEpoch().equals(epoch)) {
            relist(list);
          } else {
            epoch = list.getEpoch();
          }
        }
        try {
          if (follow()) {
            pause = client.initialBackoff.toMillis();
          }
          // The server ended the stream without a status: resume after a pause too.
          resuming = true;
          PreemptdClient.sleep(pause);
          pause = Math.min(2 * pause, client.maxBackoff.toMillis());
        } catch (StatusRuntimeException e) {
          if (context.isCancelled()) {
            return;
          }
          if (e.getStatus().getCode() == Status.Code.OUT_OF_RANGE) {
            relist(client.listNominations());
            resuming = false;
            continue;
          }
          if (!resumable(e)) {
            throw e;
          }
          resuming = true;
          handler.onResumed(e, revision);
          PreemptdClient.sleep(pause);
          pause = Math.min(2 * pause, client.maxBackoff.toMillis());
        }
      }
    } catch (HandlerFailure e) {
      failure = e.getCause();
    } catch (StatusRuntimeException e) {
      if (!context.isCancelled()) {
        failure = e;
      }
    } catch (Exception e) {
      failure = e;
    }
  }

  /** One stream from {@code revision} until it ends; true when an event arrived. */
  private boolean follow() {
    boolean received = false;
    Iterator<WatchNominationsResponse> events =
        stub.watchNominations(
            WatchNominationsRequest.newBuilder().setAfterRevision(revision).build());
    while (events.hasNext()) {
      WatchNominationsResponse event = events.next();
      received = true;
      client.observeEpoch(event.getEpoch());
      epoch = event.getEpoch();
      // Initial events all carry the list's revision; later ones are strictly increasing.
      revision = event.getRevision();
      try {
        handler.onEvent(event);
      } catch (Exception e) {
        throw new HandlerFailure(e);
      }
    }
    return received;
  }

  private void relist(ListNominationsResponse list) {
    revision = list.getRevision();
    epoch = list.getEpoch();
    try {
      handler.onRelist(list);
    } catch (Exception e) {
      throw new HandlerFailure(e);
    }
  }

  private static boolean resumable(StatusRuntimeException e) {
    switch (e.getStatus().getCode()) {
      case UNAVAILABLE:
      case RESOURCE_EXHAUSTED:
      case INTERNAL:
      case DEADLINE_EXCEEDED:
        return true;
      default:
        return false;
    }
  }
}
