package preemptd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

// The converters turn Kubernetes JSON (as `kubectl get -o json` prints it) into the
// typed messages, field by field as the proto documents: names in snake_case, enum-like
// strings kept as they are, quantities as strings, resourceVersion as a number. Values
// are checked by the server, not here; only JSON of the wrong shape is an error. Two
// pieces of API-server defaulting that the typed messages cannot express are applied:
// with spec.hostNetwork, a port without hostPort gets hostPort = containerPort, and
// status.disruptedPods (a map) becomes the list of its pod names.

// NodeItem wraps a typed node as a Sync item (an UpdateNode upsert).
func NodeItem(n *pb.Node) *pb.SyncRequest {
	return &pb.SyncRequest{Item: &pb.SyncRequest_Node{Node: &pb.UpdateNodeRequest{Change: &pb.UpdateNodeRequest_Upsert{Upsert: n}}}}
}

// PodItem wraps a typed pod as a Sync item (an UpdatePod upsert).
func PodItem(p *pb.Pod) *pb.SyncRequest {
	return &pb.SyncRequest{Item: &pb.SyncRequest_Pod{Pod: &pb.UpdatePodRequest{Change: &pb.UpdatePodRequest_Upsert{Upsert: p}}}}
}

// PDBItem wraps a typed PodDisruptionBudget as a Sync item.
func PDBItem(p *pb.PodDisruptionBudget) *pb.SyncRequest {
	return &pb.SyncRequest{Item: &pb.SyncRequest_Pdb{Pdb: &pb.UpdatePodDisruptionBudgetRequest{Change: &pb.UpdatePodDisruptionBudgetRequest_Upsert{Upsert: p}}}}
}

// PodGroupItem wraps a typed PodGroup as a Sync item.
func PodGroupItem(g *pb.PodGroup) *pb.SyncRequest {
	return &pb.SyncRequest{Item: &pb.SyncRequest_PodGroup{PodGroup: &pb.UpdatePodGroupRequest{Change: &pb.UpdatePodGroupRequest_Upsert{Upsert: g}}}}
}

// WorkloadItem wraps a typed Workload as a Sync item.
func WorkloadItem(w *pb.Workload) *pb.SyncRequest {
	return &pb.SyncRequest{Item: &pb.SyncRequest_Workload{Workload: &pb.UpdateWorkloadRequest{Change: &pb.UpdateWorkloadRequest_Upsert{Upsert: w}}}}
}

// ItemFromJSON makes the update for one Node, Pod, PodDisruptionBudget, PodGroup or
// Workload (by its kind):
// its JSON as upsert_json, or with typed the converted message.
func ItemFromJSON(object []byte, typed bool) (*pb.SyncRequest, error) {
	obj, err := parseObject(object)
	if err != nil {
		return nil, err
	}
	return itemOf(obj, object, "", typed)
}

// ItemsFromList makes one update per item of a Kubernetes List (kind List, NodeList,
// PodList, ... or any object with items); a single object gives one item.
func ItemsFromList(list []byte, typed bool) ([]*pb.SyncRequest, error) {
	var shape struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(list, &shape); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if shape.Items == nil && !strings.HasSuffix(shape.Kind, "List") {
		item, err := ItemFromJSON(list, typed)
		if err != nil {
			return nil, err
		}
		return []*pb.SyncRequest{item}, nil
	}
	defaultKind := strings.TrimSuffix(shape.Kind, "List")
	items := make([]*pb.SyncRequest, 0, len(shape.Items))
	for i, raw := range shape.Items {
		obj, err := parseObject(raw)
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		item, err := itemOf(obj, raw, defaultKind, typed)
		if err != nil {
			return nil, fmt.Errorf("items[%d].%w", i, err)
		}
		items = append(items, item)
	}
	return items, nil
}

