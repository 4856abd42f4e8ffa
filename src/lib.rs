#![warn(missing_docs, unreachable_pub)]
//! preemptd: Kubernetes pod-preemption decisions, exactly as kube-scheduler's
//! DefaultPreemption makes them, over a sharded in-memory cluster cache.
//!
//! Layers (one direction of flow): [`model`] → [`cache`] → [`engine`]; the gRPC server
//! sits on top and is the only place that knows tonic or prost.

pub mod app;
pub mod cache;
pub mod engine;
#[cfg(any(test, feature = "generate"))]
pub mod generate;
pub mod kubernetes;
pub mod model;
pub mod nominations;
pub mod ops;
pub mod plan_drain;
pub mod recent;
pub mod server;
pub mod simulate;
