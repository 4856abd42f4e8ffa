package io.github.preemptd.client;

import io.github.preemptd.client.PreemptdClient.PreemptOptions;
import io.grpc.InsecureChannelCredentials;
import io.grpc.TlsChannelCredentials;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import preemptd.v1.Preemptd.PreemptResponse;
import preemptd.v1.Preemptd.SyncResponse;

/**
 * Loads examples/cluster.json through Sync, asks Preempt for examples/pod.json, prints the
 * decision, then follows WatchNominations for a while. Arguments: [address] [seconds to follow]
 * [examples directory, default ../../examples: run from clients/java], then, against {@code
 * preemptd serve --tls-cert ... --authz ...}, {@code --ca-cert ca.crt --token-file writer.token}.
 */
public final class Example {
  public static void main(String[] arguments) throws Exception {
    List<String> args = new ArrayList<>();
    Path caCert = null;
    Path tokenFile = null;
    for (int i = 0; i < arguments.length; i++) {
      switch (arguments[i]) {
        case "--ca-cert" -> caCert = Path.of(arguments[++i]);
        case "--token-file" -> tokenFile = Path.of(arguments[++i]);
        default -> args.add(arguments[i]);
      }
    }
    String address = args.size() > 0 ? args.get(0) : "127.0.0.1:50051";
    long followSeconds = args.size() > 1 ? Long.parseLong(args.get(1)) : 2;
    Path examples = Path.of(args.size() > 2 ? args.get(2) : "../../examples");

    PreemptdClient.Builder builder =
        PreemptdClient.builder(address)
            .credentials(
                caCert == null
                    ? InsecureChannelCredentials.create()
                    : TlsChannelCredentials.newBuilder().trustManager(caCert.toFile()).build());
    if (tokenFile != null) {
      builder.token(Files.readString(tokenFile).strip());
    }
    try (PreemptdClient client =
        builder
            .callTimeout(Duration.ofSeconds(10))
            .onEpochChange(
                (previous, current) ->
                    System.err.printf(
                        "server restarted (epoch %s -> %s): push the cluster state again%n",
                        previous, current))
            .build()) {
      SyncResponse report =
          client.syncList(Files.readString(examples.resolve("cluster.json")), false);
      System.out.printf(
          "loaded %d nodes, %d pods, %d budgets (%d rejected)%n",
          report.getApplied().getNodes(),
          report.getApplied().getPods(),
          report.getApplied().getPdbs(),
          report.getRejected());

      PreemptResponse decision =
          client.preemptJson(Files.readString(examples.resolve("pod.json")), PreemptOptions.COMMIT);
      System.out.printf(
          "decision: %s node=%s victims=%s%n  %s%n",
          decision.getOutcome(),
          decision.getNominatedNodeName(),
          decision.getVictimsList().stream()
              .map(v -> v.getNamespace() + "/" + v.getName())
              .collect(Collectors.toList()),
          decision.getMessage());

      try (NominationWatch watch =
          client.watchNominations(
              0,
              e ->
                  System.out.printf(
                      "revision %d: %s %s/%s on %s (initial=%b)%n",
                      e.getRevision(),
                      e.getType(),
                      e.getPod().getNamespace(),
                      e.getPod().getName(),
                      e.getNode(),
                      e.getInitial()))) {
        Thread.sleep(Duration.ofSeconds(followSeconds).toMillis());
        if (watch.failure() != null) {
          throw new IllegalStateException("watch failed", watch.failure());
        }
      }
    }
  }
}
