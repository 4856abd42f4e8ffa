// A small client over the generated preemptd.v1 stub: one deadline over every call and its
// retries, retries with backoff on UNAVAILABLE and RESOURCE_EXHAUSTED, epoch tracking (the
// server restarted: push state again), bulk loads through Sync and a nominations watch that
// resumes on its own. The retry and deadline contract is the one of every preemptd client
// (docs/clients.md).

import {
  type CallOptions,
  type ChannelCredentials,
  type ClientOptions as GrpcClientOptions,
  type ClientReadableStream,
  type ClientUnaryCall,
  credentials as grpcCredentials,
  Metadata,
  type ServiceError,
  status,
} from "@grpc/grpc-js";

import {
  ListNominationsResponse,
  NominationEventType,
  Node,
  PdbMode,
  PlanDrainRequest,
  PlanDrainResponse,
  Pod,
  PodDisruptionBudget,
  PodGroup,
  PodGroupRef,
  PodRef,
  PreemptGroupRequest,
  PreemptGroupResponse,
  PreemptionClient,
  PreemptRequest,
  PreemptResponse,
  SyncRequest,
  SyncResponse,
  UpdateNodeResponse,
  UpdatePodDisruptionBudgetResponse,
  UpdatePodGroupRequest,
  UpdatePodGroupResponse,
  UpdatePodResponse,
  UpdateWorkloadRequest,
  UpdateWorkloadResponse,
  WatchNominationsResponse,
  Workload,
} from "./gen/preemptd/v1/preemptd";
import { fromKube, type KubeObject, listItems } from "./kube";

/**
 * The codes a call is retried on: the server is restarting, draining or not reachable yet
 * (UNAVAILABLE), or refused the call for load (RESOURCE_EXHAUSTED: too many Preempt,
 * PlanDrain or Sync calls at once).
 */
export const RETRY_CODES: readonly status[] = [status.UNAVAILABLE, status.RESOURCE_EXHAUSTED];

export const DEFAULT_TIMEOUT_MS = 10_000;

