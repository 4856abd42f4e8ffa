package io.github.preemptd.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import preemptd.v1.Preemptd.Affinity;
import preemptd.v1.Preemptd.AllDisruptionMode;
import preemptd.v1.Preemptd.BasicSchedulingPolicy;
import preemptd.v1.Preemptd.Container;
import preemptd.v1.Preemptd.ContainerImage;
import preemptd.v1.Preemptd.ContainerPort;
import preemptd.v1.Preemptd.DisruptionMode;
import preemptd.v1.Preemptd.GangSchedulingPolicy;
import preemptd.v1.Preemptd.LabelSelector;
import preemptd.v1.Preemptd.LabelSelectorRequirement;
import preemptd.v1.Preemptd.Node;
import preemptd.v1.Preemptd.NodeAffinity;
import preemptd.v1.Preemptd.NodeCondition;
import preemptd.v1.Preemptd.NodeSelector;
import preemptd.v1.Preemptd.NodeSelectorRequirement;
import preemptd.v1.Preemptd.NodeSelectorTerm;
import preemptd.v1.Preemptd.Pod;
import preemptd.v1.Preemptd.PodAffinity;
import preemptd.v1.Preemptd.PodAffinityTerm;
import preemptd.v1.Preemptd.PodAntiAffinity;
import preemptd.v1.Preemptd.PodCondition;
import preemptd.v1.Preemptd.PodDisruptionBudget;
import preemptd.v1.Preemptd.PodGroup;
import preemptd.v1.Preemptd.PodGroupSchedulingPolicy;
import preemptd.v1.Preemptd.PodGroupTemplate;
import preemptd.v1.Preemptd.PodSchedulingGroup;
import preemptd.v1.Preemptd.PreferredSchedulingTerm;
import preemptd.v1.Preemptd.ResourceRequirements;
import preemptd.v1.Preemptd.SingleDisruptionMode;
import preemptd.v1.Preemptd.SyncRequest;
import preemptd.v1.Preemptd.Taint;
import preemptd.v1.Preemptd.Toleration;
import preemptd.v1.Preemptd.TopologySpreadConstraint;
import preemptd.v1.Preemptd.UpdateNodeRequest;
import preemptd.v1.Preemptd.UpdatePodDisruptionBudgetRequest;
import preemptd.v1.Preemptd.UpdatePodGroupRequest;
import preemptd.v1.Preemptd.UpdatePodRequest;
import preemptd.v1.Preemptd.UpdateWorkloadRequest;
import preemptd.v1.Preemptd.WeightedPodAffinityTerm;
import preemptd.v1.Preemptd.Workload;
import preemptd.v1.Preemptd.WorkloadReference;

/**
 * Kubernetes JSON (as {@code kubectl get -o json} prints it) to preemptd's typed messages, field
 * by field as the proto documents: names in snake_case, enum-like strings kept as they are,
 * quantities as strings, resourceVersion as a number. Values are checked by the server, not
 * here; only JSON of the wrong shape is an error ({@link IllegalArgumentException} naming the
 * field). Two pieces of API-server defaulting that the typed messages cannot express are
 * applied: with spec.hostNetwork, a port without hostPort gets hostPort = containerPort, and
 * status.disruptedPods (a map) becomes the list of its pod names.
 */
public final class KubernetesObjects {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
  private static final String REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution";
  private static final String PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution";

  private KubernetesObjects() {}

  /** A typed node as a Sync item (an UpdateNode upsert). */
  public static SyncRequest item(Node node) {
    return SyncRequest.newBuilder().setNode(UpdateNodeRequest.newBuilder().setUpsert(node)).build();
  }

  /** A typed pod as a Sync item (an UpdatePod upsert). */
  public static SyncRequest item(Pod pod) {
    return SyncRequest.newBuilder().setPod(UpdatePodRequest.newBuilder().setUpsert(pod)).build();
  }

