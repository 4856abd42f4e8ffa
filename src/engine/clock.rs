//! The time a decision is made at, when the caller gives none.

/// Now, in Unix nanoseconds (0 before the epoch, `i64::MAX` past 2262).
pub(crate) fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
