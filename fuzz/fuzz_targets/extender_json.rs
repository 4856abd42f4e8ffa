//! The kube-scheduler extender's request decoding and the builder behind it: any body
//! sent to `/filter`, `/prioritize` or `/preempt` is read or refused with an error, never
//! a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptd::server::extender::wire;

fuzz_target!(|data: &[u8]| {
    if let Ok(args) = wire::parse_args(data) {
        let _ = args.build();
    }
    if let Ok(args) = wire::parse_preemption_args(data) {
        let _ = args.build();
    }
});
