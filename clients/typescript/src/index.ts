// Client for preemptd, the Kubernetes pod-preemption decision service. The generated
// messages and @grpc/grpc-js stub are re-exported from ./gen/preemptd/v1/preemptd.
export * from "./client";
export * from "./kube";
export * from "./gen/preemptd/v1/preemptd";
// The @grpc/grpc-js pieces a caller needs for TLS and metadata, so `@preemptd/client` is the
// only import.
export { credentials, Metadata, status } from "@grpc/grpc-js";
