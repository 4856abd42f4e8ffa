//! Routes each call to its service by the service name in its path: a comparison of
//! prefixes, in place of tonic's router (an axum `Router` matching every path against a
//! tree of routes and wrapping each response).

use std::convert::Infallible;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::BoxFuture;
use tonic::server::NamedService;
use tower::Service;
use tower::util::BoxCloneSyncService;

type Boxed = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// The server's services by name; the first one is asked first (the hot one).
#[derive(Clone)]
pub(crate) struct Routes<S> {
    first: (String, S),
    others: Vec<(String, Boxed)>,
}

/// `/<package>.<Service>/`, the prefix of the paths of a service's methods.
fn prefix<S: NamedService>() -> String {
    format!("/{}/", S::NAME)
}

impl<S> Routes<S>
where
    S: NamedService,
{
    pub fn new(first: S) -> Self {
        Routes {
            first: (prefix::<S>(), first),
            others: Vec::new(),
        }
    }

    pub fn add<T>(mut self, service: T) -> Self
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
        self.others
            .push((prefix::<T>(), BoxCloneSyncService::new(service)));
        self
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
    S: Service<
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
        if path.starts_with(self.first.0.as_str()) {
            return self.first.1.call(request);
        }
        match self
            .others
            .iter_mut()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
        {
            Some((_, service)) => service.call(request),
            None => Box::pin(std::future::ready(Ok(unimplemented()))),
        }
    }
}