func itemOf(obj jsonObject, raw []byte, defaultKind string, typed bool) (*pb.SyncRequest, error) {
	kind := obj.str("kind")
	if obj.e.err != nil {
		return nil, obj.e.err
	}
	if kind == "" {
		kind = defaultKind
	}
	text := string(raw)
	switch kind {
	case "Node":
		if !typed {
			return &pb.SyncRequest{Item: &pb.SyncRequest_Node{Node: &pb.UpdateNodeRequest{Change: &pb.UpdateNodeRequest_UpsertJson{UpsertJson: text}}}}, nil
		}
		n, err := nodeOf(obj)
		return NodeItem(n), err
	case "Pod":
		if !typed {
			return &pb.SyncRequest{Item: &pb.SyncRequest_Pod{Pod: &pb.UpdatePodRequest{Change: &pb.UpdatePodRequest_UpsertJson{UpsertJson: text}}}}, nil
		}
		p, err := podOf(obj)
		return PodItem(p), err
	case "PodDisruptionBudget":
		if !typed {
			return &pb.SyncRequest{Item: &pb.SyncRequest_Pdb{Pdb: &pb.UpdatePodDisruptionBudgetRequest{Change: &pb.UpdatePodDisruptionBudgetRequest_UpsertJson{UpsertJson: text}}}}, nil
		}
		p, err := pdbOf(obj)
		return PDBItem(p), err
	case "PodGroup":
		if !typed {
			return &pb.SyncRequest{Item: &pb.SyncRequest_PodGroup{PodGroup: &pb.UpdatePodGroupRequest{Change: &pb.UpdatePodGroupRequest_UpsertJson{UpsertJson: text}}}}, nil
		}
		g, err := podGroupOf(obj)
		return PodGroupItem(g), err
	case "Workload":
		if !typed {
			return &pb.SyncRequest{Item: &pb.SyncRequest_Workload{Workload: &pb.UpdateWorkloadRequest{Change: &pb.UpdateWorkloadRequest_UpsertJson{UpsertJson: text}}}}, nil
		}
		w, err := workloadOf(obj)
		return WorkloadItem(w), err
	}
	return nil, fmt.Errorf("kind: unsupported kind %q: supported kinds are \"Node\", \"Pod\", \"PodDisruptionBudget\", \"PodGroup\", \"Workload\"", kind)
}

// NodeFromJSON converts a Kubernetes v1 Node to the typed message.
func NodeFromJSON(object []byte) (*pb.Node, error) {
	obj, err := parseObject(object)
	if err != nil {
		return nil, err
	}
	return nodeOf(obj)
}

// PodFromJSON converts a Kubernetes v1 Pod to the typed message.
func PodFromJSON(object []byte) (*pb.Pod, error) {
	obj, err := parseObject(object)
	if err != nil {
		return nil, err
	}
	return podOf(obj)
}

// PDBFromJSON converts a Kubernetes policy/v1 PodDisruptionBudget to the typed message.
func PDBFromJSON(object []byte) (*pb.PodDisruptionBudget, error) {
	obj, err := parseObject(object)
	if err != nil {
		return nil, err
	}
	return pdbOf(obj)
}

// PodGroupFromJSON converts a Kubernetes scheduling.k8s.io/v1beta1 PodGroup to the typed
// message.
func PodGroupFromJSON(object []byte) (*pb.PodGroup, error) {
	obj, err := parseObject(object)
	if err != nil {
		return nil, err
	}
	return podGroupOf(obj)
}

// WorkloadFromJSON converts a Kubernetes scheduling.k8s.io/v1beta1 Workload to the typed
// message.
func WorkloadFromJSON(object []byte) (*pb.Workload, error) {
	obj, err := parseObject(object)
	if err != nil {
		return nil, err
	}
	return workloadOf(obj)
}

// ---------------------------------------------------------------------------------------
// A JSON object read with field paths in errors. Missing fields and null read as zero.

type jsonObject struct {
	path string
	m    map[string]any
	// The first error met while reading this object or anything read from it.
	e *errs
}

// errs keeps the first error of a run of reads, so conversions read straight through.
type errs struct{ err error }

func (o jsonObject) fail(format string, args ...any) {
	if o.e.err == nil {
		o.e.err = fmt.Errorf(format, args...)
	}
}

func parseObject(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return jsonObject{}, fmt.Errorf("invalid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return jsonObject{}, fmt.Errorf("expected a JSON object")
	}
	return jsonObject{m: m, e: &errs{}}, nil
}

func (o jsonObject) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func (o jsonObject) has(key string) bool { return o.m[key] != nil }

