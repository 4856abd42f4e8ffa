//! Routes each call to its service by the service name in its path: a comparison of
//! prefixes, in place of tonic's router (an axum `Router` matching every path against a
//! tree of routes and wrapping each response). `UpdatePod`, which the generated server
//! leaves out, goes to [`UpdatePodCall`].

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::BoxFuture;
use tonic::server::NamedService;
use tower::Service;
use tower::util::BoxCloneSyncService;

use super::unary::{UPDATE_POD_PATH, UpdatePodCall};

type Boxed = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// The server's services by name; the first one is asked first (the hot one). Cloned for
/// every call (tower's ready-clone dance in the layers above): the others are shared.
#[derive(Clone)]
pub(crate) struct Routes<S> {
    update_pod: UpdatePodCall,
    first: S,
    others: Arc<[(&'static str, Boxed)]>,
}

/// Whether `path` names a method of the service `name`: `/<package>.<Service>/<method>`.
fn serves(name: &str, path: &str) -> bool {
    path.strip_prefix('/')
        .and_then(|path| path.strip_prefix(name))
        .is_some_and(|method| method.starts_with('/'))
}

impl<S> Routes<S>
where
    S: NamedService,
{
    pub fn new(update_pod: UpdatePodCall, first: S) -> Self {
        Routes {
            update_pod,
            first,
            others: Arc::new([]),
        }
    }

    pub fn add<T>(self, service: T) -> Self
    where
        T: NamedService
            + Service<
                http::Request<Body>,
                Response = http::Response<Body>,
                Error = Infallible,
                Future = BoxFuture<http::Response<Body>, Infallible>,
            > + Clone
            + Send
            + Sync
            + 'static,
    {
        let mut others = self.others.to_vec();
        others.push((T::NAME, BoxCloneSyncService::new(service)));
        Routes {
            update_pod: self.update_pod,
            first: self.first,
            others: others.into(),
        }
    }
}

/// Every path no service claims: UNIMPLEMENTED, as tonic's router answers it.
fn unimplemented() -> http::Response<Body> {
    let (parts, ()) = tonic::Status::unimplemented("")
        .into_http::<()>()
        .into_parts();
    http::Response::from_parts(parts, Body::empty())
}

impl<S> Service<http::Request<Body>> for Routes<S>
where
    S: NamedService
        + Service<
            http::Request<Body>,
            Response = http::Response<Body>,
            Error = Infallible,
            Future = BoxFuture<http::Response<Body>, Infallible>,
        >,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<http::Response<Body>, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // tonic's generated servers are always ready (their `poll_ready` answers Ready
        // at once), so which one answers need not be known here.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path();
        if path == UPDATE_POD_PATH {
            return self.update_pod.call(request);
        }
        if serves(S::NAME, path) {
            return self.first.call(request);
        }
        match self.others.iter().find(|(name, _)| serves(name, path)) {
            // Health checks and reflection: rare enough to clone their service per call.
            Some((_, service)) => service.clone().call(request),
            None => Box::pin(std::future::ready(Ok(unimplemented()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::serves;

    #[test]
    fn a_service_serves_its_own_methods_only() {
        let name = "preemptd.v1.Preemption";
        assert!(serves(name, "/preemptd.v1.Preemption/Preempt"));
        assert!(!serves(name, "/preemptd.v1.PreemptionX/Preempt"));
        assert!(!serves(name, "preemptd.v1.Preemption/Preempt"));
        assert!(!serves(name, "/preemptd.v1.Preemption"));
        assert!(!serves(name, "/grpc.health.v1.Health/Check"));
    }
}
