//! Lean gRPC calls over one HTTP/2 connection (the `h2` crate that tonic's transport
//! runs on), for the phases that measure throughput: the `Sync` bulk load and unary
//! `UpdatePod`.
//!
//! Those phases measure how fast the server takes calls and objects, with the load
//! generator on the same cores. Through tonic's client, hyper hands each call to its
//! connection task over a channel and spawns a task per call for the response (and
//! often one more for the request body), and tonic encodes and decodes through its
//! codec's streams: the client then costs about as much CPU per call as the server, and
//! a rate measured that way measures the client as much as the server.
//! Here the calling task drives its own stream: it sends messages encoded and framed
//! before the phase began, with the headers any gRPC client sends, and reads the
//! answer, its trailers and `grpc-status`. The bytes on the wire are those of any gRPC
//! client.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::{BufMut as _, Bytes, BytesMut};

/// Sent as every gRPC library does (grpc-go: `grpc-go/1.x`; tonic: `tonic/0.x`).
const USER_AGENT: &str = concat!("preemptd-bench/", env!("CARGO_PKG_VERSION"));
/// A client stream's messages are sent in chunks of about this many bytes (h2 cuts them
/// into frames of the server's largest frame size), as tonic's encoder batches them.
const STREAM_CHUNK_BYTES: usize = 64 * 1024;

/// One HTTP/2 connection; clones share it.
#[derive(Clone)]
pub(super) struct Connection {
    send: h2::client::SendRequest<Bytes>,
    authority: http::uri::Authority,
}

impl Connection {
    /// Connects to `addr` and spawns the connection's task on the current runtime.
    pub async fn open(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream =
            tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
                .await
                .with_context(|| format!("connect to {addr}: timed out"))?
                .with_context(|| format!("connect to {addr}"))?;
        stream.set_nodelay(true).context("set TCP_NODELAY")?;
        let (send, connection) = h2::client::handshake(stream)
            .await
            .with_context(|| format!("HTTP/2 handshake with {addr}"))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "bench connection closed");
            }
        });
        let authority = addr.to_string().parse().context("server authority")?;
        Ok(Connection { send, authority })
    }

    /// A unary call of `path` (`/package.Service/Method`): `framed` is the request
    /// message in gRPC framing ([`frame`]); returns the response message.
    pub async fn unary(&self, path: &'static str, framed: Bytes) -> anyhow::Result<Bytes> {
        let (response, mut body) = self.start(path).await?;
        body.send_data(framed, true).context("send message")?;
        read_unary_response(response).await
    }

    /// A client-streaming call of `path`: sends every message of `messages` (encoded,
    /// not framed), counting them in `sent`; returns the response message.
    pub async fn client_streaming(
        &self,
        path: &'static str,
        messages: &[Bytes],
        sent: &AtomicU64,
    ) -> anyhow::Result<Bytes> {
        let (response, mut body) = self.start(path).await?;
        let mut chunk = BytesMut::with_capacity(STREAM_CHUNK_BYTES);
        for (index, message) in messages.iter().enumerate() {
            put_framed(&mut chunk, message);
            if chunk.len() >= STREAM_CHUNK_BYTES {
                send_within_window(&mut body, chunk.split().freeze()).await?;
                sent.store(index as u64 + 1, Ordering::Relaxed);
            }
        }
        send_within_window(&mut body, chunk.freeze()).await?;
        sent.store(messages.len() as u64, Ordering::Relaxed);
        body.send_data(Bytes::new(), true)
            .context("end the request stream")?;
        read_unary_response(response).await
    }

    /// Sends a call's headers once the connection takes another stream.
    async fn start(
        &self,
        path: &'static str,
    ) -> anyhow::Result<(h2::client::ResponseFuture, h2::SendStream<Bytes>)> {
        let mut send = self
            .send
            .clone()
            .ready()
            .await
            .context("connection not ready")?;
        let request = http::Request::builder()
            .method(http::Method::POST)
            .uri(
                http::Uri::builder()
                    .scheme(http::uri::Scheme::HTTP)
                    .authority(self.authority.clone())
                    .path_and_query(http::uri::PathAndQuery::from_static(path))
                    .build()
                    .context("method uri")?,
            )
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .header(http::header::TE, "trailers")
            .header(http::header::USER_AGENT, USER_AGENT)
            .body(())
            .context("request head")?;
        send.send_request(request, false).context("send request")
    }
}