func (o jsonObject) obj(key string) jsonObject {
	child := jsonObject{path: o.at(key), e: o.e}
	switch v := o.m[key].(type) {
	case nil:
	case map[string]any:
		child.m = v
	default:
		o.fail("%s: expected an object", child.path)
	}
	return child
}

func (o jsonObject) str(key string) string {
	switch v := o.m[key].(type) {
	case nil:
	case string:
		return v
	default:
		o.fail("%s: expected a string", o.at(key))
	}
	return ""
}

func (o jsonObject) boolean(key string) bool {
	switch v := o.m[key].(type) {
	case nil:
	case bool:
		return v
	default:
		o.fail("%s: expected a boolean", o.at(key))
	}
	return false
}

func (o jsonObject) integer(key string, bits int) *int64 {
	switch v := o.m[key].(type) {
	case nil:
	case json.Number:
		n, err := strconv.ParseInt(v.String(), 10, bits)
		if err != nil {
			o.fail("%s: expected a %d-bit integer, got %s", o.at(key), bits, v)
			return nil
		}
		return &n
	default:
		o.fail("%s: expected a number", o.at(key))
	}
	return nil
}

func (o jsonObject) int32Ptr(key string) *int32 {
	n := o.integer(key, 32)
	if n == nil {
		return nil
	}
	i := int32(*n)
	return &i
}

func (o jsonObject) int32(key string) int32 {
	if n := o.int32Ptr(key); n != nil {
		return *n
	}
	return 0
}

func (o jsonObject) int64Ptr(key string) *int64 { return o.integer(key, 64) }

func (o jsonObject) list(key string) []jsonObject {
	switch v := o.m[key].(type) {
	case nil:
	case []any:
		out := make([]jsonObject, len(v))
		for i, e := range v {
			out[i] = jsonObject{path: fmt.Sprintf("%s[%d]", o.at(key), i), e: o.e}
			switch e := e.(type) {
			case nil:
			case map[string]any:
				out[i].m = e
			default:
				o.fail("%s: expected an object", out[i].path)
			}
		}
		return out
	default:
		o.fail("%s: expected a list", o.at(key))
	}
	return nil
}

func (o jsonObject) strings(key string) []string {
	switch v := o.m[key].(type) {
	case nil:
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				o.fail("%s[%d]: expected a string", o.at(key), i)
			}
			out[i] = s
		}
		return out
	default:
		o.fail("%s: expected a list", o.at(key))
	}
	return nil
}

func (o jsonObject) stringMap(key string) map[string]string {
	switch v := o.m[key].(type) {
	case nil:
	case map[string]any:
		out := make(map[string]string, len(v))
		for k, e := range v {
			s, ok := e.(string)
			if !ok {
				o.fail("%s[%s]: expected a string", o.at(key), k)
			}
			out[k] = s
		}
		return out
	default:
		o.fail("%s: expected an object", o.at(key))
	}
	return nil
}

// quantities reads a resource list; a quantity may be a string or a JSON number, and
// null is zero (as Kubernetes reads it).
func (o jsonObject) quantities(key string) map[string]string {
	switch v := o.m[key].(type) {
	case nil:
	case map[string]any:
		out := make(map[string]string, len(v))
		for k, e := range v {
			switch q := e.(type) {
			case nil:
				out[k] = "0"
			case string:
				out[k] = q
			case json.Number:
				out[k] = q.String()
			default:
				o.fail("%s[%s]: expected a quantity (a string or a number)", o.at(key), k)
			}
		}
		return out
	default:
		o.fail("%s: expected an object", o.at(key))
	}
	return nil
}

func (o jsonObject) resourceVersion(key string) uint64 {
	var text string
	switch v := o.m[key].(type) {
	case nil:
		return 0
	case string:
		text = v
	case json.Number:
		text = v.String()
	default:
		o.fail("%s: expected a string", o.at(key))
		return 0
	}
	if text == "" {
		return 0
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		o.fail("%s: invalid resource version %q", o.at(key), text)
	}
	return n
}

// ---------------------------------------------------------------------------------------
// Objects.

type meta struct {
	namespace, name, uid string
	resourceVersion      uint64
	labels               map[string]string
	deletionTimestamp    string
}

