//! The Kubernetes JSON/YAML reader and the builder behind it: any document, a single
//! object or a List, is read or refused with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptd::model::decode;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(document) = decode::parse_document(text) else {
        return;
    };
    let _ = decode::decode_object(&document);
    let _ = decode::decode_list(&document);
});
