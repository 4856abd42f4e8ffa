//! `UpdatePod`, the one call the generated server leaves out (build.rs): the hot unary
//! update, served here on tonic's own request decoder and answered as one frame of data
//! and one of trailers.
//!
//! tonic's generic unary path (request metadata, the response's stream encoder, header
//! sanitising) is most of what this call costs beyond its own work, so the call skips it.
//! What a caller sees is still tonic's behaviour: its decoder reads the body (framing,
//! size limit, the rest of the body read before answering), the compression check and
//! every status are tonic's words, and all of them come from the one error table.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use http_body::{Body as HttpBody, Frame};
use tonic::Status;
use tonic::body::Body;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder, Streaming};
use tonic::codegen::BoxFuture;

use super::codec::{BUFFER_BYTES, YIELD_THRESHOLD_BYTES};
use super::errors::ApiError;
use super::pb;
use super::service;
use crate::app::App;

/// The path this module serves.
pub(crate) const UPDATE_POD_PATH: &str = "/preemptd.v1.Preemption/UpdatePod";

/// A gRPC message's frame header: the compressed flag and the length.
const HEADER_BYTES: usize = 5;

/// Serves `UpdatePod` calls (the router hands them here).
#[derive(Clone)]
pub(crate) struct UpdatePodCall {
    app: Arc<App>,
    max_message_bytes: usize,
}

impl UpdatePodCall {
    pub fn new(app: Arc<App>, max_message_bytes: usize) -> Self {
        UpdatePodCall {
            app,
            max_message_bytes,
        }
    }

    pub fn call(
        &self,
        request: http::Request<Body>,
    ) -> BoxFuture<http::Response<Body>, Infallible> {
        let app = self.app.clone();
        let max = self.max_message_bytes;
        Box::pin(async move {
            let answer = match read_message(request, max).await {
                Ok(encoding) => service::update_pod(&app, encoding).await,
                Err(err) => Err(err),
            };
            Ok(respond(answer, max))
        })
    }
}

/// The request's one message, as tonic reads a unary request: its `grpc-encoding`
/// checked, then the body read to its end (a malformed later message still fails the
/// call).
async fn read_message(request: http::Request<Body>, max: usize) -> Result<Bytes, ApiError> {
    check_encoding(request.headers())?;
    let mut messages = Streaming::new_request(MessageBytes, request.into_body(), None, Some(max));
    let message = messages
        .message()
        .await?
        .ok_or_else(ApiError::missing_message)?;
    while messages.message().await?.is_some() {}
    Ok(message)
}

/// The request's `grpc-encoding`: this server takes none but `identity`.
fn check_encoding(headers: &http::HeaderMap) -> Result<(), ApiError> {
    match headers.get("grpc-encoding") {
        None => Ok(()),
        Some(value) if value.as_bytes() == b"identity" => Ok(()),
        Some(value) => Err(ApiError::UnsupportedEncoding(
            match std::str::from_utf8(value.as_bytes()) {
                Ok(text) => text.to_string(),
                Err(_) => format!("{:?}", value.as_bytes()),
            },
        )),
    }
}

/// Decodes nothing: each message is handed on as its bytes, for `wire` to read.
struct MessageBytes;

impl Decoder for MessageBytes {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining())))
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD_BYTES)
    }
}

/// The answer: one message and `grpc-status: 0`, or the error's status alone.
fn respond(answer: Result<pb::UpdatePodResponse, ApiError>, max: usize) -> http::Response<Body> {
    match answer.and_then(|message| framed(&message, max)) {
        Ok(message) => {
            let mut trailers = http::HeaderMap::with_capacity(1);
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
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
        Err(err) => Status::from(err).into_http(),
    }
}

/// `message` with its frame header (uncompressed), if it is within the size limit.
fn framed(message: &impl prost::Message, max: usize) -> Result<Bytes, ApiError> {
    let len = message.encoded_len();
    let header_len = match u32::try_from(len) {
        Ok(header_len) if len <= max => header_len,
        _ => return Err(ApiError::answer_too_large(len, max)),
    };
    let mut buf = BytesMut::with_capacity(HEADER_BYTES + len);
    buf.put_u8(0);
    buf.put_u32(header_len);
    message.encode_raw(&mut buf);
    Ok(buf.freeze())
}

/// A unary answer's body: its message, then its trailers. It has no known size, so hyper
/// adds no `content-length` (tonic's answers have none either).
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
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;
    use prost::Message as _;

    async fn frames_of(response: http::Response<Body>) -> (http::HeaderMap, Vec<Frame<Bytes>>) {
        let (head, mut body) = response.into_parts();
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.expect("frame"));
        }
        (head.headers, frames)
    }

    #[tokio::test]
    async fn an_answer_is_one_framed_message_then_status_ok() {
        let message = pb::UpdatePodResponse {
            applied: true,
            resource_version: 7,
            revision: 3,
            epoch: "e".into(),
            stale: String::new(),
        };
        let (headers, frames) = frames_of(respond(Ok(message.clone()), 1024)).await;
        assert_eq!(headers["content-type"], "application/grpc");
        assert!(!headers.contains_key("grpc-status"));
        let [data, trailers] = &frames[..] else {
            panic!("two frames, not {frames:?}");
        };
        let data = data.data_ref().expect("data first");
        assert_eq!(data[0], 0, "uncompressed");
        let len = u32::from_be_bytes(data[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, data.len() - HEADER_BYTES);
        assert_eq!(
            pb::UpdatePodResponse::decode(&data[HEADER_BYTES..]).unwrap(),
            message
        );
        assert_eq!(
            trailers.trailers_ref().expect("trailers")["grpc-status"],
            "0"
        );
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_is_out_of_range() {
        let message = pb::UpdatePodResponse {
            epoch: "x".repeat(64),
            ..Default::default()
        };
        let (headers, frames) = frames_of(respond(Ok(message), 16)).await;
        assert!(frames.is_empty(), "{frames:?}");
        assert_eq!(
            headers["grpc-status"],
            (tonic::Code::OutOfRange as i32).to_string()
        );
    }

    #[test]
    fn only_identity_encoding_is_taken() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(check_encoding(&headers), Ok(()));
        headers.insert("grpc-encoding", "identity".parse().unwrap());
        assert_eq!(check_encoding(&headers), Ok(()));
        headers.insert("grpc-encoding", "gzip".parse().unwrap());
        let status = Status::from(check_encoding(&headers).unwrap_err());
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        assert_eq!(
            status.message(),
            "Content is compressed with `gzip` which isn't supported"
        );
        assert_eq!(
            status.metadata().get("grpc-accept-encoding").unwrap(),
            "identity"
        );
    }
}
