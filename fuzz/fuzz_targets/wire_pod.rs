//! `UpdatePod`'s wire reader against prost and the typed reader: on any bytes, received
//! as the server receives them (`UpdatePodRequestWire`, as tonic decodes it, then
//! `read_update_pod`), the wire reader refuses exactly what prost refuses, and a pod it
//! reads straight from the bytes is the pod (or the error) the typed reader makes of
//! prost's decoding.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use preemptd::model::Pod;
use preemptd::model::build::Memo;
use preemptd::server::{convert, pb, wire};
use prost::Message as _;

/// A pod as the cache holds it: a pod read from its encoding comes without the container
/// specs its requests and host ports were made of.
fn held(mut pod: Pod) -> Pod {
    if pod.details.holds_specs() {
        pod.details_mut().drop_specs();
    }
    pod
}

fuzz_target!(|data: &[u8]| {
    let encoding = Bytes::copy_from_slice(data);
    let decoded = pb::UpdatePodRequest::decode(encoding.clone());
    let received = wire::UpdatePodRequestWire::decode(encoding).expect("any bytes are taken");
    let read = wire::read_update_pod(received.0, &mut Memo::disabled());
    match (decoded, read) {
        (Err(_), Err(_)) => {}
        (Ok(request), Ok(wire::ReceivedPod::Upserted(pod))) => {
            let Some(pb::update_pod_request::Change::Upsert(typed)) = request.change else {
                panic!("the wire reader upserted a request that holds no upsert");
            };
            assert_eq!(pod.map(held), convert::pod("upsert", &typed).map(held));
        }
        (Ok(request), Ok(wire::ReceivedPod::Decoded(boxed))) => assert_eq!(request, *boxed),
        (decoded, read) => panic!("prost and the wire reader disagree: {decoded:?} / {read:?}"),
    }
});