func metaOf(o jsonObject) meta {
	m := o.obj("metadata")
	var deletion string
	if m.has("deletionTimestamp") {
		deletion = m.str("deletionTimestamp")
	}
	return meta{
		namespace:         m.str("namespace"),
		name:              m.str("name"),
		uid:               m.str("uid"),
		resourceVersion:   m.resourceVersion("resourceVersion"),
		labels:            m.stringMap("labels"),
		deletionTimestamp: deletion,
	}
}

func nodeOf(o jsonObject) (*pb.Node, error) {
	m := metaOf(o)
	spec := o.obj("spec")
	status := o.obj("status")
	n := &pb.Node{
		Name:            m.name,
		Uid:             m.uid,
		ResourceVersion: m.resourceVersion,
		Labels:          m.labels,
		Unschedulable:   spec.boolean("unschedulable"),
		Allocatable:     status.quantities("allocatable"),
	}
	for _, t := range spec.list("taints") {
		n.Taints = append(n.Taints, &pb.Taint{Key: t.str("key"), Value: t.str("value"), Effect: t.str("effect")})
	}
	// Read by a placement policy's termination-notice signals.
	n.Annotations = o.obj("metadata").stringMap("annotations")
	for _, c := range status.list("conditions") {
		n.Conditions = append(n.Conditions, &pb.NodeCondition{
			Type: c.str("type"), Status: c.str("status"), Reason: c.str("reason"), Message: c.str("message"),
		})
	}
	// Read by scoring (ImageLocality).
	for _, image := range status.list("images") {
		size := int64(0)
		if s := image.int64Ptr("sizeBytes"); s != nil {
			size = *s
		}
		n.Images = append(n.Images, &pb.ContainerImage{Names: image.strings("names"), SizeBytes: size})
	}
	return n, o.e.err
}

func pdbOf(o jsonObject) (*pb.PodDisruptionBudget, error) {
	m := metaOf(o)
	spec := o.obj("spec")
	status := o.obj("status")
	p := &pb.PodDisruptionBudget{
		Namespace:          m.namespace,
		Name:               m.name,
		Uid:                m.uid,
		ResourceVersion:    m.resourceVersion,
		Selector:           labelSelector(spec, "selector"),
		DisruptionsAllowed: status.int32("disruptionsAllowed"),
	}
	disrupted := status.obj("disruptedPods")
	for name := range disrupted.m {
		p.DisruptedPods = append(p.DisruptedPods, name)
	}
	sort.Strings(p.DisruptedPods)
	return p, o.e.err
}

func podOf(o jsonObject) (*pb.Pod, error) {
	m := metaOf(o)
	spec := o.obj("spec")
	status := o.obj("status")
	hostNetwork := spec.boolean("hostNetwork")
	p := &pb.Pod{
		Namespace:         m.namespace,
		Name:              m.name,
		Uid:               m.uid,
		ResourceVersion:   m.resourceVersion,
		Labels:            m.labels,
		NodeName:          spec.str("nodeName"),
		SchedulerName:     spec.str("schedulerName"),
		Priority:          spec.int32Ptr("priority"),
		PriorityClassName: spec.str("priorityClassName"),
		PreemptionPolicy:  spec.str("preemptionPolicy"),
		Containers:        containers(spec, "containers", hostNetwork),
		InitContainers:    containers(spec, "initContainers", hostNetwork),
		Overhead:          spec.quantities("overhead"),
		NodeSelector:      spec.stringMap("nodeSelector"),
		StartTime:         status.str("startTime"),
		DeletionTimestamp: m.deletionTimestamp,
		NominatedNodeName: status.str("nominatedNodeName"),
		Phase:             status.str("phase"),
	}
	if spec.has("resources") {
		r := spec.obj("resources")
		p.Resources = &pb.ResourceRequirements{Requests: r.quantities("requests"), Limits: r.quantities("limits")}
	}
	for _, t := range spec.list("tolerations") {
		p.Tolerations = append(p.Tolerations, &pb.Toleration{
			Key: t.str("key"), Operator: t.str("operator"), Value: t.str("value"),
			Effect: t.str("effect"), TolerationSeconds: t.int64Ptr("tolerationSeconds"),
		})
	}
	if spec.has("affinity") {
		p.Affinity = affinity(spec.obj("affinity"))
	}
	for _, c := range spec.list("topologySpreadConstraints") {
		p.TopologySpreadConstraints = append(p.TopologySpreadConstraints, &pb.TopologySpreadConstraint{
			MaxSkew:            c.int32("maxSkew"),
			TopologyKey:        c.str("topologyKey"),
			WhenUnsatisfiable:  c.str("whenUnsatisfiable"),
			LabelSelector:      labelSelector(c, "labelSelector"),
			MinDomains:         c.int32Ptr("minDomains"),
			MatchLabelKeys:     c.strings("matchLabelKeys"),
			NodeAffinityPolicy: c.str("nodeAffinityPolicy"),
			NodeTaintsPolicy:   c.str("nodeTaintsPolicy"),
		})
	}
	for _, c := range status.list("conditions") {
		p.Conditions = append(p.Conditions, &pb.PodCondition{Type: c.str("type"), Status: c.str("status"), Reason: c.str("reason")})
	}
	if spec.has("schedulingGroup") {
		p.SchedulingGroup = &pb.PodSchedulingGroup{PodGroupName: spec.obj("schedulingGroup").str("podGroupName")}
	}
	return p, o.e.err
}