/// Sends `data` as the server's flow-control windows open, so a long stream is held
/// back by the server rather than buffered whole in the client.
async fn send_within_window(
    body: &mut h2::SendStream<Bytes>,
    mut data: Bytes,
) -> anyhow::Result<()> {
    while !data.is_empty() {
        body.reserve_capacity(data.len());
        let granted = std::future::poll_fn(|cx| body.poll_capacity(cx))
            .await
            .context("the server closed the stream")?
            .context("flow control")?;
        let part = data.split_to(granted.min(data.len()));
        body.send_data(part, false).context("send messages")?;
    }
    Ok(())
}

/// A unary response: headers, one message, trailers with `grpc-status` (or a
/// trailers-only error).
async fn read_unary_response(response: h2::client::ResponseFuture) -> anyhow::Result<Bytes> {
    let response = response.await.context("response head")?;
    let (head, mut stream) = response.into_parts();
    if head.status != http::StatusCode::OK {
        bail!("http status {}", head.status);
    }
    if let Some(status) = tonic::Status::from_header_map(&head.headers) {
        check_status(status)?;
    }
    let mut message = BytesMut::new();
    while let Some(chunk) = stream.data().await {
        let chunk = chunk.context("response message")?;
        // The connection's window opens again as the answer is read.
        let _ = stream.flow_control().release_capacity(chunk.len());
        message.extend_from_slice(&chunk);
    }
    let trailers = stream.trailers().await.context("response trailers")?;
    match trailers.as_ref().and_then(tonic::Status::from_header_map) {
        Some(status) => check_status(status)?,
        None => bail!("response without grpc-status"),
    }
    unframe(message.freeze())
}

fn check_status(status: tonic::Status) -> anyhow::Result<()> {
    if status.code() == tonic::Code::Ok {
        return Ok(());
    }
    bail!("grpc status {:?}: {}", status.code(), status.message())
}

fn put_framed(dst: &mut BytesMut, message: &[u8]) {
    dst.reserve(5 + message.len());
    dst.put_u8(0);
    dst.put_u32(message.len() as u32);
    dst.put_slice(message);
}

/// `message` in gRPC's length-prefixed framing, uncompressed.
pub(super) fn frame(message: &[u8]) -> Bytes {
    let mut framed = BytesMut::new();
    put_framed(&mut framed, message);
    framed.freeze()
}

/// The one message of a unary response.
fn unframe(mut framed: Bytes) -> anyhow::Result<Bytes> {
    if framed.len() < 5 {
        bail!("response of {} bytes, no message", framed.len());
    }
    let compressed = framed[0];
    let len = u32::from_be_bytes([framed[1], framed[2], framed[3], framed[4]]) as usize;
    if compressed != 0 {
        bail!("compressed response (not asked for)");
    }
    if framed.len() != 5 + len {
        bail!(
            "response of {} bytes for a {len}-byte message",
            framed.len()
        );
    }
    Ok(framed.split_off(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let framed = frame(b"hello");
        assert_eq!(&framed[..5], &[0, 0, 0, 0, 5]);
        assert_eq!(unframe(framed).unwrap(), Bytes::from_static(b"hello"));
        assert!(unframe(Bytes::from_static(&[0, 0, 0, 0, 9, 1])).is_err());
        assert!(unframe(Bytes::from_static(&[1, 0, 0, 0, 0])).is_err());
        assert!(unframe(Bytes::from_static(&[0, 0])).is_err());
    }
}
