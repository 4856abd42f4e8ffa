//! The two deciders: the upstream harness as a long-lived `serve` child (one JSON line per
//! scenario each way), and `preemptd simulate` run once per scenario.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

pub struct Harness {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Harness {
    /// The k8s.io/kubernetes release the harness binary was built against, e.g. `v1.37.2`.
    pub fn release(binary: &Path) -> Result<String, String> {
        let out = Command::new(binary)
            .arg("version")
            .output()
            .map_err(|e| format!("run {} version: {e}", binary.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} version: {}",
                binary.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// `binary [--feature-gates GATES] serve`.
    pub fn start(binary: &Path, feature_gates: Option<&str>) -> Result<Self, String> {
        let mut command = Command::new(binary);
        if let Some(gates) = feature_gates {
            command.arg("--feature-gates").arg(gates);
        }
        let mut child = command
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start {}: {e}", binary.display()))?;
        let stdin = child.stdin.take().ok_or("harness stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("harness stdout")?);
        Ok(Harness {
            child,
            stdin,
            stdout,
        })
    }

    /// Upstream's answer, or Err with the harness's reason when it could not decide. The
    /// budgets reach upstream's preemption in (namespace, name) order, as preemptd walks them.
    pub fn ask(&mut self, cluster: &Value, pod: &Value) -> Result<Result<Value, String>, String> {
        self.ask_with_budget_order(cluster, pod, "sorted")
    }

    /// As `ask`, with the budgets in `order`: "sorted" or "listed" (the List's own order).
    pub fn ask_with_budget_order(
        &mut self,
        cluster: &Value,
        pod: &Value,
        order: &str,
    ) -> Result<Result<Value, String>, String> {
        let line = serde_json::to_string(
            &json!({"cluster": cluster, "preemptor": pod, "budgetOrder": order}),
        )
        .map_err(|e| e.to_string())?;
        writeln!(self.stdin, "{line}").map_err(|e| format!("write to harness: {e}"))?;
        self.stdin
            .flush()
            .map_err(|e| format!("write to harness: {e}"))?;
        let mut reply = String::new();
        self.stdout
            .read_line(&mut reply)
            .map_err(|e| format!("read from harness: {e}"))?;
        if reply.is_empty() {
            return Err("harness exited".into());
        }
        let answer: Value =
            serde_json::from_str(&reply).map_err(|e| format!("harness reply: {e}"))?;
        Ok(match answer.get("error").and_then(Value::as_str) {
            Some(error) => Err(error.to_string()),
            None => Ok(answer),
        })
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Preemptd {
    binary: PathBuf,
    kubernetes_version: String,
    feature_gates: Option<String>,
    cluster_file: PathBuf,
    pod_file: PathBuf,
}

impl Preemptd {
    /// preemptd answering as `kubernetes_version` (e.g. `1.37`) with `feature_gates`. Both go
    /// through the environment, which a binary without version support ignores.
    pub fn new(
        binary: &Path,
        kubernetes_version: &str,
        feature_gates: Option<&str>,
        work: &Path,
    ) -> Self {
        Preemptd {
            binary: binary.to_path_buf(),
            kubernetes_version: kubernetes_version.to_string(),
            feature_gates: feature_gates.map(String::from),
            cluster_file: work.join("cluster.json"),
            pod_file: work.join("pod.json"),
        }
    }

    /// preemptd's decision as proto3 JSON, or Err with its error output when it refused. A
    /// PodGroup preemptor goes in the same `--pod` file (its members are in the cluster).
    pub fn ask(&self, cluster: &Value, pod: &Value) -> Result<Result<Value, String>, String> {
        let write = |path: &Path, v: &Value| {
            std::fs::write(path, serde_json::to_vec(v).map_err(|e| e.to_string())?)
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        write(&self.cluster_file, cluster)?;
        write(&self.pod_file, pod)?;
        let mut command = Command::new(&self.binary);
        if let Some(gates) = &self.feature_gates {
            command.env("PREEMPTD_FEATURE_GATES", gates);
        }
        let out = command
            .env("PREEMPTD_KUBERNETES_VERSION", &self.kubernetes_version)
            .arg("simulate")
            .arg("--cluster")
            .arg(&self.cluster_file)
            .arg("--pod")
            .arg(&self.pod_file)
            .output()
            .map_err(|e| format!("run {}: {e}", self.binary.display()))?;
        if !out.status.success() {
            return Ok(Err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        Ok(serde_json::from_slice(&out.stdout).map_err(|e| format!("preemptd output: {e}")))
    }
}