// podGroupOf keeps presence: each member of schedulingPolicy and disruptionMode is set by
// being present (the server refuses a group with none or both).
func podGroupOf(o jsonObject) (*pb.PodGroup, error) {
	m := metaOf(o)
	spec := o.obj("spec")
	g := &pb.PodGroup{
		Namespace:                   m.namespace,
		Name:                        m.name,
		Uid:                         m.uid,
		ResourceVersion:             m.resourceVersion,
		CreationTimestamp:           o.obj("metadata").str("creationTimestamp"),
		PriorityClassName:           spec.str("priorityClassName"),
		Priority:                    spec.int32Ptr("priority"),
		PreemptionPolicy:            spec.str("preemptionPolicy"),
		ParentCompositePodGroupName: spec.str("parentCompositePodGroupName"),
	}
	if spec.has("schedulingPolicy") {
		policy := spec.obj("schedulingPolicy")
		g.SchedulingPolicy = &pb.PodGroupSchedulingPolicy{}
		if policy.has("basic") {
			policy.obj("basic")
			g.SchedulingPolicy.Basic = &pb.BasicSchedulingPolicy{}
		}
		if policy.has("gang") {
			g.SchedulingPolicy.Gang = &pb.GangSchedulingPolicy{MinCount: policy.obj("gang").int32("minCount")}
		}
	}
	if spec.has("disruptionMode") {
		mode := spec.obj("disruptionMode")
		g.DisruptionMode = &pb.DisruptionMode{}
		if mode.has("single") {
			mode.obj("single")
			g.DisruptionMode.Single = &pb.SingleDisruptionMode{}
		}
		if mode.has("all") {
			mode.obj("all")
			g.DisruptionMode.All = &pb.AllDisruptionMode{}
		}
	}
	if spec.has("workloadRef") {
		ref := spec.obj("workloadRef")
		g.WorkloadRef = &pb.WorkloadReference{WorkloadName: ref.str("workloadName"), TemplateName: ref.str("templateName")}
	}
	return g, o.e.err
}

func workloadOf(o jsonObject) (*pb.Workload, error) {
	m := metaOf(o)
	w := &pb.Workload{Namespace: m.namespace, Name: m.name, Uid: m.uid, ResourceVersion: m.resourceVersion}
	for _, t := range o.obj("spec").list("podGroupTemplates") {
		w.PodGroupTemplates = append(w.PodGroupTemplates, &pb.PodGroupTemplate{Name: t.str("name")})
	}
	return w, o.e.err
}

