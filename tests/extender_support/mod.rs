//! A minimal HTTP/1.1 client for the extender tests (one request per connection, as
//! `Connection: close`), plaintext or over any TLS stream, and the request bodies
//! kube-scheduler sends, written out as its Go types marshal them.
#![allow(dead_code)]

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// A reply: status code and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("reply is not JSON ({e}): {}", self.body))
    }
}

/// POSTs `body` to `path` over `stream`, with extra `headers` (`name: value`).
pub async fn post_on(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    path: &str,
    body: &str,
    headers: &[&str],
) -> Reply {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = Vec::new();
    // The server closes after its answer; some TLS stacks end without close_notify.
    let _ = stream.read_to_end(&mut response).await;
    let response = String::from_utf8(response).expect("utf-8");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_default();
    Reply {
        status,
        content_type,
        body: body.to_string(),
    }
}

/// POSTs over plaintext TCP.
pub async fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> Reply {
    post_with(addr, path, body, &[]).await
}

pub async fn post_with(
    addr: std::net::SocketAddr,
    path: &str,
    body: &str,
    headers: &[&str],
) -> Reply {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    post_on(tcp, path, body, headers).await
}

/// A v1.Pod as Go's encoding/json writes it (kube-scheduler's copy of a pending pod):
/// `priority` and a cpu request; `labels` as a JSON object text.
pub fn pod_json(name: &str, priority: i32, cpu: &str, labels: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"default","uid":"uid-{name}","resourceVersion":"7","creationTimestamp":null,"labels":{labels}}},"spec":{{"containers":[{{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{{"requests":{{"cpu":"{cpu}"}}}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","securityContext":{{}},"schedulerName":"default-scheduler","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],"priority":{priority},"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"status":{{"phase":"Pending","qosClass":"Burstable"}}}}"#
    )
}

/// ExtenderArgs with `NodeNames` (nodeCacheCapable: true).
pub fn args_with_names(pod: &str, names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        r#"{{"Pod":{pod},"Nodes":null,"NodeNames":[{}]}}"#,
        names.join(",")
    )
}

/// A v1.Node as Go writes it, with `labels` (a JSON object text) and `taints` (a JSON
/// array text).
pub fn node_json(name: &str, labels: &str, taints: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","uid":"node-uid-{name}","resourceVersion":"3","creationTimestamp":"2026-11-01T00:00:00Z","labels":{labels}}},"spec":{{"taints":{taints}}},"status":{{"capacity":{{"cpu":"2","memory":"8Gi","pods":"110"}},"allocatable":{{"cpu":"2","memory":"8Gi","pods":"110"}},"conditions":[{{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-01T00:00:00Z","lastTransitionTime":"2026-11-01T00:00:00Z","reason":"KubeletReady","message":"kubelet is posting ready status"}}],"nodeInfo":{{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"v1.35.4","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}}}}}"#
    )
}

/// ExtenderArgs with `Nodes`, a v1.NodeList (nodeCacheCapable: false).
pub fn args_with_nodes(pod: &str, nodes: &[String]) -> String {
    format!(
        r#"{{"Pod":{pod},"Nodes":{{"metadata":{{}},"items":[{}]}},"NodeNames":null}}"#,
        nodes.join(",")
    )
}

/// ExtenderPreemptionArgs with `NodeNameToMetaVictims` (nodeCacheCapable: true): each
/// node with the UIDs of the scheduler's victims there.
pub fn preemption_args_meta(pod: &str, candidates: &[(&str, &[&str], i64)]) -> String {
    let entries: Vec<String> = candidates
        .iter()
        .map(|(node, uids, violations)| {
            let pods: Vec<String> = uids.iter().map(|u| format!(r#"{{"UID":"{u}"}}"#)).collect();
            format!(
                r#""{node}":{{"Pods":[{}],"NumPDBViolations":{violations}}}"#,
                pods.join(",")
            )
        })
        .collect();
    format!(
        r#"{{"Pod":{pod},"NodeNameToVictims":null,"NodeNameToMetaVictims":{{{}}}}}"#,
        entries.join(",")
    )
}

/// ExtenderPreemptionArgs with `NodeNameToVictims` (nodeCacheCapable: false): full pods.
pub fn preemption_args_full(pod: &str, candidates: &[(&str, Vec<String>, i64)]) -> String {
    let entries: Vec<String> = candidates
        .iter()
        .map(|(node, pods, violations)| {
            format!(
                r#""{node}":{{"Pods":[{}],"NumPDBViolations":{violations}}}"#,
                pods.join(",")
            )
        })
        .collect();
    format!(
        r#"{{"Pod":{pod},"NodeNameToVictims":{{{}}},"NodeNameToMetaVictims":null}}"#,
        entries.join(",")
    )
}

/// A bound victim as the scheduler holds it (`nodeName`, Running).
pub fn bound_pod_json(name: &str, priority: i32, cpu: &str, node: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"default","uid":"uid-{name}","resourceVersion":"5","creationTimestamp":null}},"spec":{{"containers":[{{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{{"requests":{{"cpu":"{cpu}"}}}}}}],"nodeName":"{node}","priority":{priority}}},"status":{{"phase":"Running"}}}}"#
    )
}
