//! The two throughput calls, `UpdatePod` and `Sync`, answered without tonic's generated
//! server: their messages are cut straight out of the request body's HTTP/2 frames, and
//! a unary answer is one frame of data and one of trailers.
//!
//! tonic reads every call through its `Streaming` decoder, which copies each frame into a
//! buffer of its own before decoding, and wraps the answer in a stream encoder. Here a
//! message that lies whole within one frame is a slice of that frame (no copy), and one
//! split across frames is joined once.
//!
//! What the caller sees is tonic's behaviour, status for status: the same compression
//! check, size limit, framing errors and messages, the same handlers (shared with the
//! tonic service) and the same error table. Every other method still goes through tonic.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body::Body as HttpBody;
use prost::Message;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::BoxFuture;
use tonic::metadata::MetadataValue;

use super::service::{self, State};
use super::wire::SyncRequestWire;

/// A gRPC message's frame header: the compressed flag and the length.
const HEADER_BYTES: usize = 5;

const UPDATE_POD_PATH: &str = "/preemptd.v1.Preemption/UpdatePod";
const SYNC_PATH: &str = "/preemptd.v1.Preemption/Sync";

/// Answers the calls this module serves; the router asks it before tonic.
#[derive(Clone)]
pub(crate) struct DirectCalls {
    state: Arc<State>,
    max_message_bytes: usize,
}

impl DirectCalls {
    pub fn new(state: Arc<State>, max_message_bytes: usize) -> Self {
        DirectCalls {
            state,
            max_message_bytes,
        }
    }

    /// The method of `path`, if it is one this module serves.
    pub fn method(&self, path: &str) -> Option<DirectMethod> {
        match path {
            UPDATE_POD_PATH => Some(DirectMethod::UpdatePod),
            SYNC_PATH => Some(DirectMethod::Sync),
            _ => None,
        }
    }

    pub fn call(
        &self,
        method: DirectMethod,
        request: http::Request<Body>,
    ) -> BoxFuture<http::Response<Body>, Infallible> {
        let state = self.state.clone();
        let max = self.max_message_bytes;
        match method {
            DirectMethod::UpdatePod => {
                Box::pin(async move { Ok(answer(update_pod(state, request, max).await, max)) })
            }
            DirectMethod::Sync => {
                Box::pin(async move { Ok(answer(sync(state, request, max).await, max)) })
            }
        }
    }
}

/// The methods served here.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DirectMethod {
    UpdatePod,
    Sync,
}

async fn update_pod(
    state: Arc<State>,
    request: http::Request<Body>,
    max_message_bytes: usize,
) -> Result<super::pb::UpdatePodResponse, Status> {
    let mut messages = MessageReader::of_request(request, max_message_bytes)?;
    let encoding = messages
        .next()
        .await?
        .ok_or_else(|| Status::internal("Missing request message."))?;
    // As tonic does before answering: the rest of the body is read (any further
    // message is read and dropped), so a malformed end still fails the call.
    while messages.next().await?.is_some() {}
    service::update_pod_encoded(&state, encoding).await
}

async fn sync(
    state: Arc<State>,
    request: http::Request<Body>,
    max_message_bytes: usize,
) -> Result<super::pb::SyncResponse, Status> {
    let messages = SyncMessages(MessageReader::of_request(request, max_message_bytes)?);
    service::sync_stream(state, messages).await
}

