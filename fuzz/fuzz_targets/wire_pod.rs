//! `UpdatePod`'s wire reader against prost and the typed reader: on any bytes, the wire
//! reader refuses exactly what prost refuses, and a pod it reads straight from the bytes
//! is the pod (or the error) the typed reader makes of prost's decoding.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use preemptd::model::build::Memo;
use preemptd::server::{convert, pb, wire};
use prost::Message as _;

fuzz_target!(|data: &[u8]| {
    let encoding = Bytes::copy_from_slice(data);
    let decoded = pb::UpdatePodRequest::decode(encoding.clone());
    let read = wire::read_update_pod(encoding, &mut Memo::disabled());
    match (decoded, read) {
        (Err(_), Err(_)) => {}
        (Ok(request), Ok(wire::ReceivedPod::Upserted(pod))) => {
            let Some(pb::update_pod_request::Change::Upsert(typed)) = request.change else {
                panic!("the wire reader upserted a request that holds no upsert");
            };
            assert_eq!(pod, convert::pod("upsert", &typed));
        }
        (Ok(request), Ok(wire::ReceivedPod::Decoded(boxed))) => assert_eq!(request, *boxed),
        (decoded, read) => panic!("prost and the wire reader disagree: {decoded:?} / {read:?}"),
    }
});
