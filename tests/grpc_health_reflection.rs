//! Health (SERVING once started, NOT_SERVING while shutting down) and server reflection
//! over both v1 and v1alpha (grpcurl 1.8 speaks only v1alpha).

mod grpc_support;

use std::time::Duration;

use grpc_support::*;
use prost::Message as _;
use tokio::time::timeout;
use tokio_stream::StreamExt;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const EXPECTED_SERVICES: &[&str] = &[
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
    "preemptd.v1.Preemption",
];

const RPCS: &[&str] = &[
    "UpdateNode",
    "UpdatePod",
    "UpdatePodDisruptionBudget",
    "UpdatePriorityClass",
    "UpdateNamespace",
    "UpdatePodGroup",
    "UpdateWorkload",
    "Preempt",
    "ListNominations",
    "WatchNominations",
    "Sync",
    "PlanDrain",
    "PreemptGroup",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_serving_then_not_serving_on_shutdown() {
    timeout(TEST_TIMEOUT, async {
        let mut config = loopback_config();
        config.shutdown_grace = Duration::from_millis(500);
        let (server, _client) = start_with(config).await;
        let mut health = HealthClient::new(channel(&server).await);
        for service in ["", "preemptd.v1.Preemption"] {
            let status = health
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .expect("health check")
                .into_inner()
                .status;
            assert_eq!(status, ServingStatus::Serving as i32, "service {service:?}");
        }
        let unknown = health
            .check(HealthCheckRequest {
                service: "no.such.Service".into(),
            })
            .await
            .expect_err("unknown service");
        assert_eq!(unknown.code(), tonic::Code::NotFound);

        let mut watch = health
            .watch(HealthCheckRequest {
                service: "preemptd.v1.Preemption".into(),
            })
            .await
            .expect("health watch")
            .into_inner();
        let first = watch.next().await.expect("first status").expect("status");
        assert_eq!(first.status, ServingStatus::Serving as i32);
        let shutdown = tokio::spawn(server.shutdown());
        let second = timeout(Duration::from_secs(5), watch.next())
            .await
            .expect("status change")
            .expect("second status")
            .expect("status");
        assert_eq!(second.status, ServingStatus::NotServing as i32);
        shutdown.await.expect("join").expect("shutdown");
    })
    .await
    .expect("test timed out");
}

mod v1 {
    pub use tonic_reflection::pb::v1::ServerReflectionRequest;
    pub use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    pub use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    pub use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
}

mod v1alpha {
    pub use tonic_reflection::pb::v1alpha::ServerReflectionRequest;
    pub use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    pub use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    pub use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
}

/// The methods of `preemptd.v1.Preemption` in file descriptors, and whether the service
/// carries its doc comment (source info).
fn preemption_methods(files: &[Vec<u8>]) -> (Vec<String>, bool) {
    for bytes in files {
        let file = prost_types::FileDescriptorProto::decode(bytes.as_slice()).expect("descriptor");
        if file.package() != "preemptd.v1" {
            continue;
        }
        let Some(service) = file.service.iter().find(|s| s.name() == "Preemption") else {
            continue;
        };
        let documented = file.source_code_info.as_ref().is_some_and(|info| {
            info.location
                .iter()
                .any(|l| l.leading_comments().contains("cluster cache"))
        });
        return (
            service
                .method
                .iter()
                .map(|m| m.name().to_string())
                .collect(),
            documented,
        );
    }
    (Vec::new(), false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_v1_lists_and_describes_services() {
    timeout(TEST_TIMEOUT, async {
        let (server, _client) = start().await;
        let mut client = v1::ServerReflectionClient::new(channel(&server).await);
        let requests = [
            v1::MessageRequest::ListServices(String::new()),
            v1::MessageRequest::FileContainingSymbol("preemptd.v1.Preemption".into()),
            v1::MessageRequest::FileContainingSymbol("grpc.health.v1.Health".into()),
        ]
        .map(|m| v1::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(m),
        });
        let mut responses = client
            .server_reflection_info(tokio_stream::iter(requests))
            .await
            .expect("reflection")
            .into_inner();

        let Some(v1::MessageResponse::ListServicesResponse(list)) = responses
            .next()
            .await
            .expect("list")
            .expect("ok")
            .message_response
        else {
            panic!("expected a service list");
        };
        let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        names.sort();
        assert_eq!(names, EXPECTED_SERVICES);

        let Some(v1::MessageResponse::FileDescriptorResponse(files)) = responses
            .next()
            .await
            .expect("describe")
            .expect("ok")
            .message_response
        else {
            panic!("expected file descriptors");
        };
        let (methods, documented) = preemption_methods(&files.file_descriptor_proto);
        assert_eq!(methods, RPCS);
        assert!(documented, "source comments are served");

        let Some(v1::MessageResponse::FileDescriptorResponse(files)) = responses
            .next()
            .await
            .expect("health")
            .expect("ok")
            .message_response
        else {
            panic!("expected the health service's descriptor");
        };
        assert!(!files.file_descriptor_proto.is_empty());
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_v1alpha_lists_and_describes_services() {
    timeout(TEST_TIMEOUT, async {
        let (server, _client) = start().await;
        let mut client = v1alpha::ServerReflectionClient::new(channel(&server).await);
        let requests = [
            v1alpha::MessageRequest::ListServices(String::new()),
            v1alpha::MessageRequest::FileContainingSymbol("preemptd.v1.PreemptRequest".into()),
            v1alpha::MessageRequest::FileContainingSymbol("no.such.Symbol".into()),
        ]
        .map(|m| v1alpha::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(m),
        });
        let mut responses = client
            .server_reflection_info(tokio_stream::iter(requests))
            .await
            .expect("reflection")
            .into_inner();

        let Some(v1alpha::MessageResponse::ListServicesResponse(list)) = responses
            .next()
            .await
            .expect("list")
            .expect("ok")
            .message_response
        else {
            panic!("expected a service list");
        };
        let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        names.sort();
        assert_eq!(names, EXPECTED_SERVICES);

        let Some(v1alpha::MessageResponse::FileDescriptorResponse(files)) = responses
            .next()
            .await
            .expect("describe")
            .expect("ok")
            .message_response
        else {
            panic!("expected file descriptors");
        };
        assert_eq!(preemption_methods(&files.file_descriptor_proto).0, RPCS);

        // tonic's reflection answers an unknown symbol by failing the stream.
        let err = responses
            .next()
            .await
            .expect("unknown")
            .expect_err("unknown symbol");
        assert_eq!(err.code(), tonic::Code::NotFound);
    })
    .await
    .expect("test timed out");
}