  /** A typed PodDisruptionBudget as a Sync item. */
  public static SyncRequest item(PodDisruptionBudget pdb) {
    return SyncRequest.newBuilder()
        .setPdb(UpdatePodDisruptionBudgetRequest.newBuilder().setUpsert(pdb))
        .build();
  }

  /** A typed PodGroup as a Sync item. */
  public static SyncRequest item(PodGroup group) {
    return SyncRequest.newBuilder()
        .setPodGroup(UpdatePodGroupRequest.newBuilder().setUpsert(group))
        .build();
  }

  /** A typed Workload as a Sync item. */
  public static SyncRequest item(Workload workload) {
    return SyncRequest.newBuilder()
        .setWorkload(UpdateWorkloadRequest.newBuilder().setUpsert(workload))
        .build();
  }

  /**
   * The update for one Node, Pod, PodDisruptionBudget, PodGroup or Workload (by its kind): its
   * JSON as upsert_json,
   * or with {@code typed} the converted message.
   */
  public static SyncRequest item(String objectJson, boolean typed) {
    JsonNode obj = parse(objectJson);
    return itemOf(new At(obj, ""), objectJson, "", typed);
  }

  /**
   * One update per item of a Kubernetes List (kind List, NodeList, PodList, ... or any object
   * with items); a single object gives one item.
   */
  public static List<SyncRequest> items(String listJson, boolean typed) {
    JsonNode list = parse(listJson);
    String kind = list.path("kind").asText("");
    JsonNode items = list.get("items");
    if ((items == null || items.isNull()) && !kind.endsWith("List")) {
      return List.of(itemOf(new At(list, ""), listJson, "", typed));
    }
    String defaultKind = kind.endsWith("List") ? kind.substring(0, kind.length() - 4) : "";
    List<SyncRequest> out = new ArrayList<>();
    if (items == null || items.isNull()) {
      return out;
    }
    if (!items.isArray()) {
      throw new IllegalArgumentException("items: expected a list");
    }
    for (int i = 0; i < items.size(); i++) {
      JsonNode item = items.get(i);
      out.add(itemOf(new At(item, "items[" + i + "]"), item.toString(), defaultKind, typed));
    }
    return out;
  }

  /** Converts a Kubernetes v1 Node. */
  public static Node node(String json) {
    return node(new At(parse(json), ""));
  }

  /** Converts a Kubernetes v1 Pod. */
  public static Pod pod(String json) {
    return pod(new At(parse(json), ""));
  }

  /** Converts a Kubernetes policy/v1 PodDisruptionBudget. */
  public static PodDisruptionBudget podDisruptionBudget(String json) {
    return pdb(new At(parse(json), ""));
  }

  /** Converts a Kubernetes scheduling.k8s.io/v1beta1 PodGroup. */
  public static PodGroup podGroup(String json) {
    return podGroup(new At(parse(json), ""));
  }

  /** Converts a Kubernetes scheduling.k8s.io/v1beta1 Workload. */
  public static Workload workload(String json) {
    return workload(new At(parse(json), ""));
  }

