//! The server under measurement: a `preemptd serve` child process, and readings of a
//! process's resident set size and CPU time from `/proc`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::report::CpuPerOp;

/// `preemptd serve` in a process of its own, so its RSS is the server's alone (no client
/// data, no allocator shared with the client); killed when dropped.
pub(crate) struct ChildServer {
    pub(crate) process: std::process::Child,
    pub addr: SocketAddr,
}

impl ChildServer {
    /// How long the child may take to accept connections.
    const START_TIMEOUT: Duration = Duration::from_secs(20);

    pub(crate) async fn start() -> anyhow::Result<Self> {
        Self::start_with(&[]).await
    }

    /// A server with `extra` flags (e.g. `--extender-listen`).
    pub(crate) async fn start_with(extra: &[String]) -> anyhow::Result<Self> {
        let addr = free_loopback_addr()?;
        let exe = std::env::current_exe().context("locate the preemptd binary")?;
        let process = std::process::Command::new(exe)
            .args([
                "serve",
                "--listen",
                &addr.to_string(),
                "--metrics-listen",
                "off",
            ])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .context("start the server process (preemptd serve)")?;
        let mut child = ChildServer { process, addr };
        let deadline = Instant::now() + Self::START_TIMEOUT;
        loop {
            if let Some(status) = child.process.try_wait()? {
                bail!("the server process exited at start ({status})");
            }
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Ok(child);
            }
            if Instant::now() > deadline {
                bail!(
                    "the server process did not listen on {addr} within {:?}",
                    Self::START_TIMEOUT
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A loopback address with a port the OS just handed out: free, and nothing else on
/// loopback races for it in the moment before a child binds it.
pub(crate) fn free_loopback_addr() -> anyhow::Result<SocketAddr> {
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .context("find a free loopback port")?
        .port();
    Ok(SocketAddr::from(([127, 0, 0, 1], port)))
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Reads the server's resident set size and CPU time.
pub(crate) struct ServerProbe {
    pub(crate) in_process: bool,
    pub(crate) pid: Option<u32>,
}

impl ServerProbe {
    pub(crate) fn source(&self) -> &'static str {
        if self.in_process {
            "in-process"
        } else if self.pid.is_some() {
            "process"
        } else {
            "none"
        }
    }

    /// In-process, freed heap pages are returned to the OS first so the reading counts
    /// what is held, not what the allocator keeps around.
    pub(crate) async fn rss(&self) -> Option<u64> {
        let path = match (self.in_process, self.pid) {
            (true, _) => "/proc/self/status".to_string(),
            (false, Some(pid)) => format!("/proc/{pid}/status"),
            (false, None) => return None,
        };
        let in_process = self.in_process;
        tokio::task::spawn_blocking(move || {
            if in_process {
                preemptd::ops::memory::release_free_memory();
            }
            vm_rss(&std::fs::read_to_string(path).ok()?)
        })
        .await
        .ok()
        .flatten()
    }

    /// CPU time of the server process and of this one, when they are apart (in-process,
    /// one process runs both and neither figure would mean anything).
    pub(crate) fn cpu(&self) -> CpuReading {
        let apart = !self.in_process;
        CpuReading {
            server: self
                .pid
                .filter(|_| apart)
                .and_then(|pid| process_cpu(&pid.to_string())),
            bench: if apart { process_cpu("self") } else { None },
        }
    }
}

/// CPU time used so far (or over a span) by the server and the bench process.
#[derive(Clone, Copy)]
pub(crate) struct CpuReading {
    server: Option<Duration>,
    bench: Option<Duration>,
}

impl CpuReading {
    pub(crate) const ZERO: CpuReading = CpuReading {
        server: Some(Duration::ZERO),
        bench: Some(Duration::ZERO),
    };

    /// The CPU time from this reading to `end`.
    pub(crate) fn until(self, end: CpuReading) -> CpuReading {
        let delta = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        CpuReading {
            server: delta(self.server, end.server),
            bench: delta(self.bench, end.bench),
        }
    }

    pub(crate) fn plus(self, other: CpuReading) -> CpuReading {
        let sum = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        CpuReading {
            server: sum(self.server, other.server),
            bench: sum(self.bench, other.bench),
        }
    }

    /// Microseconds of CPU per operation from this reading to `end`.
    pub(crate) fn per_op(self, end: CpuReading, ops: u64) -> CpuPerOp {
        let per = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) if ops > 0 => {
                Some(b.saturating_sub(a).as_secs_f64() * 1e6 / ops as f64)
            }
            _ => None,
        };
        CpuPerOp {
            server_us: per(self.server, end.server),
            bench_us: per(self.bench, end.bench),
        }
    }
}

/// User plus system CPU time of a process (`self` or a pid), from `/proc/PID/stat`.
fn process_cpu(pid: &str) -> Option<Duration> {
    parse_stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Linux reports `/proc` CPU times in USER_HZ ticks, 100 per second on every
/// architecture this runs on (what `sysconf(_SC_CLK_TCK)` answers).
const USER_HZ: u64 = 100;

/// `utime` and `stime` (fields 14 and 15) of a `/proc/PID/stat` line. The command name
/// (field 2) is in parentheses and may hold spaces, so fields are counted after it.
fn parse_stat_cpu(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime.checked_add(stime)?;
    Some(Duration::from_millis(ticks.saturating_mul(1000 / USER_HZ)))
}

/// `VmRSS:   123456 kB` → bytes.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\tx\nVmPeak:\t  10 kB\nVmRSS:\t    2048 kB\nThreads: 1\n";
        assert_eq!(vm_rss(status), Some(2 * 1024 * 1024));
        assert_eq!(vm_rss("Name: x\n"), None);
    }

    #[test]
    fn reads_cpu_time_after_a_command_name_with_spaces_and_parentheses() {
        // utime 250 and stime 50 ticks: 3 s.
        let stat = "4242 (tokio (rt) 1) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 3";
        assert_eq!(parse_stat_cpu(stat), Some(Duration::from_secs(3)));
        assert_eq!(parse_stat_cpu("4242 (x) S 1 2"), None);
        assert_eq!(parse_stat_cpu("garbage"), None);
        // This process's own reading grows while it computes.
        let start = process_cpu("self").expect("this process's stat is readable");
        let give_up = Instant::now() + Duration::from_secs(30);
        let mut spin = 0u64;
        while process_cpu("self") <= Some(start) {
            spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(7));
            assert!(Instant::now() < give_up, "cpu time never advanced");
        }
    }

    #[test]
    fn cpu_per_op_is_the_difference_over_the_count() {
        let at = |server_ms: u64, bench_ms: u64| CpuReading {
            server: Some(Duration::from_millis(server_ms)),
            bench: Some(Duration::from_millis(bench_ms)),
        };
        let per = at(1_000, 500).per_op(at(1_300, 560), 1_000);
        assert_eq!(per.server_us, Some(300.0));
        assert_eq!(per.bench_us, Some(60.0));
        let unknown = CpuReading {
            server: None,
            bench: Some(Duration::ZERO),
        };
        assert_eq!(unknown.per_op(at(1, 1), 10).server_us, None);
        assert_eq!(at(0, 0).per_op(at(5, 5), 0).server_us, None);
        let span = at(1_000, 500).until(at(1_200, 600)).plus(at(100, 0));
        assert_eq!(span.server, Some(Duration::from_millis(300)));
        assert_eq!(span.bench, Some(Duration::from_millis(100)));
    }
}
