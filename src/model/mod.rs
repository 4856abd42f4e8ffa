//! Domain types: the scheduling-relevant subset of Kubernetes Nodes, Pods and
//! PodDisruptionBudgets, already reduced to what the filters and the preemption
//! algorithm read (effective requests, host ports, parsed selectors).
//!
//! Nothing here knows about gRPC or async runtimes.

pub mod build;
pub mod decode;
pub mod labels;
pub mod named;
pub mod namespace;
pub mod priority;
pub mod quantity;
pub mod resources;

mod node;
mod node_selector;
mod pdb;
mod pod;
mod pod_group;
mod taint;

use triomphe::Arc;

pub use labels::{LabelSelector, Labels, Operator, Requirement};
pub use node::{ContainerImage, Node, NodeCondition};
pub use node_selector::{
    NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
};
pub use pdb::PodDisruptionBudget;
pub use pod::{
    BIND_ALL_IP, Container, DEFAULT_SCHEDULER, DISRUPTION_TARGET, HostPort, InclusionPolicy,
    KeyHashes, NonZeroRequests, PREEMPTION_BY_SCHEDULER, Pod, PodAffinityTerm, PodCondition,
    PodDetails, PodPhase, PreemptionPolicy, PreferredSchedulingTerm, Protocol, StartTime,
    TopologySpreadConstraint, Unadmitted, WeightedPodAffinityTerm, WhenUnsatisfiable,
    normalized_image_name,
};
pub use pod_group::{DisruptionMode, PodGroup, SchedulingPolicy, Workload};
pub use resources::{ContainerResources, Resources};
pub use taint::{Taint, TaintEffect, Toleration, TolerationOperator, Tolerations};

/// Interned-by-sharing string used for names, label keys and values.
pub type Str = Arc<str>;

/// Identity of a pod in results (victims, nominations to clear).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct PodRef {
    /// The pod's namespace.
    #[serde(serialize_with = "serialize_str")]
    pub namespace: Str,
    /// The pod's name.
    #[serde(serialize_with = "serialize_str")]
    pub name: Str,
    /// The pod's uid.
    #[serde(serialize_with = "serialize_str")]
    pub uid: Str,
}

fn serialize_str<S: serde::Serializer>(value: &Str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value)
}

/// A short hash of a pod's name or uid, the same for the process's life (seeded at
/// random, so clients cannot choose colliding names).
pub fn key_hash(key: &str) -> u32 {
    static STATE: std::sync::LazyLock<ahash::RandomState> =
        std::sync::LazyLock::new(ahash::RandomState::new);
    // The low half of a 64-bit hash: every bit of it is mixed.
    STATE.hash_one(key) as u32
}

/// `bytes` as a string when they are UTF-8. Most strings a client sends (names, uids,
/// label values) are short and ASCII: those skip the alignment steps `std::str::from_utf8`
/// takes before its own ASCII fast path, which cost more than the check on such strings.
#[inline]
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: every ASCII byte is a one-byte UTF-8 character, so ASCII bytes are UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// The instant an RFC 3339 timestamp names, in nanoseconds since the Unix epoch; `None`
/// when it is not one or falls outside the nanoseconds an `i64` holds.
///
/// Kubernetes writes every timestamp as `YYYY-MM-DDTHH:MM:SSZ`: that form is read here
/// field by field, a fifth of what chrono's general parser costs, and
/// anything else (fractions, offsets, lowercase, a leap second, an invalid date) is left to
/// chrono, which then decides alone.
pub fn rfc3339_nanos(text: &str) -> Option<i64> {
    kubernetes_timestamp_nanos(text.as_bytes()).or_else(|| {
        chrono::DateTime::parse_from_rfc3339(text)
            .ok()?
            .timestamp_nanos_opt()
    })
}

fn kubernetes_timestamp_nanos(text: &[u8]) -> Option<i64> {
    let [
        y0,
        y1,
        y2,
        y3,
        b'-',
        m0,
        m1,
        b'-',
        d0,
        d1,
        b'T',
        h0,
        h1,
        b':',
        i0,
        i1,
        b':',
        s0,
        s1,
        b'Z',
    ] = *text
    else {
        return None;
    };
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let year = i32::try_from(number(&[y0, y1, y2, y3])?).ok()?;
    // An invalid date or time, and a leap second (60), are chrono's to read.
    chrono::NaiveDate::from_ymd_opt(year, number(&[m0, m1])?, number(&[d0, d1])?)?
        .and_hms_opt(number(&[h0, h1])?, number(&[i0, i1])?, number(&[s0, s1])?)?
        .and_utc()
        .timestamp_nanos_opt()
}