/// A response of one message and `grpc-status: 0`, or of the call's error status.
fn answer<M: Message>(result: Result<M, Status>, max_message_bytes: usize) -> http::Response<Body> {
    let message = match result.and_then(|m| frame(&m, max_message_bytes)) {
        Ok(message) => message,
        Err(status) => return status.into_http(),
    };
    let mut trailers = http::HeaderMap::with_capacity(1);
    trailers.insert(GRPC_STATUS, http::HeaderValue::from_static("0"));
    let mut response = http::Response::new(Body::new(UnaryBody {
        message: Some(message),
        trailers: Some(trailers),
    }));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

const GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// A unary answer's body: its message, then its trailers. Unlike a body of known size,
/// it gets no `content-length` header from hyper (tonic's answers have none either),
/// which would be one more header to encode on every call.
struct UnaryBody {
    message: Option<Bytes>,
    trailers: Option<http::HeaderMap>,
}

impl HttpBody for UnaryBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(http_body::Frame::data(message))));
        }
        Poll::Ready(
            self.trailers
                .take()
                .map(|t| Ok(http_body::Frame::trailers(t))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

/// `message` with its gRPC frame header (uncompressed).
fn frame<M: Message>(message: &M, max_message_bytes: usize) -> Result<Bytes, Status> {
    let len = message.encoded_len();
    if len > max_message_bytes {
        // tonic's words for an answer over the limit.
        return Err(Status::out_of_range(format!(
            "Error, encoded message length too large: found {len} bytes, the limit is: {max_message_bytes} bytes"
        )));
    }
    let mut buf = BytesMut::with_capacity(HEADER_BYTES + len);
    buf.put_u8(0);
    buf.put_u32(len as u32);
    message
        .encode(&mut buf)
        .map_err(|error| Status::internal(error.to_string()))?;
    Ok(buf.freeze())
}

/// The request's `grpc-encoding`, as tonic checks it: this server accepts no compression,
/// so anything but `identity` is UNIMPLEMENTED, naming what it does accept.
fn check_encoding(headers: &http::HeaderMap) -> Result<(), Status> {
    let Some(value) = headers.get("grpc-encoding") else {
        return Ok(());
    };
    if value.as_bytes() == b"identity" {
        return Ok(());
    }
    let named = match std::str::from_utf8(value.as_bytes()) {
        Ok(text) => text.to_string(),
        Err(_) => format!("{:?}", value.as_bytes()),
    };
    let mut status = Status::unimplemented(format!(
        "Content is compressed with `{named}` which isn't supported"
    ));
    status.metadata_mut().insert(
        "grpc-accept-encoding",
        MetadataValue::from_static("identity"),
    );
    Err(status)
}

/// The gRPC messages of a request body, in order, as they arrive.
pub(crate) struct MessageReader {
    body: Body,
    /// Received and not yet read, when it is one frame's data (or the rest of it).
    held: Bytes,
    /// Received and not yet read, when a message was split across frames: joined here.
    joined: BytesMut,
    max_message_bytes: usize,
    ended: bool,
}

impl MessageReader {
    pub fn new(body: Body, max_message_bytes: usize) -> Self {
        MessageReader {
            body,
            held: Bytes::new(),
            joined: BytesMut::new(),
            max_message_bytes,
            ended: false,
        }
    }

    /// The messages of `request`'s body, once its `grpc-encoding` passes tonic's check.
    pub fn of_request(
        request: http::Request<Body>,
        max_message_bytes: usize,
    ) -> Result<Self, Status> {
        check_encoding(request.headers())?;
        Ok(Self::new(request.into_body(), max_message_bytes))
    }

    /// The next message (`None` once the body has ended).
    pub async fn next(&mut self) -> Result<Option<Bytes>, Status> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    /// The next message (`None` once the body has ended), with tonic's statuses for
    /// malformed framing and a body that fails.
    pub fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, Status>> {
        loop {
            if let Some(message) = self.next_received()? {
                return Poll::Ready(Ok(Some(message)));
            }
            if self.ended {
                return Poll::Ready(if self.held.is_empty() && self.joined.is_empty() {
                    Ok(None)
                } else {
                    Err(Status::internal("Unexpected EOF decoding stream."))
                });
            }
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    // Request trailers carry nothing a call here reads.
                    if let Ok(data) = frame.into_data() {
                        self.receive(data)?;
                    }
                }
                // A client that cancels its stream ends it, as tonic reads a request.
                Some(Err(status)) if status.code() == tonic::Code::Cancelled => {
                    self.held.clear();
                    self.joined.clear();
                    self.ended = true;
                }
                Some(Err(status)) => return Poll::Ready(Err(status)),
                None => self.ended = true,
            }
        }
    }

    /// Takes in one frame's data. Only the part of it that completes a message begun in
    /// an earlier frame is copied; the rest is held as it came.
    fn receive(&mut self, mut data: Bytes) -> Result<(), Status> {
        if self.joined.is_empty() {
            if self.held.is_empty() {
                self.held = data;
                return Ok(());
            }
            // What is held is the start of a message this frame continues.
            self.joined.extend_from_slice(&self.held);
            self.held.clear();
        }
        // First the rest of the header, then the rest of the message.
        for _ in 0..2 {
            let whole = match self.frame_len(&self.joined)? {
                Some(len) => HEADER_BYTES + len,
                None => HEADER_BYTES,
            };
            let take = (whole - self.joined.len()).min(data.len());
            self.joined.reserve(whole - self.joined.len());
            self.joined.extend_from_slice(&data.split_to(take));
        }
        self.held = data;
        Ok(())
    }

    /// The next whole message already received.
    fn next_received(&mut self) -> Result<Option<Bytes>, Status> {
        if !self.joined.is_empty() {
            // A message split across frames comes first; while it is incomplete, nothing
            // after it has been received.
            return Ok(match self.frame_len(&self.joined)? {
                Some(len) if self.joined.len() == HEADER_BYTES + len => {
                    Some(self.joined.split().freeze().slice(HEADER_BYTES..))
                }
                _ => None,
            });
        }
        let Some(len) = self.frame_len(&self.held)? else {
            return Ok(None);
        };
        if self.held.len() < HEADER_BYTES + len {
            return Ok(None);
        }
        let message = self.held.slice(HEADER_BYTES..HEADER_BYTES + len);
        self.held.advance(HEADER_BYTES + len);
        Ok(Some(message))
    }

    /// The length of the message whose frame `received` starts with, once its header is
    /// in.
    fn frame_len(&self, received: &[u8]) -> Result<Option<usize>, Status> {
        let Some(header) = received.first_chunk::<HEADER_BYTES>() else {
            return Ok(None);
        };
        match header[0] {
            0 => {}
            1 => {
                return Err(Status::internal(
                    "protocol error: received message with compressed-flag but no grpc-encoding was specified",
                ));
            }
            flag => {
                return Err(Status::internal(format!(
                    "protocol error: received message with invalid compression flag: {flag} (valid flags are 0 and 1), while sending request"
                )));
            }
        }
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if len > self.max_message_bytes {
            return Err(Status::out_of_range(format!(
                "Error, decoded message length too large: found {len} bytes, the limit is: {} bytes",
                self.max_message_bytes
            )));
        }
        Ok(Some(len))
    }
}

