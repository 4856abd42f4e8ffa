package io.github.preemptd.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.ForwardingClientCall;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
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
import preemptd.v1.Preemptd.PdbMode;
import preemptd.v1.Preemptd.PlanDrainRequest;
import preemptd.v1.Preemptd.PlanDrainResponse;
import preemptd.v1.Preemptd.Pod;
import preemptd.v1.Preemptd.PodDisruptionBudget;
import preemptd.v1.Preemptd.PodGroup;
import preemptd.v1.Preemptd.PodGroupRef;
import preemptd.v1.Preemptd.PodRef;
import preemptd.v1.Preemptd.PreemptGroupRequest;
import preemptd.v1.Preemptd.PreemptGroupResponse;
import preemptd.v1.Preemptd.PreemptRequest;
import preemptd.v1.Preemptd.PreemptResponse;
import preemptd.v1.Preemptd.SyncRequest;
import preemptd.v1.Preemptd.SyncResponse;
import preemptd.v1.Preemptd.UpdateNodeRequest;
import preemptd.v1.Preemptd.UpdatePodDisruptionBudgetRequest;
import preemptd.v1.Preemptd.UpdatePodGroupRequest;
import preemptd.v1.Preemptd.UpdatePodRequest;
import preemptd.v1.Preemptd.UpdateWorkloadRequest;
import preemptd.v1.Preemptd.Workload;

/**
 * A client for the {@code preemptd.v1.Preemption} service: push Kubernetes objects (as JSON
 * or typed messages), bulk-load a List through Sync, ask Preempt for a decision and follow
 * nominations with a watch that resumes by itself.
 *
 * <p>Every call carries one deadline over all its attempts ({@link Builder#callTimeout}, or
 * {@link #withCallTimeout} for some calls) and is retried with exponential backoff while the
 * server answers UNAVAILABLE or RESOURCE_EXHAUSTED: the retry and deadline contract every
 * preemptd client shares (docs/clients.md). Every response's epoch is compared
 * with the last one seen: when it changes, the server restarted with an empty cache and the
 * {@link Builder#onEpochChange} listener is called so the caller can push its state again.
 * Thread-safe.
 */
