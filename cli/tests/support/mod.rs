//! What the CLI tests share: the real binary with a clean environment, its run, a free
//! loopback port and a `/metrics` scrape.
#![allow(dead_code)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
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

/// A loopback port nothing listens on (just now).
pub fn free_port() -> SocketAddr {
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
