//! The server's gRPC codec: prost's, with a larger receive buffer for `Sync` streams.
//!
//! tonic reads a call's messages into one buffer, and before each message makes room for
//! that message's length beyond what it already holds. With prost's 8 KiB default, a
//! stream of small messages in 16 KiB HTTP/2 frames keeps running out of room, and each
//! time the buffer is moved (its unread frame copied) to a new one: for a bulk load, about
//! once per message. Each new buffer is at least the first one's size, so a 64 KiB first
//! buffer moves a few times per frame at most.
//!
//! Every other buffer, unary calls' and responses' (and `UpdatePod`'s, in `unary`), is
//! 4 KiB rather than tonic's 8: one message of nearly every call fits it, and it is the
//! largest size jemalloc's allocation fast path serves (a larger buffer takes the slow
//! path twice a call).

use std::any::TypeId;
use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstDecoder, ProstEncoder};

use super::wire::SyncRequestWire;

/// First receive buffer of a `Sync` stream (`bytes` keeps no larger first size).
const SYNC_BUFFER_BYTES: usize = 64 * 1024;
/// First buffer of every other call's messages and of every response.
pub(super) const BUFFER_BYTES: usize = 4 * 1024;
/// tonic's default (it matters only to responses).
pub(super) const YIELD_THRESHOLD_BYTES: usize = 32 * 1024;

/// The codec of the generated server (build.rs names it).
#[derive(Debug, Clone)]
pub struct ServerCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for ServerCodec<T, U> {
    fn default() -> Self {
        ServerCodec(PhantomData)
    }
}

impl<T, U> Codec for ServerCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::new(BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD_BYTES))
    }

    fn decoder(&mut self) -> Self::Decoder {
        let buffer = if TypeId::of::<U>() == TypeId::of::<SyncRequestWire>() {
            SYNC_BUFFER_BYTES
        } else {
            BUFFER_BYTES
        };
        ProstDecoder::new(BufferSettings::new(buffer, YIELD_THRESHOLD_BYTES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::pb;
    use tonic::codec::{Decoder as _, Encoder as _};

    // `BufferSettings` has no `PartialEq`: compared by their debug form.
    fn decoder_settings<T, U>() -> String
    where
        T: prost::Message + Send + 'static,
        U: prost::Message + Default + Send + 'static,
    {
        format!(
            "{:?}",
            ServerCodec::<T, U>::default().decoder().buffer_settings()
        )
    }

    #[test]
    fn sync_streams_start_with_the_larger_receive_buffer() {
        assert_eq!(
            decoder_settings::<pb::SyncResponse, SyncRequestWire>(),
            format!(
                "{:?}",
                BufferSettings::new(SYNC_BUFFER_BYTES, YIELD_THRESHOLD_BYTES)
            )
        );
        assert_eq!(
            decoder_settings::<pb::UpdateNodeResponse, pb::UpdateNodeRequest>(),
            format!(
                "{:?}",
                BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD_BYTES)
            )
        );
    }

    #[test]
    fn responses_start_with_the_small_buffer() {
        assert_eq!(
            format!(
                "{:?}",
                ServerCodec::<pb::UpdateNodeResponse, pb::UpdateNodeRequest>::default()
                    .encoder()
                    .buffer_settings()
            ),
            format!(
                "{:?}",
                BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD_BYTES)
            )
        );
    }
}
