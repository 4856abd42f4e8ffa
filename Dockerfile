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
# Manifests first, so the dependency download is cached across source changes.
COPY Cargo.toml Cargo.lock ./
COPY .cargo ./.cargo
COPY build.rs ./
COPY proto ./proto
COPY src ./src
COPY cli ./cli
COPY loadgen ./loadgen
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin preemptd \
    && cp target/release/preemptd /preemptd

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /preemptd /preemptd
# distroless "nonroot": numeric, so Kubernetes can check runAsNonRoot.
USER 65532:65532
# gRPC (preemptd.v1, health, reflection) and Prometheus /metrics.
EXPOSE 50051 9464
# The gRPC health protocol, through the binary itself: distroless has no shell.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["/preemptd", "health", "--addr", "127.0.0.1:50051", "--timeout", "3s"]
ENTRYPOINT ["/preemptd"]
CMD ["serve", "--listen", "0.0.0.0:50051", "--metrics-listen", "0.0.0.0:9464"]
