package io.github.preemptd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.preemptd.client.PreemptdClient.PreemptOptions;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import preemptd.v1.Preemptd.Outcome;
import preemptd.v1.Preemptd.PodRef;
import preemptd.v1.Preemptd.PreemptResponse;
import preemptd.v1.Preemptd.SyncCounts;
import preemptd.v1.Preemptd.SyncRequest;
import preemptd.v1.Preemptd.SyncResponse;

/**
 * Every scenario under $PREEMPTD_SCENARIOS (default tests/conformance, recursively) through the
 * client against one real server, in four modes: JSON or typed objects, loaded through Sync or
 * unary updates. Each scenario deletes its objects again, so the next starts from an empty cache.
 */
class ConformanceTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static PreemptdServer server;
  private static PreemptdClient client;

  @BeforeAll
  static void start() throws Exception {
    server = PreemptdServer.start();
    client = PreemptdClient.connect(server.address());
  }

  @AfterAll
  static void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /** $PREEMPTD_SCENARIOS, or the repository's tests/conformance. */
  static Path scenarioDir() {
    String env = System.getenv("PREEMPTD_SCENARIOS");
    return (env != null && !env.isEmpty()
            ? Path.of(env)
            : PreemptdServer.repoRoot().resolve("tests").resolve("conformance"))
        .toAbsolutePath()
        .normalize();
  }

  static List<Path> scenarioFiles() throws Exception {
    Path dir = scenarioDir();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(dir)) {
      files =
          walk.filter(p -> Files.isRegularFile(p) && p.toString().endsWith(".json"))
              .sorted()
              .collect(Collectors.toList());
    }
    assertFalse(files.isEmpty(), "no scenarios (*.json) in " + dir);
    return files;
  }

  private record Mode(String name, boolean typed, boolean sync) {}

  @TestFactory
  Stream<DynamicNode> everyScenario() throws Exception {
    List<Path> files = scenarioFiles();
    return Stream.of(
            new Mode("json-sync", false, true),
            new Mode("typed-sync", true, true),
            new Mode("json-unary", false, false),
            new Mode("typed-unary", true, false))
        .map(
            mode ->
                DynamicContainer.dynamicContainer(
                    mode.name(),
                    files.stream()
                        .map(
                            file ->
                                DynamicTest.dynamicTest(
                                    scenarioName(file), () -> runNamed(file, mode)))));
  }

  /** The scenario's path under the scenario folder, e.g. random/random-00001.json. */
  private static String scenarioName(Path file) {
    return scenarioDir().relativize(file).toString();
  }

  /** Runs a scenario; a failure's message starts with the scenario and the mode. */
  private static void runNamed(Path file, Mode mode) throws Exception {
    try {
      run(file, mode);
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "scenario " + scenarioName(file) + " [" + mode.name() + "]: " + e.getMessage(), e);
    }
  }

  private static void run(Path file, Mode mode) throws Exception {
    JsonNode scenario = JSON.readTree(file.toFile());
    List<SyncRequest> items =
        KubernetesObjects.items(scenario.get("cluster").toString(), mode.typed());
    try {
      if (mode.sync()) {
        SyncResponse report = client.sync(items);
        assertEquals(0, report.getRejected(), () -> "rejected: " + report.getRejectionsList());
        assertEquals(items.size(), total(report.getApplied()) + total(report.getStale()));
      } else {
        for (SyncRequest item : items) {
          client.update(item);
        }
      }
      String preemptor = scenario.get("preemptor").toString();
      PreemptResponse answer =
          mode.typed()
              ? client.preempt(KubernetesObjects.pod(preemptor), PreemptOptions.DRY_RUN)
              : client.preemptJson(preemptor, PreemptOptions.DRY_RUN);
      check(scenario.get("expect"), answer);
    } finally {
      deleteAll(items);
    }
  }

  private static long total(SyncCounts c) {
    return c.getNodes() + c.getPods() + c.getPdbs();
  }

  private static final Map<Outcome, String> OUTCOMES =
      Map.of(
          Outcome.OUTCOME_PREEMPT, "PREEMPT",
          Outcome.OUTCOME_FITS, "FITS",
          Outcome.OUTCOME_NOT_ELIGIBLE, "NOT_ELIGIBLE",
          Outcome.OUTCOME_NO_CANDIDATE, "NO_CANDIDATE");

  /**
   * As every client's suite does (docs/clients.md): the outcome; for PREEMPT the node (one of
   * nominatedNodeNameAnyOf) and that node's victims and nominations to clear; for FITS the
   * feasible nodes when the scenario lists them.
   */
  private static void check(JsonNode expect, PreemptResponse answer) {
    String outcome = OUTCOMES.getOrDefault(answer.getOutcome(), answer.getOutcome().name());
    assertEquals(expect.get("outcome").asText(), outcome, answer.getMessage());
    if (outcome.equals("PREEMPT")) {
      String node = answer.getNominatedNodeName();
      List<String> anyOf = strings(expect.get("nominatedNodeNameAnyOf"));
      assertTrue(anyOf.contains(node), "node " + node + " not in " + anyOf);
      assertEquals(
          sorted(strings(expect.path("victimsByNode").get(node))),
          refs(answer.getVictimsList()),
          "victims");
      assertEquals(
          sorted(strings(expect.path("nominatedPodsToClearByNode").get(node))),
          refs(answer.getNominatedPodsToClearList()),
          "nominated pods to clear");
    } else if (outcome.equals("FITS") && expect.has("feasibleNodes")) {
      assertEquals(
          sorted(strings(expect.get("feasibleNodes"))),
          sorted(answer.getFeasibleNodesList()),
          "feasible nodes");
    }
  }

  private static List<String> strings(JsonNode array) {
    if (array == null || array.isNull()) {
      return List.of();
    }
    return StreamSupport.stream(array.spliterator(), false)
        .map(JsonNode::asText)
        .collect(Collectors.toList());
  }

  private static List<String> refs(List<PodRef> pods) {
    return sorted(pods.stream().map(p -> p.getNamespace() + "/" + p.getName()).toList());
  }

  private static List<String> sorted(List<String> values) {
    return values.stream().sorted().collect(Collectors.toList());
  }

  /** Pods first, so nodes and budgets leave an empty cache behind; every delete must succeed. */
  private static void deleteAll(List<SyncRequest> items) throws Exception {
    Set<String> seen = new LinkedHashSet<>();
    List<Runnable> deletes = new ArrayList<>();
    for (String kind : List.of("pod", "node", "pdb")) {
      for (SyncRequest item : items) {
        String ns;
        String name;
        Runnable delete;
        if (kind.equals("pod") && item.hasPod()) {
          JsonNode meta = meta(item.getPod().getUpsertJson());
          ns = item.getPod().hasUpsert() ? item.getPod().getUpsert().getNamespace() : meta.path("namespace").asText();
          name = item.getPod().hasUpsert() ? item.getPod().getUpsert().getName() : meta.path("name").asText();
          delete = () -> client.deletePod(ns, name);
        } else if (kind.equals("node") && item.hasNode()) {
          JsonNode meta = meta(item.getNode().getUpsertJson());
          ns = "";
          name = item.getNode().hasUpsert() ? item.getNode().getUpsert().getName() : meta.path("name").asText();
          delete = () -> client.deleteNode(name);
        } else if (kind.equals("pdb") && item.hasPdb()) {
          JsonNode meta = meta(item.getPdb().getUpsertJson());
          ns = item.getPdb().hasUpsert() ? item.getPdb().getUpsert().getNamespace() : meta.path("namespace").asText();
          name = item.getPdb().hasUpsert() ? item.getPdb().getUpsert().getName() : meta.path("name").asText();
          delete = () -> client.deletePodDisruptionBudget(ns, name);
        } else {
          continue;
        }
        if (seen.add(kind + "/" + ns + "/" + name)) {
          deletes.add(delete);
        }
      }
    }
    for (Runnable delete : deletes) {
      try {
        delete.run();
      } catch (StatusRuntimeException e) {
        // NOT_FOUND: the server dropped it already (a Succeeded or Failed pod).
        if (e.getStatus().getCode() != Status.Code.NOT_FOUND) {
          throw e;
        }
      }
    }
  }

  private static JsonNode meta(String json) throws Exception {
    return json.isEmpty() ? JSON.createObjectNode() : JSON.readTree(json).path("metadata");
  }
}
