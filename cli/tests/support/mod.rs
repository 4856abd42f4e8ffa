//! What the CLI tests share: the real binary with a clean environment, its run, a child
//! process with its log, a free loopback port and a `/metrics` scrape.
#![allow(dead_code)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// The real binary; nothing from the test's own environment (PREEMPTD_*, OTEL_*) leaks in.
pub fn preemptd() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_preemptd"));
    command.env_clear().stdin(Stdio::null());
    command
}

/// Runs `command` to its end: (exit code, stdout, stderr).
pub fn run(command: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("run preemptd");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// A loopback port nothing listens on (just now), for a server the test starts with it.
/// Picked below the kernel's ephemeral range (32768 and up by default): a port picked
/// there can go to any client socket, of this test run or another, before the server
/// binds it. Each process walks its own sequence, so concurrent test binaries rarely try
/// the same port, and a port in use is skipped.
pub fn free_port() -> SocketAddr {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const PORTS: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(2_654_435_761) % PORTS;
    for _ in 0..PORTS {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + (start + step.wrapping_mul(7_919)) % PORTS;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port as u16)) {
            return listener.local_addr().expect("addr");
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
}

/// One `GET /metrics` over HTTP/1.1, the connection closed after the answer.
pub fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

/// A child process (preemptd, kube-scheduler), its output in a log file: killed when
/// dropped, the log's tail printed when the test fails.
pub struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `command`, its output to `dir/NAME.log`.
    pub fn spawn(name: &'static str, command: &mut Command, dir: &Path) -> Process {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|error| panic!("start {name}: {error}"));
        Process { name, child, log }
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether a line of the log has every one of `fields`.
    pub fn logged(&self, fields: &[&str]) -> bool {
        let text = self.log_text();
        text.lines()
            .any(|line| fields.iter().all(|field| line.contains(field)))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = self.log_text();
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            eprintln!("== {} log (tail)", self.name);
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}
