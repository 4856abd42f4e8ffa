//! Kubernetes quantities: any text parses or is refused, and a parsed quantity's own
//! rendering parses back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptd::model::quantity::Quantity;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(quantity) = Quantity::parse(text) {
        let rendered = quantity.to_string();
        assert_eq!(
            Quantity::parse(&rendered).ok(),
            Some(quantity),
            "{text:?} rendered as {rendered:?}"
        );
    }
});