public final class PreemptdClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final String address;
  private final boolean ownsChannel;
  private final PreemptionGrpc.PreemptionBlockingStub blocking;
  private final PreemptionGrpc.PreemptionStub async;
  final Duration callTimeout;
  private final int maxAttempts;
  final Duration initialBackoff;
  final Duration maxBackoff;
  private final BiConsumer<String, String> onEpochChange;
  private final AtomicReference<String> epoch;

  private PreemptdClient(Builder b) {
    ManagedChannelBuilder<?> channelBuilder = Grpc.newChannelBuilder(b.address, b.credentials);
    if (b.token != null) {
      channelBuilder.intercept(bearerToken(b.token));
    }
    if (b.channelCustomizer != null) {
      b.channelCustomizer.accept(channelBuilder);
    }
    this.channel = channelBuilder.build();
    this.address = b.address;
    this.ownsChannel = true;
    this.epoch = new AtomicReference<>("");
    this.blocking = PreemptionGrpc.newBlockingStub(channel);
    this.async = PreemptionGrpc.newStub(channel);
    this.callTimeout = b.callTimeout;
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
    this.onEpochChange = b.onEpochChange;
  }

  /** A view sharing {@code base}'s channel and epoch with another call timeout. */
  private PreemptdClient(PreemptdClient base, Duration callTimeout) {
    this.channel = base.channel;
    this.address = base.address;
    this.ownsChannel = false;
    this.blocking = base.blocking;
    this.async = base.async;
    this.callTimeout = checkTimeout(callTimeout);
    this.maxAttempts = base.maxAttempts;
    this.initialBackoff = base.initialBackoff;
    this.maxBackoff = base.maxBackoff;
    this.onEpochChange = base.onEpochChange;
    this.epoch = base.epoch;
  }

  /**
   * This client with another deadline for the calls made through it (a per-call deadline:
   * {@code client.withCallTimeout(Duration.ofSeconds(2)).preemptJson(...)}). It shares the
   * channel and the epoch; closing it closes nothing.
   */
  public PreemptdClient withCallTimeout(Duration timeout) {
    return new PreemptdClient(this, timeout);
  }

  static Duration checkTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("call timeout must be positive, got " + timeout);
    }
    return timeout;
  }

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** Adds {@code authorization: Bearer <token>} to every call of the channel. */
  private static ClientInterceptor bearerToken(String token) {
    String value = "Bearer " + token;
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(
          MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            headers.put(AUTHORIZATION, value);
            super.start(listener, headers);
          }
        };
      }
    };
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
    private String token;
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

    /**
     * A bearer token sent as {@code authorization: Bearer <token>} on every call of the
     * channel, {@link #stub()} and the watch included ({@code serve --authz} maps it to a
     * role). Use it with TLS: tokens travel in the clear otherwise.
     */
    public Builder token(String token) {
      this.token = Objects.requireNonNull(token, "token");
      return this;
    }

    /** Adjusts the channel builder (interceptors, keepalive, flow control, ...). */
    public Builder channelCustomizer(Consumer<ManagedChannelBuilder<?>> customizer) {
      this.channelCustomizer = customizer;
      return this;
    }

    /**
     * The deadline of each call, its retries and the pauses between them included (default
     * 10s); zero or negative is refused with IllegalArgumentException.
     */
    public Builder callTimeout(Duration timeout) {
      this.callTimeout = checkTimeout(timeout);
      return this;
    }

    /** How often a call answered UNAVAILABLE or RESOURCE_EXHAUSTED is tried in all (default 5). */
    public Builder maxAttempts(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("attempts must be at least 1, got " + attempts);
      }
      this.maxAttempts = attempts;
      return this;
    }

    /**
     * The first pause between attempts (default 50ms), doubled up to {@code max} (2s); each
     * pause is drawn between half and all of it.
     */
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

  /**
   * Whether a call that failed with {@code code} is tried again: the server is restarting,
   * draining or not reachable yet (UNAVAILABLE), or refused the call for load
   * (RESOURCE_EXHAUSTED: too many Preempt, PlanDrain or Sync calls at once).
   */
  public static boolean retryable(Status.Code code) {
    return code == Status.Code.UNAVAILABLE || code == Status.Code.RESOURCE_EXHAUSTED;
  }

  /**
   * Runs {@code call} under one deadline, again after a backoff while it fails with a {@link
   * #retryable} code; a pause that would outlast the deadline is not taken.
   */
  <T> T withRetries(Function<Deadline, T> call) {
    Deadline deadline = Deadline.after(callTimeout.toNanos(), TimeUnit.NANOSECONDS);
    long backoffMillis = initialBackoff.toMillis();
    for (int attempt = 1; ; attempt++) {
      long pauseMillis = backoffMillis / 2 + ThreadLocalRandom.current().nextLong(backoffMillis / 2 + 1);
      try {
        return call.apply(deadline);
      } catch (StatusRuntimeException e) {
        if (!retryable(e.getStatus().getCode())
            || attempt >= maxAttempts
            || deadline.timeRemaining(TimeUnit.MILLISECONDS) <= pauseMillis) {
          throw withAddress(e);
        }
      }
      sleep(pauseMillis);
      backoffMillis = Math.min(2 * backoffMillis, maxBackoff.toMillis());
      // Reconnect now rather than after the channel's own backoff (1s and growing), so a
      // restarted server is reached by the next attempt.
      channel.resetConnectBackoff();
    }
  }

  /** UNAVAILABLE names the server it could not reach (gRPC's own message often does not). */
  private StatusRuntimeException withAddress(StatusRuntimeException e) {
    Status status = e.getStatus();
    if (status.getCode() != Status.Code.UNAVAILABLE) {
      return e;
    }
    String detail = status.getDescription() == null ? "" : ": " + status.getDescription();
    return status
        .withDescription("preemptd at " + address + " unavailable" + detail)
        .asRuntimeException(e.getTrailers());
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").withCause(e).asRuntimeException();
    }
  }

  /** What an upsert or delete did (the Update* responses alike). */
  public record UpdateResult(
      boolean applied, long resourceVersion, long revision, String epoch, String stale) {}

  /**
   * Sends one update: a node, pod, PodDisruptionBudget, PodGroup or Workload request as built by
   * {@link
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
                case POD_GROUP:
                  var g = stub.updatePodGroup(item.getPodGroup());
                  return new UpdateResult(
                      g.getApplied(), g.getResourceVersion(), g.getRevision(), g.getEpoch(),
                      g.getStale());
                case WORKLOAD:
                  var w = stub.updateWorkload(item.getWorkload());
                  return new UpdateResult(
                      w.getApplied(), w.getResourceVersion(), w.getRevision(), w.getEpoch(),
                      w.getStale());
                default:
                  throw new IllegalArgumentException("update: empty item");
              }
            });
    observeEpoch(r.epoch());
    return r;
  }

  /**
   * Pushes one Kubernetes Node, Pod, PodDisruptionBudget, PodGroup or Workload given as JSON
   * (e.g. {@code kubectl get pod NAME -o json}); the server decodes it.
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

  /** Pushes a typed PodGroup. */
  public UpdateResult upsert(PodGroup group) {
    return update(KubernetesObjects.item(group));
  }

  /** Pushes a typed Workload. */
  public UpdateResult upsert(Workload workload) {
    return update(KubernetesObjects.item(workload));
  }

  /** Upserts or deletes one PodGroup (scheduling.k8s.io/v1beta1). */
  public UpdateResult updatePodGroup(UpdatePodGroupRequest request) {
    return update(SyncRequest.newBuilder().setPodGroup(request).build());
  }

  /** Upserts or deletes one Workload (scheduling.k8s.io/v1beta1). */
  public UpdateResult updateWorkload(UpdateWorkloadRequest request) {
    return update(SyncRequest.newBuilder().setWorkload(request).build());
  }

  /** Deletes a PodGroup by namespace and name; its pods keep naming it. */
  public UpdateResult deletePodGroup(String namespace, String name) {
    return updatePodGroup(
        UpdatePodGroupRequest.newBuilder()
            .setDelete(ObjectRef.newBuilder().setNamespace(namespace).setName(name))
            .build());
  }

  /** Deletes a Workload by namespace and name. */
  public UpdateResult deleteWorkload(String namespace, String name) {
    return updateWorkload(
        UpdateWorkloadRequest.newBuilder()
            .setDelete(ObjectRef.newBuilder().setNamespace(namespace).setName(name))
            .build());
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

  /**
   * Flags of a Preempt call: {@code dryRun} records nothing; {@code explain} adds diagnostics;
   * {@code pdbMode} (PDB_MODE_PREFER, PDB_MODE_STRICT) overrides the server's policy for
   * PodDisruptionBudgets, PDB_MODE_UNSPECIFIED leaves it to the policy.
   */
  public record PreemptOptions(boolean dryRun, boolean explain, PdbMode pdbMode) {
    public static final PreemptOptions COMMIT = new PreemptOptions(false, false);
    public static final PreemptOptions DRY_RUN = new PreemptOptions(true, false);

    public PreemptOptions(boolean dryRun, boolean explain) {
      this(dryRun, explain, PdbMode.PDB_MODE_UNSPECIFIED);
    }

    /** These flags with another PodDisruptionBudget mode. */
    public PreemptOptions withPdbMode(PdbMode mode) {
      return new PreemptOptions(dryRun, explain, mode);
    }

    PreemptRequest.Builder apply(PreemptRequest.Builder request) {
      return request.setDryRun(dryRun).setExplain(explain).setPdbMode(pdbMode);
    }
  }

  /** Asks for a decision for a typed pod that failed scheduling. */
  public PreemptResponse preempt(Pod pod, PreemptOptions options) {
    return preempt(options.apply(PreemptRequest.newBuilder().setPod(pod)).build());
  }

  /** Asks for a decision for a pod given as Kubernetes JSON. */
  public PreemptResponse preemptJson(String podJson, PreemptOptions options) {
    return preempt(options.apply(PreemptRequest.newBuilder().setPodJson(podJson)).build());
  }

  /**
   * Asks for a decision for a pending pod the server's cache holds, by namespace and name (the
   * uid, when set, must match): NOT_FOUND when it holds none.
   */
  public PreemptResponse preemptRef(PodRef podRef, PreemptOptions options) {
    return preempt(options.apply(PreemptRequest.newBuilder().setPodRef(podRef)).build());
  }

  /**
   * Asks for a group preemption of the PodGroup the server's cache holds under {@code group}
   * (the server must answer as kubernetes 1.37 with GenericWorkload=true, else
   * FAILED_PRECONDITION). {@code members} are its pending pods, typed; none means the pending
   * pods the cache holds that name the group.
   */
  public PreemptGroupResponse preemptGroup(
      PodGroupRef group, List<Pod> members, PreemptOptions options) {
    return preemptGroup(
        PreemptGroupRequest.newBuilder().setGroupRef(group).addAllMembers(members), options);
  }

  /** {@link #preemptGroup} with the members given as Kubernetes JSON, one pod each. */
  public PreemptGroupResponse preemptGroupJson(
      PodGroupRef group, List<String> memberJson, PreemptOptions options) {
    return preemptGroup(
        PreemptGroupRequest.newBuilder().setGroupRef(group).addAllMemberJson(memberJson), options);
  }

  private PreemptGroupResponse preemptGroup(
      PreemptGroupRequest.Builder builder, PreemptOptions options) {
    PreemptGroupRequest request =
        builder
            .setDryRun(options.dryRun())
            .setExplain(options.explain())
            .setPdbMode(options.pdbMode())
            .build();
    PreemptGroupResponse r =
        withRetries(deadline -> blocking.withDeadline(deadline).preemptGroup(request));
    observeEpoch(r.getEpoch());
    return r;
  }

  /** Flags of a PlanDrain call. */
  public record PlanDrainOptions(PdbMode pdbMode, boolean explain) {
    public static final PlanDrainOptions DEFAULT =
        new PlanDrainOptions(PdbMode.PDB_MODE_UNSPECIFIED, false);
  }

  /**
   * Plans where the pods of the nodes about to go away would go, in eviction batches that
   * respect every PodDisruptionBudget (docs/drain-plans.md).
   */
  public PlanDrainResponse planDrain(List<String> nodeNames, PlanDrainOptions options) {
    PlanDrainRequest request =
        PlanDrainRequest.newBuilder()
            .addAllNodeNames(nodeNames)
            .setPdbMode(options.pdbMode())
            .setExplain(options.explain())
            .build();
    PlanDrainResponse r = withRetries(deadline -> blocking.withDeadline(deadline).planDrain(request));
    observeEpoch(r.getEpoch());
    return r;
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

  /** Closes the channel, waiting briefly for calls in flight (a withCallTimeout view: nothing). */
  @Override
  public void close() {
    if (!ownsChannel) {
      return;
    }
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
