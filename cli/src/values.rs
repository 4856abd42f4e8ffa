//! Flag values: durations, addresses (IP or host name, with a port), kubeconfig paths.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::PathBuf;
use std::time::Duration;

/// A duration: a number with a unit (`ms`, `s`, `m`, `h`), or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: expected e.g. 10s, 500ms, 2m"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration {text:?}: unknown unit {unit:?} (ms, s, m, h)"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("invalid duration {text:?}: out of range"))
}

/// A duration flag's value; shown as `parse_duration` reads it back (`10s`, `500ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl std::fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let duration = self.0;
        if duration.subsec_nanos() == 0 {
            write!(f, "{}s", duration.as_secs())
        } else if duration.subsec_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}ms", duration.as_millis())
        } else {
            write!(f, "{}s", duration.as_secs_f64())
        }
    }
}

pub fn parse_human_duration(text: &str) -> Result<HumanDuration, String> {
    parse_duration(text).map(HumanDuration)
}

/// A duration where `0` or `off` means none.
pub fn parse_optional_duration(text: &str) -> Result<OptionalDuration, String> {
    if text == "off" {
        return Ok(OptionalDuration(None));
    }
    let duration = parse_duration(text)?;
    Ok(OptionalDuration((!duration.is_zero()).then_some(duration)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalDuration(pub Option<Duration>);

impl std::fmt::Display for OptionalDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(duration) => HumanDuration(duration).fmt(f),
            None => f.write_str("off"),
        }
    }
}

/// A listen address, or `off` (or empty) for none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalAddr(pub Option<SocketAddr>);

pub fn parse_optional_addr(text: &str) -> Result<OptionalAddr, String> {
    if text.is_empty() || text == "off" {
        return Ok(OptionalAddr(None));
    }
    parse_listen(text)
        .map(|addr| OptionalAddr(Some(addr)))
        .map_err(|error| format!("{error} or off"))
}

pub fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("invalid number {text:?}: {e}")),
    }
}

pub fn parse_positive_duration(text: &str) -> Result<HumanDuration, String> {
    match parse_duration(text)? {
        duration if duration.is_zero() => Err("must be more than 0".to_string()),
        duration => Ok(HumanDuration(duration)),
    }
}

/// A `host:port` whose host is an IP address or a name; `[v6]:port` for IPv6 literals.
fn split_host_port(text: &str) -> Result<(&str, u16), String> {
    let expected = "expected host:port (e.g. 127.0.0.1:50051, localhost:50051, [::1]:50051)";
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("invalid address {text:?}: {expected}"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("invalid address {text:?}: bad port {port:?}; {expected}"))?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || host.contains(['/', ' ']) {
        return Err(format!("invalid address {text:?}: {expected}"));
    }
    Ok((host, port))
}

/// Every address `text` (`host:port`) stands for: an IP literal as it is, a name as the
/// system resolver returns it.
pub fn resolve(text: &str) -> Result<Vec<SocketAddr>, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let (host, port) = split_host_port(text)?;
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|error| format!("cannot resolve {host:?}: {error}"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("cannot resolve {host:?}: no addresses"));
    }
    Ok(addrs)
}

/// The address a server binds for `text`: an IP literal as it is; a name binds one of
/// its addresses, the first IPv4 one when it has any (as Go's `net.Listen` does, so
/// `localhost:50051` is `127.0.0.1:50051`), else the first.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let addrs = resolve(text)?;
    Ok(addrs
        .iter()
        .find(|addr| addr.is_ipv4())
        .copied()
        .unwrap_or(addrs[0]))
}

/// A server to connect to, `host:port`: checked when parsed, resolved when connecting
/// (every address of a name is tried in turn).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target(String);

impl Target {
    /// The host part: a name, or an IP address without brackets.
    pub fn host(&self) -> &str {
        split_host_port(&self.0).map_or("", |(host, _)| host)
    }

    /// Whether the host is a name rather than an IP address.
    pub fn is_name(&self) -> bool {
        self.host().parse::<std::net::IpAddr>().is_err()
    }

    /// Every address the target stands for.
    pub fn resolve(&self) -> Result<Vec<SocketAddr>, String> {
        resolve(&self.0)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<SocketAddr> for Target {
    fn from(addr: SocketAddr) -> Self {
        Target(addr.to_string())
    }
}

pub fn parse_target(text: &str) -> Result<Target, String> {
    if text.parse::<SocketAddr>().is_err() {
        split_host_port(text)?;
    }
    Ok(Target(text.to_string()))
}

/// `--kubeconfig`'s value: a path, or empty when the flag came without one (then
/// KUBECONFIG or ~/.kube/config, as kubectl reads them). clap's own path parser refuses
/// the empty value `default_missing_value` supplies.
pub fn parse_kubeconfig(text: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_take_ip_literals_and_names() {
        assert_eq!(
            parse_listen("0.0.0.0:50051"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 50051)))
        );
        assert_eq!(
            parse_listen("[::1]:7"),
            Ok("[::1]:7".parse().expect("literal"))
        );
        assert_eq!(
            parse_listen("localhost:50051"),
            Ok(SocketAddr::from(([127, 0, 0, 1], 50051)))
        );
        for bad in ["localhost", "1.2.3.4", ":50051", "localhost:port", "a b:1"] {
            assert!(parse_listen(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn targets_keep_their_host_names() {
        let target = parse_target("localhost:50051").expect("target");
        assert_eq!(target.host(), "localhost");
        assert!(target.is_name());
        assert!(
            target
                .resolve()
                .expect("resolve")
                .iter()
                .all(|a| a.ip().is_loopback())
        );
        let literal = parse_target("[::1]:50051").expect("literal");
        assert_eq!(literal.host(), "::1");
        assert!(!literal.is_name());
        assert!(parse_target("nowhere").is_err());
    }
}
