# preemptd container image: a static-ish release build on Debian bookworm, run on
# distroless (glibc, no shell, uid 65532). No protoc is needed: protox compiles the
# protos in build.rs.
#
#   docker build -t preemptd .
#   docker run --rm -p 50051:50051 -p 9464:9464 preemptd

FROM rust:1.95-slim-bookworm AS build
# make builds the bundled jemalloc (tikv-jemalloc-sys); the image has gcc already.
RUN apt-get update \
    && apt-get install -y --no-install-recommends make=4.3-4.1 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, in a layer of their own that source changes do not invalidate: the
# manifests, the build script and protos (they change rarely), and stub sources for
# every target the manifests declare; then build, which compiles only dependencies for
# real. The stubs are then replaced by the real sources.
COPY Cargo.toml Cargo.lock build.rs ./
COPY .cargo ./.cargo
COPY proto ./proto
COPY cli/Cargo.toml ./cli/
COPY loadgen/Cargo.toml ./loadgen/
RUN mkdir -p src cli/src cli/tests loadgen/src benches \
    && touch src/lib.rs loadgen/src/lib.rs benches/engine.rs \
        cli/tests/kube_mode.rs cli/tests/scheduler_extender.rs \
    && echo 'fn main() {}' > cli/src/main.rs \
    && cargo build --release --locked --bin preemptd \
    && rm -rf src cli/src loadgen/src
COPY src ./src
COPY cli/src ./cli/src
COPY loadgen/src ./loadgen/src
# COPY keeps the files' own times, which can be older than the stubs' build: touch the
# crate roots so cargo rebuilds the three crates from the real sources.
RUN touch src/lib.rs cli/src/main.rs loadgen/src/lib.rs \
    && cargo build --release --locked --bin preemptd \
    && cp target/release/preemptd /preemptd

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /preemptd /preemptd
# distroless "nonroot": numeric, so Kubernetes can check runAsNonRoot.
USER 65532:65532
# gRPC (preemptd.v1, health, reflection) and Prometheus /metrics.
EXPOSE 50051 9464
# Every setting through the environment, so `docker run -e PREEMPTD_LISTEN=...` (or
# any PREEMPTD_* variable) takes effect: the command passes no flag that would override
# it. The health check reaches the server on its gRPC port: PREEMPTD_HEALTH_ADDR, set
# to PREEMPTD_LISTEN's port on loopback; change both together.
ENV PREEMPTD_LISTEN=0.0.0.0:50051 \
    PREEMPTD_METRICS_LISTEN=0.0.0.0:9464 \
    PREEMPTD_HEALTH_ADDR=127.0.0.1:50051
# The gRPC health protocol, through the binary itself (distroless has no shell); it
# reads PREEMPTD_HEALTH_ADDR and the other PREEMPTD_HEALTH_* variables.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["/preemptd", "health", "--timeout", "3s"]
ENTRYPOINT ["/preemptd"]
CMD ["serve"]
