// Loads examples/cluster.json through Sync, decides examples/pod.json with Preempt (a dry
// run, then for real), prints the decision and follows WatchNominations for a few seconds.
//
//     node dist/examples/example.js --addr 127.0.0.1:50051 [--cluster FILE --pod FILE]
//
// Against `preemptd serve --tls-cert ... --authz ...`: add `--ca-cert ca.crt --token-file
// writer.token`.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { credentials, NominationEventType, Outcome, PreemptdClient, PreemptResponse } from "@preemptd/client";

const EXAMPLES = join(__dirname, "..", "..", "..", "..", "examples");

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      addr: { type: "string", default: "127.0.0.1:50051" },
      "watch-seconds": { type: "string", default: "2" },
      cluster: { type: "string", default: join(EXAMPLES, "cluster.json") },
      pod: { type: "string", default: join(EXAMPLES, "pod.json") },
      "ca-cert": { type: "string" },
      "token-file": { type: "string" },
    },
  });
  const tls = values["ca-cert"] ? credentials.createSsl(readFileSync(values["ca-cert"])) : undefined;
  const token = values["token-file"] ? readFileSync(values["token-file"], "utf8").trim() : undefined;
  const client = new PreemptdClient(values.addr!, {
    credentials: tls,
    token,
    timeoutMs: 10_000,
    onEpochChange: (oldEpoch, newEpoch) => console.log(`server restarted (epoch ${oldEpoch} -> ${newEpoch}): push the cluster again`),
  });

  const synced = await client.syncList(readFileSync(values.cluster!, "utf8"));
  const applied = synced.applied!;
  console.log(`synced ${applied.nodes} nodes, ${applied.pods} pods, ${applied.pdbs} budgets; ${synced.rejected} rejected`);

  const pod = readFileSync(values.pod!, "utf8");
  const plan = await client.preempt(pod, { dryRun: true, explain: true });
  console.log(`dry run: ${Outcome[plan.outcome]} on ${plan.nominatedNodeName}`);
  const decision = await client.preempt(pod);
  console.log(JSON.stringify(PreemptResponse.toJSON(decision), null, 2));

  const watch = client.watchNominations({ afterRevision: plan.nominationsRevision });
  setTimeout(() => watch.cancel(), Number(values["watch-seconds"]) * 1000);
  for await (const event of watch) {
    console.log(`${event.revision}`, NominationEventType[event.type], `${event.pod?.namespace}/${event.pod?.name}`, event.node);
  }
  client.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