function checkTimeout(timeoutMs: number): number {
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`);
  }
  return timeoutMs;
}

export interface RetryPolicy {
  /** Calls in all, the first included. */
  attempts: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  multiplier: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 5,
  initialBackoffMs: 50,
  maxBackoffMs: 2000,
  multiplier: 2,
};

/** The waits between attempts: between half and all of a backoff that doubles up to the cap. */
export function* backoffDelays(policy: RetryPolicy): Generator<number> {
  let backoff = policy.initialBackoffMs;
  for (let i = 1; i < policy.attempts; i++) {
    yield backoff / 2 + Math.random() * (backoff / 2);
    backoff = Math.min(backoff * policy.multiplier, policy.maxBackoffMs);
  }
}

export interface ClientOptions {
  /**
   * Channel credentials; plaintext when absent. TLS (and mTLS) against `preemptd serve
   * --tls-cert ...`: `credentials.createSsl(rootCert, privateKey, certChain)`.
   */
  credentials?: ChannelCredentials;
  /**
   * A bearer token sent as `authorization: Bearer <token>` on every call, the watch included
   * (`serve --authz` maps it to a role). Use it with TLS: tokens travel in the clear otherwise.
   */
  token?: string;
  /**
   * The deadline of every unary and Sync call, its retries and the waits between them
   * included (default 10 000 ms); every method takes its own `timeoutMs`. 0 or less is
   * refused with a RangeError.
   */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /**
   * Runs when a response carries an epoch other than the last one seen: the server
   * restarted with an empty cache and the caller must push its state again.
   */
  onEpochChange?: (oldEpoch: string, newEpoch: string) => void;
  /** @grpc/grpc-js channel options; they take precedence over the client's. */
  channelOptions?: Partial<GrpcClientOptions>;
}

export interface CallTimeout {
  timeoutMs?: number;
}

export interface PlanDrainOptions extends CallTimeout {
  /** How budgets weigh in; unset: the server's policy (prefer, as upstream, without one). */
  pdbMode?: PdbMode;
  explain?: boolean;
}

export interface PreemptOptions extends CallTimeout {
  dryRun?: boolean;
  explain?: boolean;
  /** How budgets weigh in; unset: the server's policy (prefer, as upstream, without one). */
  pdbMode?: PdbMode;
}

export interface SyncOptions extends CallTimeout {
  /** Send Kubernetes objects as typed messages (converted by `fromKube`), not `upsertJson`. */
  typed?: boolean;
}

export interface WatchOptions {
  /** 0: the current nominations first, then live changes; N: the changes after N. */
  afterRevision?: bigint;
  /** Receives the list a re-list fetched, so the caller can replace its state. */
  onRelist?: (list: ListNominationsResponse) => void;
  /** Deadline of each WatchNominations stream; the watch resumes after it. */
  callTimeoutMs?: number;
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

export type UpdateResponse =
  | UpdateNodeResponse
  | UpdatePodResponse
  | UpdatePodDisruptionBudgetResponse
  | UpdatePodGroupResponse
  | UpdateWorkloadResponse;
const SUPPORTED_KINDS = "Node, Pod, PodDisruptionBudget, PodGroup, Workload";
export type SyncItem = SyncRequest | KubeObject;

// gRPC's own reconnect backoff starts at 1 s and grows to 2 min: far slower than a
// restarting server.
const RECONNECT_OPTIONS: Partial<GrpcClientOptions> = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 2000,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function isServiceError(error: unknown): error is ServiceError {
  return typeof error === "object" && error !== null && "code" in error && "details" in error;
}

/** A connection to `preemptd serve`. */
export class PreemptdClient {
  readonly stub: PreemptionClient;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  /** The token's metadata, added to every call; empty without a token. */
  readonly metadata: Metadata;
  onEpochChange?: (oldEpoch: string, newEpoch: string) => void;
  /** The epoch of the last response (undefined before the first). */
  epoch: string | undefined;

  constructor(address: string, options: ClientOptions = {}) {
    this.stub = new PreemptionClient(address, options.credentials ?? grpcCredentials.createInsecure(), {
      ...RECONNECT_OPTIONS,
      ...options.channelOptions,
    });
    this.timeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    if (!(this.retry.attempts >= 1)) throw new RangeError(`retry.attempts must be at least 1, got ${this.retry.attempts}`);
    this.metadata = new Metadata();
    if (options.token) this.metadata.set("authorization", `Bearer ${options.token}`);
    this.onEpochChange = options.onEpochChange;
  }

  close(): void {
    this.stub.close();
  }

  observeEpoch(epoch: string): void {
    if (!epoch) return;
    const old = this.epoch;
    this.epoch = epoch;
    if (old !== undefined && old !== epoch) this.onEpochChange?.(old, epoch);
  }

  /** The deadline of a call starting now: `timeoutMs` (checked), or the client's. */
  deadline(timeoutMs?: number): Date {
    return new Date(Date.now() + (timeoutMs === undefined ? this.timeoutMs : checkTimeout(timeoutMs)));
  }

  /**
   * Runs `attempt` (given the call's one deadline) until it succeeds, retrying RETRY_CODES
   * with backoff while the deadline leaves room for the wait.
   */
  private async withRetry<Res extends { epoch: string }>(
    timeoutMs: number | undefined,
    attempt: (deadline: Date) => Promise<Res>,
  ): Promise<Res> {
    const deadline = this.deadline(timeoutMs);
    const delays = backoffDelays(this.retry);
    for (;;) {
      try {
        const response = await attempt(deadline);
        this.observeEpoch(response.epoch);
        return response;
      } catch (error) {
        const delay = delays.next();
        if (!isServiceError(error) || !RETRY_CODES.includes(error.code) || delay.done) throw error;
        if (Date.now() + delay.value >= deadline.getTime()) throw error;
        await sleep(delay.value);
      }
    }
  }

  private unary<Req, Res extends { epoch: string }>(
    method: UnaryMethod<Req, Res>,
    request: Req,
    timeoutMs?: number,
  ): Promise<Res> {
    return this.withRetry(
      timeoutMs,
      (deadline) =>
        new Promise<Res>((resolve, reject) => {
          method.call(this.stub, request, this.metadata.clone(), { deadline }, (error, response) =>
            error ? reject(error) : resolve(response),
          );
        }),
    );
  }

  // --- cluster state -----------------------------------------------------------------------

  /**
   * Upserts a Node, Pod, PodDisruptionBudget, PodGroup or Workload given as Kubernetes JSON
   * (an object or its text); the kind comes from the object unless given.
   */
  upsertJson(object: KubeObject | string, options: CallTimeout & { kind?: string } = {}): Promise<UpdateResponse> {
    const text = typeof object === "string" ? object : JSON.stringify(object);
    const kind = options.kind ?? (typeof object === "string" ? JSON.parse(object) : object).kind;
    switch (kind) {
      case "Node":
        return this.unary(this.stub.updateNode, { upsertJson: text }, options.timeoutMs);
      case "Pod":
        return this.unary(this.stub.updatePod, { upsertJson: text }, options.timeoutMs);
      case "PodDisruptionBudget":
        return this.unary(this.stub.updatePodDisruptionBudget, { upsertJson: text }, options.timeoutMs);
      case "PodGroup":
        return this.updatePodGroup({ upsertJson: text }, options);
      case "Workload":
        return this.updateWorkload({ upsertJson: text }, options);
      default:
        throw new Error(`unsupported kind ${JSON.stringify(kind)}: supported kinds are ${SUPPORTED_KINDS}`);
    }
  }

  upsertNode(node: Node, options: CallTimeout = {}): Promise<UpdateNodeResponse> {
    return this.unary(this.stub.updateNode, { upsert: node }, options.timeoutMs);
  }

  upsertPod(pod: Pod, options: CallTimeout = {}): Promise<UpdatePodResponse> {
    return this.unary(this.stub.updatePod, { upsert: pod }, options.timeoutMs);
  }

  upsertPodDisruptionBudget(pdb: PodDisruptionBudget, options: CallTimeout = {}): Promise<UpdatePodDisruptionBudgetResponse> {
    return this.unary(this.stub.updatePodDisruptionBudget, { upsert: pdb }, options.timeoutMs);
  }

  /** Upserts or deletes one PodGroup (scheduling.k8s.io/v1beta1). */
  updatePodGroup(request: UpdatePodGroupRequest, options: CallTimeout = {}): Promise<UpdatePodGroupResponse> {
    return this.unary(this.stub.updatePodGroup, request, options.timeoutMs);
  }

  /** Upserts or deletes one Workload (scheduling.k8s.io/v1beta1). */
  updateWorkload(request: UpdateWorkloadRequest, options: CallTimeout = {}): Promise<UpdateWorkloadResponse> {
    return this.unary(this.stub.updateWorkload, request, options.timeoutMs);
  }

  upsertPodGroup(group: PodGroup, options: CallTimeout = {}): Promise<UpdatePodGroupResponse> {
    return this.updatePodGroup({ upsert: group }, options);
  }

  upsertWorkload(workload: Workload, options: CallTimeout = {}): Promise<UpdateWorkloadResponse> {
    return this.updateWorkload({ upsert: workload }, options);
  }

  /** Deletes a PodGroup; its pods keep naming it. */
  deletePodGroup(namespace: string, name: string, options: CallTimeout = {}): Promise<UpdatePodGroupResponse> {
    return this.updatePodGroup({ delete: { namespace, name, uid: undefined } }, options);
  }

  deleteWorkload(namespace: string, name: string, options: CallTimeout = {}): Promise<UpdateWorkloadResponse> {
    return this.updateWorkload({ delete: { namespace, name, uid: undefined } }, options);
  }

  deleteNode(name: string, options: CallTimeout & { uid?: string } = {}): Promise<UpdateNodeResponse> {
    const ref = { namespace: "", name, uid: options.uid };
    return this.unary(this.stub.updateNode, { delete: ref }, options.timeoutMs);
  }

  deletePod(namespace: string, name: string, options: CallTimeout & { uid?: string } = {}): Promise<UpdatePodResponse> {
    const ref = { namespace, name, uid: options.uid };
    return this.unary(this.stub.updatePod, { delete: ref }, options.timeoutMs);
  }

  deletePodDisruptionBudget(namespace: string, name: string, options: CallTimeout = {}): Promise<UpdatePodDisruptionBudgetResponse> {
    const ref = { namespace, name, uid: undefined };
    return this.unary(this.stub.updatePodDisruptionBudget, { delete: ref }, options.timeoutMs);
  }

  /**
   * Applies updates in order through one client-streaming Sync call. Items are
   * SyncRequests or Kubernetes objects (with `kind`; sent as `upsertJson`, or as typed
   * messages when `typed`).
   */
  sync(items: Iterable<SyncItem>, options: SyncOptions = {}): Promise<SyncResponse> {
    let requests: SyncRequest[];
    try {
      requests = Array.from(items, (item, index) => syncRequest(item, options.typed ?? false, `items[${index}]`));
    } catch (error) {
      // A ConversionError: refused before anything is sent, as a rejection like the call's own.
      return Promise.reject(error);
    }
    return this.withRetry(
      options.timeoutMs,
      (deadline) =>
        new Promise<SyncResponse>((resolve, reject) => {
          const call = this.stub.sync(this.metadata.clone(), { deadline }, (error, response) =>
            error ? reject(error) : resolve(response),
          );
          const write = async () => {
            for (const request of requests) {
              if (!call.write(request)) await new Promise((drained) => call.once("drain", drained));
            }
            call.end();
          };
          write().catch(reject);
        }),
    );
  }

  /** Bulk-loads a `kubectl get nodes,pods,pdb -A -o json` List (an object or its text). */
  syncList(kubeList: KubeObject | string, options: SyncOptions = {}): Promise<SyncResponse> {
    let items: KubeObject[];
    try {
      items = listItems(typeof kubeList === "string" ? JSON.parse(kubeList) : kubeList);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.sync(items, options);
  }

  // --- decisions -----------------------------------------------------------------------------

  /**
   * Decides preemption for a pod given typed, as Kubernetes JSON text, or as a Kubernetes
   * object (sent as JSON). `preemptRef` names a pending pod the server holds instead.
   */
  preempt(pod: Pod | KubeObject | string, options: PreemptOptions = {}): Promise<PreemptResponse> {
    const request: PreemptRequest = {
      dryRun: options.dryRun ?? false,
      explain: options.explain ?? false,
      pdbMode: options.pdbMode ?? PdbMode.PDB_MODE_UNSPECIFIED,
    };
    if (typeof pod === "string") request.podJson = pod;
    else if ("metadata" in pod || "kind" in pod) request.podJson = JSON.stringify(pod);
    else request.pod = pod as Pod;
    return this.unary(this.stub.preempt, request, options.timeoutMs);
  }

  /**
   * Decides preemption for a pending pod the server's cache holds, by namespace and name
   * (the uid, when set, must match): NOT_FOUND when it holds none.
   */
  preemptRef(podRef: PodRef, options: PreemptOptions = {}): Promise<PreemptResponse> {
    const request: PreemptRequest = {
      podRef,
      dryRun: options.dryRun ?? false,
      explain: options.explain ?? false,
      pdbMode: options.pdbMode ?? PdbMode.PDB_MODE_UNSPECIFIED,
    };
    return this.unary(this.stub.preempt, request, options.timeoutMs);
  }

  /**
   * Decides group preemption for a PodGroup the server's cache holds (the server must answer
   * as kubernetes 1.37 with GenericWorkload=true, else FAILED_PRECONDITION). `members` are its
   * pending pods, typed, as Kubernetes JSON text or as Kubernetes objects (sent as JSON); none
   * means the pending pods the cache holds that name the group.
   */
  preemptGroup(
    group: PodGroupRef,
    members: Iterable<Pod | KubeObject | string> = [],
    options: PreemptOptions = {},
  ): Promise<PreemptGroupResponse> {
    const request: PreemptGroupRequest = {
      groupRef: group,
      members: [],
      memberJson: [],
      dryRun: options.dryRun ?? false,
      explain: options.explain ?? false,
      pdbMode: options.pdbMode ?? PdbMode.PDB_MODE_UNSPECIFIED,
    };
    for (const member of members) {
      if (typeof member === "string") request.memberJson.push(member);
      else if ("metadata" in member || "kind" in member) request.memberJson.push(JSON.stringify(member));
      else request.members.push(member as Pod);
    }
    return this.unary(this.stub.preemptGroup, request, options.timeoutMs);
  }

  /**
   * Plans where the pods of the nodes about to go away would go, in eviction batches that
   * respect every PodDisruptionBudget (docs/drain-plans.md).
   */
  planDrain(nodeNames: string[], options: PlanDrainOptions = {}): Promise<PlanDrainResponse> {
    const request: PlanDrainRequest = {
      nodeNames,
      pdbMode: options.pdbMode ?? PdbMode.PDB_MODE_UNSPECIFIED,
      explain: options.explain ?? false,
    };
    return this.unary(this.stub.planDrain, request, options.timeoutMs);
  }

  listNominations(options: CallTimeout = {}): Promise<ListNominationsResponse> {
    return this.unary(this.stub.listNominations, {}, options.timeoutMs);
  }

  /** Follows nomination changes; see NominationWatch. */
  watchNominations(options: WatchOptions = {}): NominationWatch {
    return new NominationWatch(this, options);
  }
}

function syncRequest(item: SyncItem, typed: boolean, path: string): SyncRequest {
  if (!("kind" in item)) return item as SyncRequest;
  if (typed) {
    const t = fromKube(item, undefined, path);
    switch (t.kind) {
      case "Node":
        return { node: { upsert: t.node } };
      case "Pod":
        return { pod: { upsert: t.pod } };
      case "PodDisruptionBudget":
        return { pdb: { upsert: t.pdb } };
      case "PodGroup":
        return { podGroup: { upsert: t.podGroup } };
      case "Workload":
        return { workload: { upsert: t.workload } };
    }
  }
  const upsertJson = JSON.stringify(item);
  switch (item.kind) {
    case "Node":
      return { node: { upsertJson } };
    case "Pod":
      return { pod: { upsertJson } };
    case "PodDisruptionBudget":
      return { pdb: { upsertJson } };
    case "PodGroup":
      return { podGroup: { upsertJson } };
    case "Workload":
      return { workload: { upsertJson } };
    default:
      throw new Error(`unsupported kind ${JSON.stringify(item.kind)}: supported kinds are ${SUPPORTED_KINDS}`);
  }
}

/**
 * An async iterator over WatchNominations events that survives stream ends.
 *
 * - Every stream has a deadline (`callTimeoutMs`); when it passes, or the stream ends with
 *   UNAVAILABLE (server draining or gone) or RESOURCE_EXHAUSTED (this watcher fell behind),
 *   the watch resumes after the last revision received, with backoff while the server is
 *   unreachable.
 * - On OUT_OF_RANGE (the revision left the server's history, or the server restarted and
 *   its log is behind), and when the server has another epoch after UNAVAILABLE (checked
 *   with ListNominations before resuming) or on a resumed stream, it re-lists:
 *   ListNominations, `onRelist(list)` so the caller can replace its state, the listed
 *   nominations yielded as `initial` NOMINATED events at the list's revision, then a watch
 *   from that revision.
 * - `cancel()` ends the iteration.
 */
export class NominationWatch implements AsyncIterable<WatchNominationsResponse> {
  revision: bigint;
  epoch: string | undefined;
  resumes = 0;
  relists = 0;
  private cancelled = false;
  private call: ClientReadableStream<WatchNominationsResponse> | undefined;
  private readonly callTimeoutMs: number;
  private readonly onRelist?: (list: ListNominationsResponse) => void;

  constructor(
    private readonly client: PreemptdClient,
    options: WatchOptions,
  ) {
    this.revision = options.afterRevision ?? 0n;
    // A revision to resume from belongs to the epoch the client saw it in.
    this.epoch = this.revision > 0n ? client.epoch : undefined;
    this.callTimeoutMs = options.callTimeoutMs ?? 300_000;
    this.onRelist = options.onRelist;
  }

  cancel(): void {
    this.cancelled = true;
    this.call?.cancel();
  }

  private *relist(listed: ListNominationsResponse): Generator<WatchNominationsResponse> {
    this.relists++;
    this.revision = listed.revision;
    this.epoch = listed.epoch;
    this.onRelist?.(listed);
    for (const n of listed.nominations) {
      yield {
        revision: listed.revision,
        batchRevision: listed.revision,
        type: NominationEventType.NOMINATION_EVENT_TYPE_NOMINATED,
        pod: n.pod,
        node: n.node,
        priority: n.priority,
        initial: true,
        epoch: listed.epoch,
      };
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<WatchNominationsResponse> {
    let delays = backoffDelays(this.client.retry);
    // After UNAVAILABLE the server may have restarted, and a new server's log may already
    // have reached our revision: its events after it would be taken for ours. So the epoch
    // is checked before resuming.
    let verifyEpoch = false;
    try {
      while (!this.cancelled) {
        if (verifyEpoch) {
          let listed: ListNominationsResponse;
          try {
            listed = await this.client.listNominations();
          } catch (error) {
            if (!isServiceError(error) || error.code !== status.UNAVAILABLE) throw error;
            continue; // listNominations has waited with backoff already
          }
          verifyEpoch = false;
          if (listed.epoch !== this.epoch) {
            yield* this.relist(listed);
            continue;
          }
        }
        const call = this.client.stub.watchNominations(
          { afterRevision: this.revision },
          this.client.metadata.clone(),
          { deadline: this.client.deadline(this.callTimeoutMs) },
        );
        this.call = call;
        let relist = false;
        try {
          for await (const event of call as AsyncIterable<WatchNominationsResponse>) {
            delays = backoffDelays(this.client.retry);
            this.client.observeEpoch(event.epoch);
            if (this.epoch !== undefined && event.epoch !== this.epoch) {
              relist = true;
              call.cancel();
              break;
            }
            this.epoch = event.epoch;
            this.revision = event.revision;
            yield event;
            if (this.cancelled) return;
          }
        } catch (error) {
          if (this.cancelled) return;
          if (!isServiceError(error)) throw error;
          if (error.code === status.OUT_OF_RANGE) {
            relist = true;
          } else if (error.code === status.UNAVAILABLE) {
            const delay = delays.next();
            // Keep trying at the longest backoff: a watch outlives restarts.
            await sleep(delay.done ? this.client.retry.maxBackoffMs : delay.value);
            verifyEpoch = this.epoch !== undefined;
          } else if (error.code !== status.DEADLINE_EXCEEDED && error.code !== status.RESOURCE_EXHAUSTED) {
            throw error;
          }
        }
        if (relist && !this.cancelled) yield* this.relist(await this.client.listNominations());
        else this.resumes++;
      }
    } finally {
      this.call?.cancel();
    }
  }
}
