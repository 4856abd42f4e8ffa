// The retry and deadline contract every preemptd client follows (docs/clients.md): 5
// attempts, 50 ms backoff doubling to 2 s, retries on UNAVAILABLE and RESOURCE_EXHAUSTED
// only, one deadline over the call and its retries, timeouts of 0 or less refused. Checked
// against an in-process server that answers what each test needs and counts the calls.

import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { Server as GrpcServer, ServerCredentials, type ServerUnaryCall, type sendUnaryData, status } from "@grpc/grpc-js";

import { DEFAULT_RETRY, Outcome, PreemptdClient, type PreemptRequest, PreemptResponse, PreemptionService } from "../src";

class Scripted {
  codes: status[] = [];
  calls = 0;
  private readonly server = new GrpcServer();
  address = "";

  async start(): Promise<this> {
    this.server.addService(PreemptionService, {
      preempt: (_call: ServerUnaryCall<PreemptRequest, PreemptResponse>, callback: sendUnaryData<PreemptResponse>) => {
        this.calls++;
        const code = this.codes.shift();
        if (code !== undefined) callback({ code, details: `scripted ${status[code]}` });
        else callback(null, PreemptResponse.fromPartial({ outcome: Outcome.OUTCOME_FITS, epoch: "scripted" }));
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, p) => (error ? reject(error) : resolve(p))),
    );
    this.address = `127.0.0.1:${port}`;
    return this;
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

const POD = { kind: "Pod", metadata: { name: "p" } };
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function scripted(codes: status[], options = {}): Promise<[Scripted, PreemptdClient]> {
  const server = await new Scripted().start();
  server.codes = codes;
  const client = new PreemptdClient(server.address, options);
  cleanups.push(() => client.close(), () => server.stop());
  return [server, client];
}

test("the defaults are the shared contract", () => {
  assert.deepEqual([DEFAULT_RETRY.attempts, DEFAULT_RETRY.initialBackoffMs, DEFAULT_RETRY.maxBackoffMs], [5, 50, 2000]);
  const client = new PreemptdClient("127.0.0.1:1");
  cleanups.push(() => client.close());
  assert.equal(client.timeoutMs, 10_000);
});

for (const code of [status.UNAVAILABLE, status.RESOURCE_EXHAUSTED]) {
  test(`${status[code]} is retried`, async () => {
    const [server, client] = await scripted([code, code]);
    assert.equal((await client.preempt(POD)).epoch, "scripted");
    assert.equal(server.calls, 3);
  });
}

test("other codes are not retried", async () => {
  const [server, client] = await scripted([status.INVALID_ARGUMENT]);
  await assert.rejects(client.preempt(POD), { code: status.INVALID_ARGUMENT });
  assert.equal(server.calls, 1);
});

test("attempts are bounded", async () => {
  const [server, client] = await scripted(Array(10).fill(status.UNAVAILABLE));
  await assert.rejects(client.preempt(POD), { code: status.UNAVAILABLE });
  assert.equal(server.calls, 5);
});

test("the deadline covers the retries", async () => {
  // Were the timeout per attempt, 1000 attempts 200 ms apart would take over 3 minutes.
  const retry = { attempts: 1000, initialBackoffMs: 200, maxBackoffMs: 200 };
  const [server, client] = await scripted(Array(1000).fill(status.UNAVAILABLE), { retry });
  const started = Date.now();
  await assert.rejects(client.preempt(POD, { timeoutMs: 1000 }));
  assert.ok(Date.now() - started < 30_000);
  assert.ok(server.calls < 1000, `${server.calls} calls`);
});

for (const timeoutMs of [0, -1]) {
  test(`a timeout of ${timeoutMs} is refused`, async () => {
    assert.throws(() => new PreemptdClient("127.0.0.1:1", { timeoutMs }), /timeoutMs must be a positive number/);
    const client = new PreemptdClient("127.0.0.1:1");
    cleanups.push(() => client.close());
    await assert.rejects(client.preempt(POD, { timeoutMs }), /timeoutMs must be a positive number/);
  });
}