func containers(spec jsonObject, key string, hostNetwork bool) []*pb.Container {
	var out []*pb.Container
	for _, c := range spec.list(key) {
		resources := c.obj("resources")
		container := &pb.Container{
			Name:          c.str("name"),
			Image:         c.str("image"),
			Requests:      resources.quantities("requests"),
			Limits:        resources.quantities("limits"),
			RestartPolicy: c.str("restartPolicy"),
		}
		for _, port := range c.list("ports") {
			hostPort := port.int32("hostPort")
			containerPort := port.int32("containerPort")
			if hostNetwork && hostPort == 0 {
				hostPort = containerPort
			}
			container.Ports = append(container.Ports, &pb.ContainerPort{
				HostPort: hostPort, Protocol: port.str("protocol"),
				HostIp: port.str("hostIP"), ContainerPort: containerPort,
			})
		}
		out = append(out, container)
	}
	return out
}

// labelSelector keeps presence: an absent selector matches nothing, an empty one all.
func labelSelector(o jsonObject, key string) *pb.LabelSelector {
	if !o.has(key) {
		return nil
	}
	s := o.obj(key)
	out := &pb.LabelSelector{MatchLabels: s.stringMap("matchLabels")}
	for _, r := range s.list("matchExpressions") {
		out.MatchExpressions = append(out.MatchExpressions, &pb.LabelSelectorRequirement{
			Key: r.str("key"), Operator: r.str("operator"), Values: r.strings("values"),
		})
	}
	return out
}

const (
	required  = "requiredDuringSchedulingIgnoredDuringExecution"
	preferred = "preferredDuringSchedulingIgnoredDuringExecution"
)

func affinity(a jsonObject) *pb.Affinity {
	out := &pb.Affinity{}
	if a.has("nodeAffinity") {
		na := a.obj("nodeAffinity")
		out.NodeAffinity = &pb.NodeAffinity{}
		if na.has(required) {
			sel := na.obj(required)
			ns := &pb.NodeSelector{}
			for _, t := range sel.list("nodeSelectorTerms") {
				ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, &pb.NodeSelectorTerm{
					MatchExpressions: nodeRequirements(t, "matchExpressions"),
					MatchFields:      nodeRequirements(t, "matchFields"),
				})
			}
			out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = ns
		}
		for _, p := range na.list(preferred) {
			term := &pb.PreferredSchedulingTerm{Weight: p.int32("weight")}
			if p.has("preference") {
				t := p.obj("preference")
				term.Preference = &pb.NodeSelectorTerm{MatchExpressions: nodeRequirements(t, "matchExpressions"), MatchFields: nodeRequirements(t, "matchFields")}
			}
			out.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(out.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, term)
		}
	}
	if a.has("podAffinity") {
		pa := a.obj("podAffinity")
		out.PodAffinity = &pb.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  podAffinityTerms(pa.list(required)),
			PreferredDuringSchedulingIgnoredDuringExecution: weightedPodAffinityTerms(pa),
		}
	}
	if a.has("podAntiAffinity") {
		pa := a.obj("podAntiAffinity")
		out.PodAntiAffinity = &pb.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  podAffinityTerms(pa.list(required)),
			PreferredDuringSchedulingIgnoredDuringExecution: weightedPodAffinityTerms(pa),
		}
	}
	return out
}

func weightedPodAffinityTerms(a jsonObject) []*pb.WeightedPodAffinityTerm {
	var out []*pb.WeightedPodAffinityTerm
	for _, w := range a.list(preferred) {
		term := &pb.WeightedPodAffinityTerm{Weight: w.int32("weight")}
		if w.has("podAffinityTerm") {
			term.PodAffinityTerm = podAffinityTerms([]jsonObject{w.obj("podAffinityTerm")})[0]
		}
		out = append(out, term)
	}
	return out
}

func nodeRequirements(term jsonObject, key string) []*pb.NodeSelectorRequirement {
	var out []*pb.NodeSelectorRequirement
	for _, r := range term.list(key) {
		out = append(out, &pb.NodeSelectorRequirement{Key: r.str("key"), Operator: r.str("operator"), Values: r.strings("values")})
	}
	return out
}

func podAffinityTerms(terms []jsonObject) []*pb.PodAffinityTerm {
	var out []*pb.PodAffinityTerm
	for _, t := range terms {
		out = append(out, &pb.PodAffinityTerm{
			LabelSelector:     labelSelector(t, "labelSelector"),
			Namespaces:        t.strings("namespaces"),
			NamespaceSelector: labelSelector(t, "namespaceSelector"),
			TopologyKey:       t.str("topologyKey"),
		})
	}
	return out
}
