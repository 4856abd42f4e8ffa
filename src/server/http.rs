//! The HTTP ports (the kube-scheduler extender, `/metrics`): an axum app served by hyper,
//! HTTP/1.1 and HTTP/2, on plain TCP or on the gRPC port's TLS acceptor (the same
//! certificates, reloads and client CA; ALPN offers h2 and http/1.1). Handlers see the
//! caller as [`PeerInfo`] through axum's `ConnectInfo`.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt as _;

use super::tls::{PeerInfo, TlsAcceptor, TlsConnection};

/// An HTTP port serving in the background: its address, and how to stop it.
pub(crate) struct HttpEndpoint {
    name: &'static str,
    local_addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl HttpEndpoint {
    /// Serves `app` on `listener` (over TLS with `tls`) until shut down; `name` names the
    /// port in logs.
    pub(crate) fn serve(
        name: &'static str,
        listener: TcpListener,
        tls: Option<TlsAcceptor>,
        app: Router,
    ) -> std::io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let stopped = async {
            let _ = rx.await;
        };
        let task = spawn(name, listener, tls, app, stopped)?;
        Ok(HttpEndpoint {
            name,
            local_addr,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting; requests in flight finish within `grace`, then are closed.
    pub(crate) async fn shutdown(mut self, grace: Duration) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let endpoint = self.name;
        if let Some(mut task) = self.task.take() {
            match tokio::time::timeout(grace, &mut task).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(error))) => tracing::warn!(endpoint, %error, "http server failed"),
                Ok(Err(error)) => tracing::warn!(endpoint, %error, "http server task failed"),
                Err(_) => {
                    tracing::warn!(
                        endpoint,
                        ?grace,
                        "http requests still open after the grace period; closing them"
                    );
                    task.abort();
                }
            }
        }
    }
}

impl Drop for HttpEndpoint {
    fn drop(&mut self) {
        // Dropping the sender resolves the shutdown signal.
        self.shutdown.take();
    }
}

/// Serves `app` on `listener` (over TLS with `tls`) in the background until `stopped`
/// resolves, then lets requests in flight finish. `endpoint` names the port in logs.
fn spawn(
    endpoint: &'static str,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    stopped: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<JoinHandle<std::io::Result<()>>> {
    Ok(match tls {
        None => spawn_on(PlainListener { listener, endpoint }, app, stopped),
        Some(acceptor) => {
            let local_addr = listener.local_addr()?;
            spawn_on(
                TlsListener {
                    incoming: acceptor.incoming(listener),
                    local_addr,
                    endpoint,
                },
                app,
                stopped,
            )
        }
    })
}

fn spawn_on<L>(
    listener: L,
    app: Router,
    stopped: impl Future<Output = ()> + Send + 'static,
) -> JoinHandle<std::io::Result<()>>
where
    L: Listener<Addr = PeerInfo>,
    for<'a> PeerInfo: Connected<IncomingStream<'a, L>>,
{
    let service = app.into_make_service_with_connect_info::<PeerInfo>();
    tokio::spawn(async move {
        axum::serve(listener, service)
            .with_graceful_shutdown(stopped)
            .await
    })
}

/// Plaintext connections, with TCP_NODELAY (small replies would otherwise wait for
/// delayed ACKs).
struct PlainListener {
    listener: TcpListener,
    endpoint: &'static str,
}

impl Listener for PlainListener {
    type Io = TcpStream;
    type Addr = PeerInfo;

    async fn accept(&mut self) -> (TcpStream, PeerInfo) {
        loop {
            match self.listener.accept().await {
                Ok((tcp, remote_addr)) => {
                    let _ = tcp.set_nodelay(true);
                    let peer = PeerInfo {
                        remote_addr: Some(remote_addr),
                        certificate: None,
                    };
                    return (tcp, peer);
                }
                Err(error) => {
                    tracing::warn!(endpoint = self.endpoint, %error, "accept failed");
                    // Out of file descriptors and the like: do not spin.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<PeerInfo> {
        Ok(PeerInfo {
            remote_addr: Some(self.listener.local_addr()?),
            certificate: None,
        })
    }
}

/// TLS connections from the gRPC port's reusable acceptor (handshakes off the accept
/// loop).
struct TlsListener {
    incoming: tokio_stream::wrappers::ReceiverStream<std::io::Result<TlsConnection>>,
    local_addr: SocketAddr,
    endpoint: &'static str,
}

impl Listener for TlsListener {
    type Io = TlsConnection;
    type Addr = PeerInfo;

    async fn accept(&mut self) -> (TlsConnection, PeerInfo) {
        loop {
            match self.incoming.next().await {
                Some(Ok(connection)) => {
                    let peer = connection.peer().clone();
                    return (connection, peer);
                }
                Some(Err(error)) => {
                    tracing::debug!(endpoint = self.endpoint, %error, "tls accept failed");
                }
                // The acceptor stopped: nothing more will come.
                None => std::future::pending::<()>().await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<PeerInfo> {
        Ok(PeerInfo {
            remote_addr: Some(self.local_addr),
            certificate: None,
        })
    }
}

impl Connected<IncomingStream<'_, PlainListener>> for PeerInfo {
    fn connect_info(stream: IncomingStream<'_, PlainListener>) -> Self {
        stream.remote_addr().clone()
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for PeerInfo {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}
