package io.github.preemptd.client;

import io.grpc.ChannelCredentials;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import preemptd.v1.PreemptionGrpc;
import preemptd.v1.Preemptd.ListNominationsRequest;
import preemptd.v1.Preemptd.ListNominationsResponse;
import preemptd.v1.Preemptd.Node;
import preemptd.v1.Preemptd.ObjectRef;
import preemptd.v1.Preemptd.Pod;
import preemptd.v1.Preemptd.PodDisruptionBudget;
import preemptd.v1.Preemptd.PreemptRequest;
import preemptd.v1.Preemptd.PreemptResponse;
import preemptd.v1.Preemptd.SyncRequest;
import preemptd.v1.Preemptd.SyncResponse;
import preemptd.v1.Preemptd.UpdateNodeRequest;
import preemptd.v1.Preemptd.UpdatePodDisruptionBudgetRequest;
import preemptd.v1.Preemptd.UpdatePodRequest;

/**
 * A client for the {@code preemptd.v1.Preemption} service: push Kubernetes objects (as JSON
 * or typed messages), bulk-load a List through Sync, ask Preempt for a decision and follow
 * nominations with a watch that resumes by itself.
 *
 * <p>Every call carries a deadline ({@link Builder#callTimeout}) and is retried with
 * exponential backoff while the server answers UNAVAILABLE. Every response's epoch is compared
 * with the last one seen: when it changes, the server restarted with an empty cache and the
 * {@link Builder#onEpochChange} listener is called so the caller can push its state again.
 * Thread-safe.
 */