/// A `Sync` request's messages, each decoded as tonic's codec would.
pub(crate) struct SyncMessages(MessageReader);

impl service::sync::Messages for SyncMessages {
    fn poll_message(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<SyncRequestWire>, Status>> {
        let message = ready!(self.0.poll_message(cx));
        Poll::Ready(message.and_then(|m| {
            match m {
                None => Ok(None),
                Some(bytes) => SyncRequestWire::decode_encoding(bytes)
                    .map(Some)
                    .map_err(|error| Status::internal(error.to_string())),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that yields `chunks` as its data frames.
    fn body(chunks: Vec<Vec<u8>>) -> Body {
        let frames = chunks
            .into_iter()
            .map(|c| Ok::<_, Status>(http_body::Frame::data(Bytes::from(c))));
        Body::new(http_body_util::StreamBody::new(tokio_stream::iter(frames)))
    }

    fn framed(message: &[u8]) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(message);
        out
    }

    async fn read_all(chunks: Vec<Vec<u8>>, max: usize) -> Result<Vec<Vec<u8>>, Status> {
        let mut reader = MessageReader::new(body(chunks), max);
        let mut out = Vec::new();
        while let Some(m) = reader.next().await? {
            out.push(m.to_vec());
        }
        Ok(out)
    }

    #[tokio::test]
    async fn messages_are_read_however_the_frames_split_them() {
        let messages: Vec<Vec<u8>> =
            vec![b"first".to_vec(), Vec::new(), vec![7; 300], b"x".to_vec()];
        let stream: Vec<u8> = messages.iter().flat_map(|m| framed(m)).collect();
        // Every split into two frames, and one byte per frame.
        for at in 0..=stream.len() {
            let chunks = vec![stream[..at].to_vec(), stream[at..].to_vec()];
            assert_eq!(
                read_all(chunks, 1024).await.unwrap(),
                messages,
                "split at {at}"
            );
        }
        let bytes = stream.iter().map(|b| vec![*b]).collect();
        assert_eq!(read_all(bytes, 1024).await.unwrap(), messages);
    }

    #[tokio::test]
    async fn malformed_framing_fails_with_tonics_statuses() {
        let truncated = framed(b"hello")[..7].to_vec();
        let status = read_all(vec![truncated], 1024).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Internal);
        assert_eq!(status.message(), "Unexpected EOF decoding stream.");

        let mut compressed = framed(b"hello");
        compressed[0] = 1;
        let status = read_all(vec![compressed], 1024).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Internal);
        assert!(status.message().contains("compressed-flag"), "{status:?}");

        let mut bad_flag = framed(b"hello");
        bad_flag[0] = 9;
        let status = read_all(vec![bad_flag], 1024).await.unwrap_err();
        assert!(
            status.message().contains("invalid compression flag: 9"),
            "{status:?}"
        );

        let status = read_all(vec![framed(&[0; 100])], 99).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::OutOfRange);
        assert!(status.message().contains("found 100 bytes"), "{status:?}");
        assert_eq!(read_all(vec![framed(&[0; 99])], 99).await.unwrap().len(), 1);
    }

    #[test]
    fn only_identity_encoding_is_accepted() {
        let mut headers = http::HeaderMap::new();
        assert!(check_encoding(&headers).is_ok());
        headers.insert("grpc-encoding", http::HeaderValue::from_static("identity"));
        assert!(check_encoding(&headers).is_ok());
        headers.insert("grpc-encoding", http::HeaderValue::from_static("gzip"));
        let status = check_encoding(&headers).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        assert_eq!(
            status.metadata().get("grpc-accept-encoding").unwrap(),
            "identity"
        );
    }
}
