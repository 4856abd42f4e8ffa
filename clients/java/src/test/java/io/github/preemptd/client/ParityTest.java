package io.github.preemptd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.util.JsonFormat;
import io.github.preemptd.client.PreemptdClient.PlanDrainOptions;
import io.github.preemptd.client.PreemptdClient.PreemptOptions;
import io.grpc.ChannelCredentials;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import preemptd.v1.Preemptd.DrainOutcome;
import preemptd.v1.Preemptd.ObjectRef;
import preemptd.v1.Preemptd.Outcome;
import preemptd.v1.Preemptd.PdbMode;
import preemptd.v1.Preemptd.PlanDrainResponse;
import preemptd.v1.Preemptd.Pod;
import preemptd.v1.Preemptd.PodGroupRef;
import preemptd.v1.Preemptd.PodRef;
import preemptd.v1.Preemptd.PreemptGroupResponse;
import preemptd.v1.Preemptd.PreemptResponse;
import preemptd.v1.Preemptd.SyncRequest;
import preemptd.v1.Preemptd.UpdatePodGroupRequest;

/**
 * One test per row of the client parity table (docs/clients.md) that the conformance and watch
 * tests do not cover already: Preempt by pod_ref, pdb_mode, PlanDrain, per-call deadlines, TLS
 * with bearer tokens, and the converters refusing the shared bad inputs
 * (clients/testdata/bad-objects.json) at their field path.
 */
class ParityTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  static String node(String name, String cpu) {
    return "{\"kind\": \"Node\", \"metadata\": {\"name\": \"%s\"}, \"status\": {\"allocatable\": {\"cpu\": \"%s\", \"pods\": \"10\"}}}"
        .formatted(name, cpu);
  }

  static String pod(String name, String cpu, int priority, String nodeName, String app) {
    return ("{\"kind\": \"Pod\", \"metadata\": {\"namespace\": \"parity\", \"name\": \"%s\", \"uid\": \"uid-%s\","
            + " \"labels\": {\"app\": \"%s\"}}, \"spec\": {\"nodeName\": \"%s\", \"priority\": %d, \"containers\":"
            + " [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"%s\"}}}]}, \"status\": {\"phase\": \"%s\"}}")
        .formatted(name, name, app, nodeName, priority, cpu, nodeName.isEmpty() ? "Pending" : "Running");
  }

  static final String KEEP_VICTIM =
      "{\"kind\": \"PodDisruptionBudget\", \"metadata\": {\"namespace\": \"parity\", \"name\": \"keep-victim\"},"
          + " \"spec\": {\"selector\": {\"matchLabels\": {\"app\": \"victim\"}}}, \"status\": {\"disruptionsAllowed\": 0}}";

  /** A fresh server holding node-a (1 cpu) running "victim", which a budget covers. */
  private static PreemptdServer parityServer(PreemptdClient[] client) throws Exception {
    PreemptdServer server = PreemptdServer.start();
    client[0] = PreemptdClient.connect(server.address());
    var report =
        client[0].syncList(
            "{\"kind\": \"List\", \"items\": [%s, %s, %s]}"
                .formatted(node("node-a", "1"), pod("victim", "1", 0, "node-a", "victim"), KEEP_VICTIM),
            false);
    assertEquals(0, report.getRejected(), () -> report.getRejectionsList().toString());
    return server;
  }

  @Test
  void preemptRefDecidesOnTheCachedPod() throws Exception {
    PreemptdClient[] c = new PreemptdClient[1];
    try (PreemptdServer server = parityServer(c);
        PreemptdClient client = c[0]) {
      client.upsertJson(pod("urgent", "1", 100, "", "urgent"));
      PreemptResponse answer =
          client.preemptRef(
              PodRef.newBuilder().setNamespace("parity").setName("urgent").build(),
              PreemptOptions.DRY_RUN);
      assertEquals(Outcome.OUTCOME_PREEMPT, answer.getOutcome());
      assertEquals("victim", answer.getVictims(0).getName());
      StatusRuntimeException missing =
          assertThrows(
              StatusRuntimeException.class,
              () ->
                  client.preemptRef(
                      PodRef.newBuilder().setNamespace("parity").setName("absent").build(),
                      PreemptOptions.DRY_RUN));
      assertEquals(Status.Code.NOT_FOUND, missing.getStatus().getCode());
    }
  }

  @Test
  void pdbModeStrictRefusesANodeWhoseVictimABudgetProtects() throws Exception {
    PreemptdClient[] c = new PreemptdClient[1];
    try (PreemptdServer server = parityServer(c);
        PreemptdClient client = c[0]) {
      String urgent = pod("urgent", "1", 100, "", "urgent");
      PreemptResponse prefer =
          client.preemptJson(urgent, PreemptOptions.DRY_RUN.withPdbMode(PdbMode.PDB_MODE_PREFER));
      assertEquals(Outcome.OUTCOME_PREEMPT, prefer.getOutcome());
      assertEquals(1, prefer.getPdbViolations());
      PreemptResponse strict =
          client.preemptJson(urgent, PreemptOptions.DRY_RUN.withPdbMode(PdbMode.PDB_MODE_STRICT));
      assertEquals(Outcome.OUTCOME_NO_CANDIDATE, strict.getOutcome());
    }
  }

  @Test
  void planDrainPlacesThePodsOfTheDrainedNode() throws Exception {
    PreemptdClient[] c = new PreemptdClient[1];
    try (PreemptdServer server = parityServer(c);
        PreemptdClient client = c[0]) {
      client.upsertJson(node("node-b", "2"));
      PlanDrainResponse plan = client.planDrain(List.of("node-a"), PlanDrainOptions.DEFAULT);
      assertEquals(1, plan.getPodsCount(), plan::toString);
      assertEquals("victim", plan.getPods(0).getPod().getName());
      assertEquals(DrainOutcome.DRAIN_OUTCOME_FITS, plan.getPods(0).getOutcome());
      assertEquals("node-b", plan.getPods(0).getNodeName());
      assertEquals("keep-victim", plan.getPods(0).getBlockedByPdb().getName());
      StatusRuntimeException empty =
          assertThrows(
              StatusRuntimeException.class, () -> client.planDrain(List.of(), PlanDrainOptions.DEFAULT));
      assertEquals(Status.Code.INVALID_ARGUMENT, empty.getStatus().getCode());
    }
  }

  @Test
  void tlsAndBearerTokensMapToRoles(@TempDir Path dir) throws Exception {
    Path script = PreemptdServer.repoRoot().resolve("clients/testdata/make-tls.sh");
    Process make = new ProcessBuilder(script.toString(), dir.toString()).inheritIO().start();
    assertEquals(0, make.waitFor());
    try (PreemptdServer server =
        PreemptdServer.start(
            "--tls-cert", dir.resolve("server.crt").toString(),
            "--tls-key", dir.resolve("server.key").toString(),
            "--authz", dir.resolve("authz.yaml").toString())) {
      ChannelCredentials tls =
          TlsChannelCredentials.newBuilder().trustManager(dir.resolve("ca.crt").toFile()).build();
      String address = server.address().replace("127.0.0.1", "localhost");
      try (PreemptdClient writer =
              PreemptdClient.builder(address)
                  .credentials(tls)
                  .token(Files.readString(dir.resolve("writer.token")))
                  .build();
          PreemptdClient reader =
              PreemptdClient.builder(address)
                  .credentials(tls)
                  .token(Files.readString(dir.resolve("reader.token")))
                  .build();
          PreemptdClient anonymous = PreemptdClient.builder(address).credentials(tls).build()) {
        assertTrue(writer.upsertJson(node("node-a", "1")).applied());
        assertEquals(
            Outcome.OUTCOME_FITS,
            reader.preemptJson(pod("p", "1", 0, "", "p"), PreemptOptions.DRY_RUN).getOutcome());
        StatusRuntimeException denied =
            assertThrows(StatusRuntimeException.class, () -> reader.upsertJson(node("node-b", "1")));
        assertEquals(Status.Code.PERMISSION_DENIED, denied.getStatus().getCode());
        StatusRuntimeException refused =
            assertThrows(StatusRuntimeException.class, anonymous::listNominations);
        assertEquals(Status.Code.UNAUTHENTICATED, refused.getStatus().getCode());
        // The generated stub shares the client's channel, token included.
        assertTrue(
            !reader
                .stub()
                .listNominations(preemptd.v1.Preemptd.ListNominationsRequest.getDefaultInstance())
                .getEpoch()
                .isEmpty());
      }
    }
  }

  @TestFactory
  Stream<DynamicTest> convertersRefuseBadInputAtItsField() throws Exception {
    JsonNode cases =
        JSON.readTree(PreemptdServer.repoRoot().resolve("clients/testdata/bad-objects.json").toFile())
            .get("cases");
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonNode c : cases) {
      String path = c.get("path").asText();
      tests.add(
          DynamicTest.dynamicTest(
              c.get("name").asText(),
              () -> {
                IllegalArgumentException e =
                    assertThrows(
                        IllegalArgumentException.class,
                        () -> KubernetesObjects.item(c.get("object").toString(), true));
                assertTrue(
                    e.getMessage().startsWith(path + ": "),
                    () -> "error \"" + e.getMessage() + "\" does not start with " + path);
              }));
    }
    String list =
        "{\"kind\": \"List\", \"items\": [%s, %s]}"
            .formatted(node("ok", "1"), cases.get(0).get("object").toString());
    tests.add(
        DynamicTest.dynamicTest(
            "a bad list item is named by its index",
            () -> {
              IllegalArgumentException e =
                  assertThrows(IllegalArgumentException.class, () -> KubernetesObjects.items(list, true));
              assertTrue(e.getMessage().startsWith("items[1].spec.priority: "), e::getMessage);
            }));
    return tests.stream();
  }

  @Test
  void theConverterMatchesTheSharedGolden() throws Exception {
    Path testdata = PreemptdServer.repoRoot().resolve("clients/testdata");
    List<SyncRequest> converted =
        KubernetesObjects.items(Files.readString(testdata.resolve("converter-input.json")), true);
    JsonNode golden = JSON.readTree(testdata.resolve("converter-golden.json").toFile()).get("items");
    assertEquals(golden.size(), converted.size());
    for (int i = 0; i < golden.size(); i++) {
      SyncRequest.Builder want = SyncRequest.newBuilder();
      JsonFormat.parser().merge(golden.get(i).toString(), want);
      assertEquals(want.build(), converted.get(i), "item " + i);
    }
  }

  static String gangPod(String name, int priority, String group, String nodeName) {
    return ("{\"kind\": \"Pod\", \"metadata\": {\"namespace\": \"gang\", \"name\": \"%s\", \"uid\": \"uid-%s\"},"
            + " \"spec\": {\"nodeName\": \"%s\", \"priority\": %d, \"schedulingGroup\": {\"podGroupName\": \"%s\"},"
            + " \"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"8\"}}}]},"
            + " \"status\": {\"phase\": \"%s\"}}")
        .formatted(name, name, nodeName, priority, group, nodeName.isEmpty() ? "Pending" : "Running");
  }

  static String gangGroup(String name, int priority) {
    return ("{\"apiVersion\": \"scheduling.k8s.io/v1beta1\", \"kind\": \"PodGroup\","
            + " \"metadata\": {\"namespace\": \"gang\", \"name\": \"%s\"}, \"spec\": {\"schedulingPolicy\":"
            + " {\"gang\": {\"minCount\": 2}}, \"disruptionMode\": {\"all\": {}}, \"priority\": %d}}")
        .formatted(name, priority);
  }

  @Test
  void preemptGroupEvictsAnAllModeGangForEveryMember() throws Exception {
    try (PreemptdServer server =
            PreemptdServer.start("--kubernetes-version", "1.37", "--feature-gates", "GenericWorkload=true");
        PreemptdClient client = PreemptdClient.connect(server.address())) {
      var report =
          client.syncList(
              "{\"kind\": \"List\", \"items\": [%s, %s, %s, %s, %s]}"
                  .formatted(
                      node("n1", "8"),
                      node("n2", "8"),
                      gangGroup("inference", 100),
                      gangPod("inf-0", 100, "inference", "n1"),
                      gangPod("inf-1", 100, "inference", "n2")),
              true);
      assertEquals(0, report.getRejected(), () -> report.getRejectionsList().toString());
      assertEquals(1, report.getApplied().getPodGroups());
      assertTrue(client.upsertJson(gangGroup("training", 1000)).applied());
      List<Pod> members =
          List.of(
              KubernetesObjects.pod(gangPod("train-1", 1000, "training", "")),
              KubernetesObjects.pod(gangPod("train-0", 1000, "training", "")));
      PreemptGroupResponse answer =
          client.preemptGroup(
              PodGroupRef.newBuilder().setNamespace("gang").setName("training").build(),
              members,
              PreemptOptions.COMMIT);
      assertEquals(Outcome.OUTCOME_PREEMPT, answer.getOutcome(), answer::getMessage);
      assertEquals(
          List.of("inf-0", "inf-1"), answer.getVictimsList().stream().map(PodRef::getName).toList());
      assertEquals(
          List.of("train-0@n1", "train-1@n2"),
          answer.getNominationsList().stream()
              .map(n -> n.getPod().getName() + "@" + n.getNodeName())
              .toList());
      assertEquals(1, answer.getPodGroupDisruptions());
      assertEquals(2, client.listNominations().getNominationsCount());
      StatusRuntimeException missing =
          assertThrows(
              StatusRuntimeException.class,
              () ->
                  client.preemptGroupJson(
                      PodGroupRef.newBuilder().setNamespace("gang").setName("absent").build(),
                      List.of(gangPod("x", 1000, "absent", "")),
                      PreemptOptions.DRY_RUN));
      assertEquals(Status.Code.NOT_FOUND, missing.getStatus().getCode());
      assertTrue(
          client
              .upsert(
                  KubernetesObjects.workload(
                      "{\"kind\": \"Workload\", \"metadata\": {\"namespace\": \"gang\", \"name\": \"job\"},"
                          + " \"spec\": {\"podGroupTemplates\": [{\"name\": \"workers\"}]}}"))
              .applied());
      assertTrue(client.deleteWorkload("gang", "job").applied());
      assertTrue(
          client
              .updatePodGroup(
                  UpdatePodGroupRequest.newBuilder()
                      .setDelete(ObjectRef.newBuilder().setNamespace("gang").setName("training"))
                      .build())
              .applied());
      StatusRuntimeException deleted =
          assertThrows(
              StatusRuntimeException.class,
              () ->
                  client.preemptGroup(
                      PodGroupRef.newBuilder().setNamespace("gang").setName("training").build(),
                      members,
                      PreemptOptions.DRY_RUN));
      assertEquals(Status.Code.NOT_FOUND, deleted.getStatus().getCode());
    }
  }
}
