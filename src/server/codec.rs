//! The server's gRPC codec: prost's, with a larger receive buffer for `Sync` streams.
//!
//! tonic reads a call's messages into one buffer, and before each message makes room for
//! that message's length beyond what it already holds. With prost's 8 KiB default, a
//! stream of small messages in 16 KiB HTTP/2 frames keeps running out of room, and each
//! time the buffer is moved (its unread frame copied) to a new one: for a bulk load, about
//! once per message. Each new buffer is at least the first one's size, so a 64 KiB first
//! buffer moves a few times per frame at most. Unary calls keep the default: their one
//! message fits it.

use std::any::TypeId;
use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use super::wire::SyncRequestWire;

/// First receive buffer of a `Sync` stream (`bytes` keeps no larger first size).
const SYNC_BUFFER_BYTES: usize = 64 * 1024;
/// tonic's default (it matters only to responses, which this codec leaves as they are).
const YIELD_THRESHOLD_BYTES: usize = 32 * 1024;

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
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        let settings = if TypeId::of::<U>() == TypeId::of::<SyncRequestWire>() {
            BufferSettings::new(SYNC_BUFFER_BYTES, YIELD_THRESHOLD_BYTES)
        } else {
            BufferSettings::default()
        };
        ProstCodec::<T, U>::raw_decoder(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::pb;
    use crate::server::wire::UpdatePodRequestWire;
    use tonic::codec::Decoder as _;

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
            decoder_settings::<pb::UpdatePodResponse, UpdatePodRequestWire>(),
            format!("{:?}", BufferSettings::default())
        );
    }
}