/// Where held objects get one shared copy of values many of them carry. Each call makes
/// its argument the shared copy of its value, leaving it as it is when it already is one.
pub trait Interner {
    /// Replaces `s` with the shared copy of its value.
    fn share_str(&mut self, s: &mut Str);
    /// Equal label sets become one, and so do the strings in them.
    fn share_labels(&mut self, labels: &mut Labels);
    /// Equal details become one, held without the container specs [`PodDetails::finish`]
    /// has folded into them (see [`PodDetails::drop_specs`]).
    fn share_details(&mut self, details: &mut Arc<PodDetails>);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn chrono_nanos(text: &str) -> Option<i64> {
        chrono::DateTime::parse_from_rfc3339(text)
            .ok()?
            .timestamp_nanos_opt()
    }

    #[test]
    fn timestamps_read_as_chrono_reads_them() {
        for (text, nanos) in [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2023-11-14T22:13:20Z", Some(1_700_000_000_000_000_000)),
            ("2024-02-29T23:59:59Z", Some(1_709_251_199_000_000_000)),
            // The edges of what nanoseconds in an i64 hold.
            ("1677-09-21T00:12:44Z", Some(-9_223_372_036_000_000_000)),
            ("1677-09-21T00:12:43Z", None),
            ("2262-04-11T23:47:16Z", Some(9_223_372_036_000_000_000)),
            ("2262-04-11T23:47:17Z", None),
            ("2023-02-29T00:00:00Z", None),
            ("2023-13-01T00:00:00Z", None),
            ("2023-04-31T00:00:00Z", None),
            ("2023-01-01T24:00:00Z", None),
            ("2023-01-01T00:00:0xZ", None),
            ("2023-01-01 00:00:00Z", Some(1_672_531_200_000_000_000)),
            // Left to chrono: a leap second, a fraction, an offset, lowercase.
            (
                "2016-12-31T23:59:60Z",
                Some(1_483_228_799_000_000_000 + 1_000_000_000),
            ),
            ("2023-11-14T22:13:20.5Z", Some(1_700_000_000_500_000_000)),
            ("2023-11-14T23:13:20+01:00", Some(1_700_000_000_000_000_000)),
            ("2023-11-14t22:13:20z", Some(1_700_000_000_000_000_000)),
            ("", None),
        ] {
            assert_eq!(rfc3339_nanos(text), nanos, "{text}");
            assert_eq!(rfc3339_nanos(text), chrono_nanos(text), "{text}");
        }
    }

    proptest! {
        #[test]
        fn any_timestamp_of_the_kubernetes_shape_reads_as_chrono_reads_it(
            digits in proptest::collection::vec(prop_oneof![8 => 0u8..10, 1 => 10u8..16], 14),
        ) {
            let d: Vec<char> = digits
                .iter()
                .map(|&d| char::from(if d < 10 { b'0' + d } else { b"x:/ Z-"[usize::from(d - 10)] }))
                .collect();
            let text = format!(
                "{}{}{}{}-{}{}-{}{}T{}{}:{}{}:{}{}Z",
                d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13]
            );
            prop_assert_eq!(rfc3339_nanos(&text), chrono_nanos(&text), "{}", text);
        }

        #[test]
        fn any_timestamp_in_range_reads_back(nanos in -9_223_372_036i64..=9_223_372_036) {
            let text = chrono::DateTime::from_timestamp(nanos, 0)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
            prop_assert_eq!(rfc3339_nanos(&text), Some(nanos * 1_000_000_000));
        }

        #[test]
        fn bytes_are_a_string_exactly_when_std_says_so(bytes in proptest::collection::vec(
            prop_oneof![4 => 0u8..0x80, 1 => any::<u8>()], 0..40,
        )) {
            prop_assert_eq!(utf8(&bytes), std::str::from_utf8(&bytes).ok());
        }
    }
}