public final class PreemptdClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final PreemptionGrpc.PreemptionBlockingStub blocking;
  private final PreemptionGrpc.PreemptionStub async;
  final Duration callTimeout;
  private final int maxAttempts;
  final Duration initialBackoff;
  final Duration maxBackoff;
  private final BiConsumer<String, String> onEpochChange;
  private final AtomicReference<String> epoch = new AtomicReference<>("");

  private PreemptdClient(Builder b) {
    ManagedChannelBuilder<?> channelBuilder = Grpc.newChannelBuilder(b.address, b.credentials);
    if (b.channelCustomizer != null) {
      b.channelCustomizer.accept(channelBuilder);
    }
    this.channel = channelBuilder.build();
    this.blocking = PreemptionGrpc.newBlockingStub(channel);
    this.async = PreemptionGrpc.newStub(channel);
    this.callTimeout = b.callTimeout;
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
    this.onEpochChange = b.onEpochChange;
  }

  /** Starts configuring a client for a server at {@code address} ("host:port"). */
  public static Builder builder(String address) {
    return new Builder(address);
  }

  /** Connects to {@code address} in plaintext with the default settings. */
  public static PreemptdClient connect(String address) {
    return builder(address).build();
  }

  /** Settings of a {@link PreemptdClient}. */
  public static final class Builder {
    private final String address;
    private ChannelCredentials credentials = InsecureChannelCredentials.create();
    private Consumer<ManagedChannelBuilder<?>> channelCustomizer;
    private Duration callTimeout = Duration.ofSeconds(10);
    private int maxAttempts = 5;
    private Duration initialBackoff = Duration.ofMillis(50);
    private Duration maxBackoff = Duration.ofSeconds(2);
    private BiConsumer<String, String> onEpochChange;

    private Builder(String address) {
      this.address = Objects.requireNonNull(address, "address");
    }

    /**
     * The channel's credentials; plaintext by default. This is where TLS and client
     * certificates go ({@code TlsChannelCredentials.newBuilder()...build()}).
     */
    public Builder credentials(ChannelCredentials credentials) {
      this.credentials = Objects.requireNonNull(credentials);
      return this;
    }

    /** Adjusts the channel builder (interceptors, keepalive, flow control, ...). */
    public Builder channelCustomizer(Consumer<ManagedChannelBuilder<?>> customizer) {
      this.channelCustomizer = customizer;
      return this;
    }

    /** The deadline of each call, retries included (default 10s). */
    public Builder callTimeout(Duration timeout) {
      this.callTimeout = timeout;
      return this;
    }

    /** How often a call answered UNAVAILABLE is tried in all (default 5). */
    public Builder maxAttempts(int attempts) {
      this.maxAttempts = Math.max(1, attempts);
      return this;
    }

    /** The first pause between attempts (default 50ms), doubled up to {@code max} (2s). */
    public Builder backoff(Duration initial, Duration max) {
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /**
     * Called with (previous, current) when a response carries an epoch other than the last one
     * seen, on the thread of the call that noticed: the server restarted and its cache is
     * empty. {@code previous} is never empty.
     */
    public Builder onEpochChange(BiConsumer<String, String> listener) {
      this.onEpochChange = listener;
      return this;
    }

    public PreemptdClient build() {
      return new PreemptdClient(this);
    }
  }

  /** The generated blocking stub, for calls the wrapper does not cover. */
  public PreemptionGrpc.PreemptionBlockingStub stub() {
    return blocking;
  }

  /** The last epoch a response carried ("" before the first response). */
  public String epoch() {
    return epoch.get();
  }

  void observeEpoch(String current) {
    if (current.isEmpty()) {
      return;
    }
    String previous = epoch.getAndSet(current);
    if (!previous.isEmpty() && !previous.equals(current) && onEpochChange != null) {
      onEpochChange.accept(previous, current);
    }
  }

  /** Runs {@code call} under one deadline, again after a backoff while it is UNAVAILABLE. */
  <T> T withRetries(Function<Deadline, T> call) {
    Deadline deadline = Deadline.after(callTimeout.toNanos(), TimeUnit.NANOSECONDS);
    long pauseMillis = initialBackoff.toMillis();
    for (int attempt = 1; ; attempt++) {
      try {
        return call.apply(deadline);
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.UNAVAILABLE
            || attempt >= maxAttempts
            || deadline.timeRemaining(TimeUnit.MILLISECONDS) <= pauseMillis) {
          throw e;
        }
      }
      sleep(pauseMillis);
      pauseMillis = Math.min(2 * pauseMillis, maxBackoff.toMillis());
      // Reconnect now rather than after the channel's own backoff (1s and growing), so a
      // restarted server is reached by the next attempt.
      channel.resetConnectBackoff();
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").withCause(e).asRuntimeException();
    }
  }

  /** What an upsert or delete did (the three Update* responses alike). */
  public record UpdateResult(
      boolean applied, long resourceVersion, long revision, String epoch, String stale) {}

  /**
   * Sends one update: a node, pod or PodDisruptionBudget request as built by {@link
   * KubernetesObjects} or the upsert and delete helpers.
   */
  public UpdateResult update(SyncRequest item) {
    UpdateResult r =
        withRetries(
            deadline -> {
              var stub = blocking.withDeadline(deadline);
              switch (item.getItemCase()) {
                case NODE:
                  var n = stub.updateNode(item.getNode());
                  return new UpdateResult(
                      n.getApplied(), n.getResourceVersion(), n.getRevision(), n.getEpoch(),
                      n.getStale());
                case POD:
                  var p = stub.updatePod(item.getPod());
                  return new UpdateResult(
                      p.getApplied(), p.getResourceVersion(), p.getRevision(), p.getEpoch(),
                      p.getStale());
                case PDB:
                  var b = stub.updatePodDisruptionBudget(item.getPdb());
                  return new UpdateResult(
                      b.getApplied(), b.getResourceVersion(), b.getRevision(), b.getEpoch(),
                      b.getStale());
                default:
                  throw new IllegalArgumentException("update: empty item");
              }
            });
    observeEpoch(r.epoch());
    return r;
  }

  /**
   * Pushes one Kubernetes Node, Pod or PodDisruptionBudget given as JSON (e.g. {@code kubectl
   * get pod NAME -o json}); the server decodes it.
   */
  public UpdateResult upsertJson(String object) {
    return update(KubernetesObjects.item(object, false));
  }

  /** Pushes a typed node. */
  public UpdateResult upsert(Node node) {
    return update(KubernetesObjects.item(node));
  }

  /** Pushes a typed pod. */
  public UpdateResult upsert(Pod pod) {
    return update(KubernetesObjects.item(pod));
  }

  /** Pushes a typed PodDisruptionBudget. */
  public UpdateResult upsert(PodDisruptionBudget pdb) {
    return update(KubernetesObjects.item(pdb));
  }

  /** Deletes a node by name. */
  public UpdateResult deleteNode(String name) {
    return update(
        SyncRequest.newBuilder()
            .setNode(UpdateNodeRequest.newBuilder().setDelete(ObjectRef.newBuilder().setName(name)))
            .build());
  }

  /** Deletes a pod by namespace and name. */
  public UpdateResult deletePod(String namespace, String name) {
    return update(
        SyncRequest.newBuilder()
            .setPod(
                UpdatePodRequest.newBuilder()
                    .setDelete(ObjectRef.newBuilder().setNamespace(namespace).setName(name)))
            .build());
  }

  /** Deletes a PodDisruptionBudget by namespace and name. */
  public UpdateResult deletePodDisruptionBudget(String namespace, String name) {
    return update(
        SyncRequest.newBuilder()
            .setPdb(
                UpdatePodDisruptionBudgetRequest.newBuilder()
                    .setDelete(ObjectRef.newBuilder().setNamespace(namespace).setName(name)))
            .build());
  }

  /**
   * Streams {@code items} in order through the client-streaming Sync RPC (a bulk load) and
   * returns its report. Rejected items are listed in the response; they do not fail the call. A
   * stream that fails with UNAVAILABLE is sent again whole (updates are idempotent by
   * resource_version).
   */
  public SyncResponse sync(List<SyncRequest> items) {
    SyncResponse r =
        withRetries(
            deadline -> {
              CompletableFuture<SyncResponse> done = new CompletableFuture<>();
              StreamObserver<SyncRequest> requests =
                  async
                      .withDeadline(deadline)
                      .sync(
                          new StreamObserver<>() {
                            @Override
                            public void onNext(SyncResponse value) {
                              done.complete(value);
                            }

                            @Override
                            public void onError(Throwable t) {
                              done.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {
                              done.completeExceptionally(
                                  Status.INTERNAL
                                      .withDescription("sync ended without a response")
                                      .asRuntimeException());
                            }
                          });
              for (SyncRequest item : items) {
                requests.onNext(item);
              }
              requests.onCompleted();
              return await(done, deadline);
            });
    observeEpoch(r.getEpoch());
    return r;
  }

  private static <T> T await(CompletableFuture<T> future, Deadline deadline) {
    try {
      return future.get(deadline.timeRemaining(TimeUnit.NANOSECONDS) + 1, TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException s) {
        throw s;
      }
      throw Status.fromThrowable(e.getCause()).asRuntimeException();
    } catch (TimeoutException e) {
      throw Status.DEADLINE_EXCEEDED.withCause(e).asRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withCause(e).asRuntimeException();
    }
  }

  /**
   * Bulk-loads a Kubernetes List ({@code kubectl get nodes,pods,pdb -A -o json}) through Sync:
   * each item as JSON for the server to decode, or with {@code typed} converted here into the
   * typed message.
   */
  public SyncResponse syncList(String listJson, boolean typed) {
    return sync(KubernetesObjects.items(listJson, typed));
  }

  /** Flags of a Preempt call: {@code dryRun} records nothing; {@code explain} adds diagnostics. */
  public record PreemptOptions(boolean dryRun, boolean explain) {
    public static final PreemptOptions COMMIT = new PreemptOptions(false, false);
    public static final PreemptOptions DRY_RUN = new PreemptOptions(true, false);
  }

  /**
   * Asks for a decision for a typed pod that failed scheduling. (The API takes the pod itself;
   * a preempt-by-reference to a cached pod does not exist yet.)
   */
  public PreemptResponse preempt(Pod pod, PreemptOptions options) {
    return preempt(
        PreemptRequest.newBuilder()
            .setPod(pod)
            .setDryRun(options.dryRun())
            .setExplain(options.explain())
            .build());
  }

  /** Asks for a decision for a pod given as Kubernetes JSON. */
  public PreemptResponse preemptJson(String podJson, PreemptOptions options) {
    return preempt(
        PreemptRequest.newBuilder()
            .setPodJson(podJson)
            .setDryRun(options.dryRun())
            .setExplain(options.explain())
            .build());
  }

  private PreemptResponse preempt(PreemptRequest request) {
    PreemptResponse r = withRetries(deadline -> blocking.withDeadline(deadline).preempt(request));
    observeEpoch(r.getEpoch());
    return r;
  }

  /** The current nominations and the revision they are as of. */
  public ListNominationsResponse listNominations() {
    ListNominationsResponse r =
        withRetries(
            deadline ->
                blocking
                    .withDeadline(deadline)
                    .listNominations(ListNominationsRequest.getDefaultInstance()));
    observeEpoch(r.getEpoch());
    return r;
  }

  /**
   * Follows nomination changes after {@code afterRevision} (0: the current nominations first,
   * as initial events) on a thread of its own until the returned watch is closed; see {@link
   * NominationWatch}.
   */
  public NominationWatch watchNominations(long afterRevision, NominationWatch.Handler handler) {
    return NominationWatch.start(this, blocking, afterRevision, handler);
  }

  Context.CancellableContext newCancellableContext() {
    return Context.current().withCancellation();
  }

  /** Closes the channel, waiting briefly for calls in flight. */
  @Override
  public void close() {
    channel.shutdown();
    try {
      if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
        channel.shutdownNow();
      }
    } catch (InterruptedException e) {
      channel.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