  private static JsonNode parse(String json) {
    try {
      JsonNode node = JSON.readTree(json);
      if (node == null || !node.isObject()) {
        throw new IllegalArgumentException("expected a JSON object");
      }
      return node;
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getOriginalMessage(), e);
    }
  }

  private static SyncRequest itemOf(At obj, String raw, String defaultKind, boolean typed) {
    String kind = obj.str("kind");
    if (kind.isEmpty()) {
      kind = defaultKind;
    }
    switch (kind) {
      case "Node":
        return typed
            ? item(node(obj))
            : SyncRequest.newBuilder()
                .setNode(UpdateNodeRequest.newBuilder().setUpsertJson(raw))
                .build();
      case "Pod":
        return typed
            ? item(pod(obj))
            : SyncRequest.newBuilder().setPod(UpdatePodRequest.newBuilder().setUpsertJson(raw)).build();
      case "PodDisruptionBudget":
        return typed
            ? item(pdb(obj))
            : SyncRequest.newBuilder()
                .setPdb(UpdatePodDisruptionBudgetRequest.newBuilder().setUpsertJson(raw))
                .build();
      case "PodGroup":
        return typed
            ? item(podGroup(obj))
            : SyncRequest.newBuilder()
                .setPodGroup(UpdatePodGroupRequest.newBuilder().setUpsertJson(raw))
                .build();
      case "Workload":
        return typed
            ? item(workload(obj))
            : SyncRequest.newBuilder()
                .setWorkload(UpdateWorkloadRequest.newBuilder().setUpsertJson(raw))
                .build();
      default:
        throw new IllegalArgumentException(
            obj.path("kind")
                + ": unsupported kind \""
                + kind
                + "\": supported kinds are \"Node\", \"Pod\", \"PodDisruptionBudget\","
                + " \"PodGroup\", \"Workload\"");
    }
  }

  // -------------------------------------------------------------------------------------
  // A JSON object read with field paths in errors; missing fields and null read as empty.

  private record At(JsonNode node, String path) {
    String path(String key) {
      return path.isEmpty() ? key : path + "." + key;
    }

    boolean has(String key) {
      JsonNode v = node == null ? null : node.get(key);
      return v != null && !v.isNull();
    }

    private JsonNode value(String key) {
      JsonNode v = node == null ? null : node.get(key);
      return v == null || v.isNull() ? null : v;
    }

    At obj(String key) {
      JsonNode v = value(key);
      if (v != null && !v.isObject()) {
        throw new IllegalArgumentException(path(key) + ": expected an object");
      }
      return new At(v, path(key));
    }

    String str(String key) {
      JsonNode v = value(key);
      if (v == null) {
        return "";
      }
      if (!v.isTextual()) {
        throw new IllegalArgumentException(path(key) + ": expected a string");
      }
      return v.textValue();
    }

    boolean bool(String key) {
      JsonNode v = value(key);
      if (v == null) {
        return false;
      }
      if (!v.isBoolean()) {
        throw new IllegalArgumentException(path(key) + ": expected a boolean");
      }
      return v.booleanValue();
    }

    Integer int32(String key) {
      JsonNode v = value(key);
      if (v == null) {
        return null;
      }
      if (!v.isIntegralNumber() || !v.canConvertToInt()) {
        throw new IllegalArgumentException(path(key) + ": expected a 32-bit integer");
      }
      return v.intValue();
    }

    Long int64(String key) {
      JsonNode v = value(key);
      if (v == null) {
        return null;
      }
      if (!v.isIntegralNumber() || !v.canConvertToLong()) {
        throw new IllegalArgumentException(path(key) + ": expected an integer");
      }
      return v.longValue();
    }

    List<At> list(String key) {
      JsonNode v = value(key);
      List<At> out = new ArrayList<>();
      if (v == null) {
        return out;
      }
      if (!v.isArray()) {
        throw new IllegalArgumentException(path(key) + ": expected a list");
      }
      for (int i = 0; i < v.size(); i++) {
        JsonNode e = v.get(i);
        String p = path(key) + "[" + i + "]";
        if (!e.isNull() && !e.isObject()) {
          throw new IllegalArgumentException(p + ": expected an object");
        }
        out.add(new At(e.isNull() ? null : e, p));
      }
      return out;
    }

    List<String> strings(String key) {
      JsonNode v = value(key);
      List<String> out = new ArrayList<>();
      if (v == null) {
        return out;
      }
      if (!v.isArray()) {
        throw new IllegalArgumentException(path(key) + ": expected a list");
      }
      for (int i = 0; i < v.size(); i++) {
        if (!v.get(i).isTextual()) {
          throw new IllegalArgumentException(path(key) + "[" + i + "]: expected a string");
        }
        out.add(v.get(i).textValue());
      }
      return out;
    }

    private Map<String, String> map(String key, Function<Map.Entry<String, JsonNode>, String> f) {
      JsonNode v = value(key);
      Map<String, String> out = new LinkedHashMap<>();
      if (v == null) {
        return out;
      }
      if (!v.isObject()) {
        throw new IllegalArgumentException(path(key) + ": expected an object");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        out.put(e.getKey(), f.apply(e));
      }
      return out;
    }

    Map<String, String> stringMap(String key) {
      return map(
          key,
          e -> {
            if (!e.getValue().isTextual()) {
              throw new IllegalArgumentException(
                  path(key) + "[" + e.getKey() + "]: expected a string");
            }
            return e.getValue().textValue();
          });
    }

    /** A resource list; a quantity may be a string or a JSON number, and null is zero. */
    Map<String, String> quantities(String key) {
      return map(
          key,
          e -> {
            JsonNode q = e.getValue();
            if (q.isNull()) {
              return "0";
            }
            if (q.isTextual()) {
              return q.textValue();
            }
            if (q.isNumber()) {
              return q.decimalValue().toPlainString();
            }
            throw new IllegalArgumentException(
                path(key) + "[" + e.getKey() + "]: expected a quantity (a string or a number)");
          });
    }

    long resourceVersion(String key) {
      JsonNode v = value(key);
      if (v == null) {
        return 0;
      }
      String text = v.isNumber() ? v.asText() : v.isTextual() ? v.textValue() : null;
      if (text == null) {
        throw new IllegalArgumentException(path(key) + ": expected a string");
      }
      if (text.isEmpty()) {
        return 0;
      }
      try {
        return Long.parseUnsignedLong(text);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            path(key) + ": invalid resource version \"" + text + "\"");
      }
    }
  }

  // -------------------------------------------------------------------------------------
  // Objects.

  private static Node node(At o) {
    At meta = o.obj("metadata");
    At spec = o.obj("spec");
    At status = o.obj("status");
    Node.Builder n =
        Node.newBuilder()
            .setName(meta.str("name"))
            .setUid(meta.str("uid"))
            .setResourceVersion(meta.resourceVersion("resourceVersion"))
            .putAllLabels(meta.stringMap("labels"))
            .setUnschedulable(spec.bool("unschedulable"))
            .putAllAllocatable(status.quantities("allocatable"))
            // Read by a placement policy's termination-notice signals.
            .putAllAnnotations(meta.stringMap("annotations"));
    for (At c : status.list("conditions")) {
      n.addConditions(
          NodeCondition.newBuilder()
              .setType(c.str("type"))
              .setStatus(c.str("status"))
              .setReason(c.str("reason"))
              .setMessage(c.str("message")));
    }
    for (At t : spec.list("taints")) {
      n.addTaints(
          Taint.newBuilder()
              .setKey(t.str("key"))
              .setValue(t.str("value"))
              .setEffect(t.str("effect")));
    }
    // Read by scoring (ImageLocality).
    for (At image : status.list("images")) {
      Long size = image.int64("sizeBytes");
      n.addImages(
          ContainerImage.newBuilder()
              .addAllNames(image.strings("names"))
              .setSizeBytes(size == null ? 0 : size));
    }
    return n.build();
  }

  private static PodDisruptionBudget pdb(At o) {
    At meta = o.obj("metadata");
    At spec = o.obj("spec");
    At status = o.obj("status");
    PodDisruptionBudget.Builder p =
        PodDisruptionBudget.newBuilder()
            .setNamespace(meta.str("namespace"))
            .setName(meta.str("name"))
            .setUid(meta.str("uid"))
            .setResourceVersion(meta.resourceVersion("resourceVersion"));
    Integer allowed = status.int32("disruptionsAllowed");
    if (allowed != null) {
      p.setDisruptionsAllowed(allowed);
    }
    if (spec.has("selector")) {
      p.setSelector(labelSelector(spec.obj("selector")));
    }
    At disrupted = status.obj("disruptedPods");
    if (disrupted.node() != null) {
      TreeSet<String> names = new TreeSet<>();
      disrupted.node().fieldNames().forEachRemaining(names::add);
      p.addAllDisruptedPods(names);
    }
    return p.build();
  }

  private static Pod pod(At o) {
    At meta = o.obj("metadata");
    At spec = o.obj("spec");
    At status = o.obj("status");
    boolean hostNetwork = spec.bool("hostNetwork");
    Pod.Builder p =
        Pod.newBuilder()
            .setNamespace(meta.str("namespace"))
            .setName(meta.str("name"))
            .setUid(meta.str("uid"))
            .setResourceVersion(meta.resourceVersion("resourceVersion"))
            .putAllLabels(meta.stringMap("labels"))
            .setNodeName(spec.str("nodeName"))
            .setSchedulerName(spec.str("schedulerName"))
            .setPriorityClassName(spec.str("priorityClassName"))
            .setPreemptionPolicy(spec.str("preemptionPolicy"))
            .addAllContainers(containers(spec, "containers", hostNetwork))
            .addAllInitContainers(containers(spec, "initContainers", hostNetwork))
            .putAllOverhead(spec.quantities("overhead"))
            .putAllNodeSelector(spec.stringMap("nodeSelector"))
            .setStartTime(status.str("startTime"))
            .setNominatedNodeName(status.str("nominatedNodeName"))
            .setPhase(status.str("phase"));
    if (meta.has("deletionTimestamp")) {
      p.setDeletionTimestamp(meta.str("deletionTimestamp"));
    }
    Integer priority = spec.int32("priority");
    if (priority != null) {
      p.setPriority(priority);
    }
    if (spec.has("resources")) {
      At r = spec.obj("resources");
      p.setResources(
          ResourceRequirements.newBuilder()
              .putAllRequests(r.quantities("requests"))
              .putAllLimits(r.quantities("limits")));
    }
    for (At t : spec.list("tolerations")) {
      Toleration.Builder tb =
          Toleration.newBuilder()
              .setKey(t.str("key"))
              .setOperator(t.str("operator"))
              .setValue(t.str("value"))
              .setEffect(t.str("effect"));
      Long seconds = t.int64("tolerationSeconds");
      if (seconds != null) {
        tb.setTolerationSeconds(seconds);
      }
      p.addTolerations(tb);
    }
    if (spec.has("affinity")) {
      p.setAffinity(affinity(spec.obj("affinity")));
    }
    for (At c : spec.list("topologySpreadConstraints")) {
      TopologySpreadConstraint.Builder tb =
          TopologySpreadConstraint.newBuilder()
              .setTopologyKey(c.str("topologyKey"))
              .setWhenUnsatisfiable(c.str("whenUnsatisfiable"))
              .addAllMatchLabelKeys(c.strings("matchLabelKeys"))
              .setNodeAffinityPolicy(c.str("nodeAffinityPolicy"))
              .setNodeTaintsPolicy(c.str("nodeTaintsPolicy"));
      Integer skew = c.int32("maxSkew");
      if (skew != null) {
        tb.setMaxSkew(skew);
      }
      Integer minDomains = c.int32("minDomains");
      if (minDomains != null) {
        tb.setMinDomains(minDomains);
      }
      if (c.has("labelSelector")) {
        tb.setLabelSelector(labelSelector(c.obj("labelSelector")));
      }
      p.addTopologySpreadConstraints(tb);
    }
    for (At c : status.list("conditions")) {
      p.addConditions(
          PodCondition.newBuilder()
              .setType(c.str("type"))
              .setStatus(c.str("status"))
              .setReason(c.str("reason")));
    }
    if (spec.has("schedulingGroup")) {
      p.setSchedulingGroup(
          PodSchedulingGroup.newBuilder()
              .setPodGroupName(spec.obj("schedulingGroup").str("podGroupName")));
    }
    return p.build();
  }

  /** Keeps presence: each scheduling policy and disruption mode is set by being present. */
  private static PodGroup podGroup(At o) {
    At meta = o.obj("metadata");
    At spec = o.obj("spec");
    PodGroup.Builder g =
        PodGroup.newBuilder()
            .setNamespace(meta.str("namespace"))
            .setName(meta.str("name"))
            .setUid(meta.str("uid"))
            .setResourceVersion(meta.resourceVersion("resourceVersion"))
            .setCreationTimestamp(meta.str("creationTimestamp"))
            .setPriorityClassName(spec.str("priorityClassName"))
            .setPreemptionPolicy(spec.str("preemptionPolicy"))
            .setParentCompositePodGroupName(spec.str("parentCompositePodGroupName"));
    if (spec.has("schedulingPolicy")) {
      At policy = spec.obj("schedulingPolicy");
      PodGroupSchedulingPolicy.Builder pb = PodGroupSchedulingPolicy.newBuilder();
      if (policy.has("basic")) {
        policy.obj("basic");
        pb.setBasic(BasicSchedulingPolicy.getDefaultInstance());
      }
      if (policy.has("gang")) {
        Integer minCount = policy.obj("gang").int32("minCount");
        pb.setGang(GangSchedulingPolicy.newBuilder().setMinCount(minCount == null ? 0 : minCount));
      }
      g.setSchedulingPolicy(pb);
    }
    if (spec.has("disruptionMode")) {
      At mode = spec.obj("disruptionMode");
      DisruptionMode.Builder mb = DisruptionMode.newBuilder();
      if (mode.has("single")) {
        mode.obj("single");
        mb.setSingle(SingleDisruptionMode.getDefaultInstance());
      }
      if (mode.has("all")) {
        mode.obj("all");
        mb.setAll(AllDisruptionMode.getDefaultInstance());
      }
      g.setDisruptionMode(mb);
    }
    Integer priority = spec.int32("priority");
    if (priority != null) {
      g.setPriority(priority);
    }
    if (spec.has("workloadRef")) {
      At ref = spec.obj("workloadRef");
      g.setWorkloadRef(
          WorkloadReference.newBuilder()
              .setWorkloadName(ref.str("workloadName"))
              .setTemplateName(ref.str("templateName")));
    }
    return g.build();
  }

  private static Workload workload(At o) {
    At meta = o.obj("metadata");
    Workload.Builder w =
        Workload.newBuilder()
            .setNamespace(meta.str("namespace"))
            .setName(meta.str("name"))
            .setUid(meta.str("uid"))
            .setResourceVersion(meta.resourceVersion("resourceVersion"));
    for (At t : o.obj("spec").list("podGroupTemplates")) {
      w.addPodGroupTemplates(PodGroupTemplate.newBuilder().setName(t.str("name")));
    }
    return w.build();
  }

  private static List<Container> containers(At spec, String key, boolean hostNetwork) {
    List<Container> out = new ArrayList<>();
    for (At c : spec.list(key)) {
      At resources = c.obj("resources");
      Container.Builder cb =
          Container.newBuilder()
              .setName(c.str("name"))
              .setImage(c.str("image"))
              .putAllRequests(resources.quantities("requests"))
              .putAllLimits(resources.quantities("limits"))
              .setRestartPolicy(c.str("restartPolicy"));
      for (At port : c.list("ports")) {
        Integer hostPort = port.int32("hostPort");
        Integer containerPort = port.int32("containerPort");
        int host = hostPort == null ? 0 : hostPort;
        int container = containerPort == null ? 0 : containerPort;
        if (hostNetwork && host == 0) {
          host = container;
        }
        cb.addPorts(
            ContainerPort.newBuilder()
                .setHostPort(host)
                .setProtocol(port.str("protocol"))
                .setHostIp(port.str("hostIP"))
                .setContainerPort(container));
      }
      out.add(cb.build());
    }
    return out;
  }

  /** Keeps presence: callers set it only when present (absent matches nothing). */
  private static LabelSelector labelSelector(At s) {
    LabelSelector.Builder b = LabelSelector.newBuilder().putAllMatchLabels(s.stringMap("matchLabels"));
    for (At r : s.list("matchExpressions")) {
      b.addMatchExpressions(
          LabelSelectorRequirement.newBuilder()
              .setKey(r.str("key"))
              .setOperator(r.str("operator"))
              .addAllValues(r.strings("values")));
    }
    return b.build();
  }

  private static Affinity affinity(At a) {
    Affinity.Builder b = Affinity.newBuilder();
    if (a.has("nodeAffinity")) {
      At na = a.obj("nodeAffinity");
      NodeAffinity.Builder nb = NodeAffinity.newBuilder();
      if (na.has(REQUIRED)) {
        NodeSelector.Builder sb = NodeSelector.newBuilder();
        for (At t : na.obj(REQUIRED).list("nodeSelectorTerms")) {
          sb.addNodeSelectorTerms(
              NodeSelectorTerm.newBuilder()
                  .addAllMatchExpressions(nodeRequirements(t, "matchExpressions"))
                  .addAllMatchFields(nodeRequirements(t, "matchFields")));
        }
        nb.setRequiredDuringSchedulingIgnoredDuringExecution(sb);
      }
      for (At p : na.list(PREFERRED)) {
        Integer weight = p.int32("weight");
        PreferredSchedulingTerm.Builder pb =
            PreferredSchedulingTerm.newBuilder().setWeight(weight == null ? 0 : weight);
        if (p.has("preference")) {
          At t = p.obj("preference");
          pb.setPreference(
              NodeSelectorTerm.newBuilder()
                  .addAllMatchExpressions(nodeRequirements(t, "matchExpressions"))
                  .addAllMatchFields(nodeRequirements(t, "matchFields")));
        }
        nb.addPreferredDuringSchedulingIgnoredDuringExecution(pb);
      }
      b.setNodeAffinity(nb);
    }
    if (a.has("podAffinity")) {
      At pa = a.obj("podAffinity");
      b.setPodAffinity(
          PodAffinity.newBuilder()
              .addAllRequiredDuringSchedulingIgnoredDuringExecution(podAffinityTerms(pa.list(REQUIRED)))
              .addAllPreferredDuringSchedulingIgnoredDuringExecution(weightedTerms(pa)));
    }
    if (a.has("podAntiAffinity")) {
      At pa = a.obj("podAntiAffinity");
      b.setPodAntiAffinity(
          PodAntiAffinity.newBuilder()
              .addAllRequiredDuringSchedulingIgnoredDuringExecution(podAffinityTerms(pa.list(REQUIRED)))
              .addAllPreferredDuringSchedulingIgnoredDuringExecution(weightedTerms(pa)));
    }
    return b.build();
  }

  private static List<WeightedPodAffinityTerm> weightedTerms(At a) {
    List<WeightedPodAffinityTerm> out = new ArrayList<>();
    for (At w : a.list(PREFERRED)) {
      Integer weight = w.int32("weight");
      WeightedPodAffinityTerm.Builder wb =
          WeightedPodAffinityTerm.newBuilder().setWeight(weight == null ? 0 : weight);
      if (w.has("podAffinityTerm")) {
        wb.setPodAffinityTerm(podAffinityTerms(List.of(w.obj("podAffinityTerm"))).get(0));
      }
      out.add(wb.build());
    }
    return out;
  }

  private static List<NodeSelectorRequirement> nodeRequirements(At term, String key) {
    List<NodeSelectorRequirement> out = new ArrayList<>();
    for (At r : term.list(key)) {
      out.add(
          NodeSelectorRequirement.newBuilder()
              .setKey(r.str("key"))
              .setOperator(r.str("operator"))
              .addAllValues(r.strings("values"))
              .build());
    }
    return out;
  }

  private static List<PodAffinityTerm> podAffinityTerms(List<At> terms) {
    List<PodAffinityTerm> out = new ArrayList<>();
    for (At t : terms) {
      PodAffinityTerm.Builder tb =
          PodAffinityTerm.newBuilder()
              .addAllNamespaces(t.strings("namespaces"))
              .setTopologyKey(t.str("topologyKey"));
      if (t.has("labelSelector")) {
        tb.setLabelSelector(labelSelector(t.obj("labelSelector")));
      }
      if (t.has("namespaceSelector")) {
        tb.setNamespaceSelector(labelSelector(t.obj("namespaceSelector")));
      }
      out.add(tb.build());
    }
    return out;
  }
}
