//! Roles: who may call what. `--authz FILE` maps client identities — a client
//! certificate's DNS or URI subject alternative name or its common name, or a bearer
//! token — to `reader`, `writer` or `admin`.
//!
//! [`AuthzLayer`] checks every call against its method's least role ([`required_role`])
//! before the call reaches a service, and hands the service the [`Caller`] in the
//! request's extensions. The one check that needs the request body — a committing
//! `Preempt` needs a writer, a dry run only a reader — is [`check_commit`], called by the
//! service. A refused call changes nothing and names the method: UNAUTHENTICATED (HTTP
//! 401) when the client presented no credential the policy knows — no client certificate
//! and no token, or an unknown token — and PERMISSION_DENIED (403) when it is known (a
//! listed identity, or a certificate the client CA signed) but its role is too low. Both
//! are counted (`preemptd_authz_denied_total`) and logged with the identity, never with a
//! token.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{Either, Ready, ready};
use serde::Deserialize;
use tonic::body::Body;
use tower::{Layer, Service};

use super::errors::ApiError;
use super::tls::{CertIdentity, PeerInfo};

/// What a client may do; each role includes the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Dry-run `Preempt` and `PreemptGroup`, `PlanDrain`, `ListNominations`,
    /// `WatchNominations`, health,
    /// reflection.
    Reader,
    /// A reader that may also change the cache: `Update*`, `Sync`, committing `Preempt`.
    Writer,
    /// Everything, including methods added later that no table entry names yet.
    Admin,
}

impl Role {
    /// The role as configured and logged.
    pub fn name(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
            Role::Admin => "admin",
        }
    }
}

/// An authorized client, in the request's extensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The caller's role: what it may do.
    pub role: Role,
    /// The identity that matched (`uri:spiffe://...`, `token:<name>`), for logs.
    pub identity: Arc<str>,
}

/// The least role of each method, by its path (`/package.Service/Method`).
pub fn required_role(path: &str) -> Role {
    const READER_PREFIXES: [&str; 3] = [
        "/grpc.health.v1.Health/",
        "/grpc.reflection.v1.ServerReflection/",
        "/grpc.reflection.v1alpha.ServerReflection/",
    ];
    if READER_PREFIXES
        .iter()
        .any(|prefix| path.starts_with(prefix))
    {
        return Role::Reader;
    }
    match path.strip_prefix("/preemptd.v1.Preemption/") {
        // A committing Preempt (or PreemptGroup) needs a writer: `check_commit`, once the
        // body is read.
        Some("Preempt" | "PreemptGroup" | "PlanDrain" | "ListNominations" | "WatchNominations") => {
            Role::Reader
        }
        Some(
            "UpdateNode"
            | "UpdatePod"
            | "UpdatePodDisruptionBudget"
            | "UpdatePriorityClass"
            | "UpdateNamespace"
            | "Sync",
        ) => Role::Writer,
        _ => Role::Admin,
    }
}

/// One entry of the file's `clients` list: exactly one identity and a role.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientEntry {
    #[serde(default)]
    dns: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    cn: Option<String>,
    /// Hex SHA-256 of the token, so the file holds no secret.
    #[serde(default)]
    token_sha256: Option<String>,
    /// A file holding the token (a mounted Secret), relative to the authz file.
    #[serde(default)]
    token_file: Option<String>,
    /// Shown in logs for a token identity (tokens themselves never are).
    #[serde(default)]
    name: Option<String>,
    role: Role,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    clients: Vec<ClientEntry>,
}

/// A bad `--authz` file: `field` names the entry (`clients[2].role`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct AuthzConfigError {
    /// Where in the configuration the problem is.
    pub field: String,
    /// What is wrong there.
    pub message: String,
}

fn config_error(field: impl Into<String>, message: impl Into<String>) -> AuthzConfigError {
    AuthzConfigError {
        field: field.into(),
        message: message.into(),
    }
}

type TokenHash = [u8; 32];

fn sha256(bytes: &[u8]) -> TokenHash {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut hash = [0u8; 32];
    hash.copy_from_slice(digest.as_ref());
    hash
}

fn parse_hex_sha256(text: &str) -> Option<TokenHash> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut hash = [0u8; 32];
    for (i, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(hash)
}

/// Who has which role.
#[derive(Default)]
pub struct AuthzPolicy {
    dns: HashMap<String, Caller>,
    uris: HashMap<String, Caller>,
    common_names: HashMap<String, Caller>,
    /// By the SHA-256 of the token: the table holds no secret, and a lookup compares
    /// hashes, not the secret itself.
    tokens: HashMap<TokenHash, Caller>,
}

impl std::fmt::Debug for AuthzPolicy {
    /// Counts only: even token hashes stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthzPolicy")
            .field("dns", &self.dns.len())
            .field("uris", &self.uris.len())
            .field("common_names", &self.common_names.len())
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl AuthzPolicy {
    /// Reads an `--authz` file (blocking: call at startup).
    pub fn load(path: &Path) -> Result<Self, AuthzConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| config_error(path.display().to_string(), error.to_string()))?;
        Self::from_yaml(&text, path.parent().unwrap_or(Path::new(".")))
    }

    /// The policy in `text`; `token_file` paths are relative to `base`.
    pub fn from_yaml(text: &str, base: &Path) -> Result<Self, AuthzConfigError> {
        let file: PolicyFile = serde_yaml_ng::from_str(text)
            .map_err(|error| config_error("authz", error.to_string()))?;
        let mut policy = AuthzPolicy::default();
        for (i, entry) in file.clients.into_iter().enumerate() {
            policy.add(i, entry, base)?;
        }
        Ok(policy)
    }

    fn add(&mut self, i: usize, entry: ClientEntry, base: &Path) -> Result<(), AuthzConfigError> {
        let field = |name: &str| format!("clients[{i}].{name}");
        let given = [
            entry.dns.is_some(),
            entry.uri.is_some(),
            entry.cn.is_some(),
            entry.token_sha256.is_some(),
            entry.token_file.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(config_error(
                format!("clients[{i}]"),
                "exactly one of dns, uri, cn, token_sha256, token_file is required",
            ));
        }
        let role = entry.role;
        let caller = |identity: String| Caller {
            role,
            identity: identity.into(),
        };
        let token_name = || {
            entry
                .name
                .clone()
                .unwrap_or_else(|| format!("clients[{i}]"))
        };
        let (table, key, name) = if let Some(dns) = &entry.dns {
            let dns = dns.to_ascii_lowercase();
            (&mut self.dns, dns.clone(), format!("dns:{dns}"))
        } else if let Some(uri) = &entry.uri {
            (&mut self.uris, uri.clone(), format!("uri:{uri}"))
        } else if let Some(cn) = &entry.cn {
            (&mut self.common_names, cn.clone(), format!("cn:{cn}"))
        } else {
            let hash = match (&entry.token_sha256, &entry.token_file) {
                (Some(hex), _) => parse_hex_sha256(hex)
                    .ok_or_else(|| config_error(field("token_sha256"), "expected 64 hex digits"))?,
                (None, None) => return Err(config_error(format!("clients[{i}]"), "no identity")),
                (None, Some(file)) => {
                    let path = base.join(file);
                    let token = std::fs::read_to_string(&path).map_err(|error| {
                        config_error(field("token_file"), format!("{}: {error}", path.display()))
                    })?;
                    let token = token.trim();
                    if token.is_empty() {
                        return Err(config_error(field("token_file"), "the file is empty"));
                    }
                    sha256(token.as_bytes())
                }
            };
            if self
                .tokens
                .insert(hash, caller(format!("token:{}", token_name())))
                .is_some()
            {
                return Err(config_error(format!("clients[{i}]"), "token listed twice"));
            }
            return Ok(());
        };
        if table.insert(key, caller(name.clone())).is_some() {
            return Err(config_error(
                format!("clients[{i}]"),
                format!("{name} listed twice"),
            ));
        }
        Ok(())
    }

    /// Whether any entry names a client certificate (`dns`, `uri`, `cn`): without a
    /// client CA no client presents one, so such entries can never match.
    pub fn has_certificate_identities(&self) -> bool {
        !(self.dns.is_empty() && self.uris.is_empty() && self.common_names.is_empty())
    }

    /// Whether any entry is a token (tokens over plaintext can be read off the wire).
    pub fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The caller with the highest role any presented credential maps to.
    pub fn resolve(
        &self,
        certificate: Option<&CertIdentity>,
        token: Option<&str>,
    ) -> Option<Caller> {
        let from_certificate = certificate.into_iter().flat_map(|cert| {
            let dns = cert
                .dns
                .iter()
                .filter_map(|name| self.dns.get(&name.to_ascii_lowercase()));
            let uris = cert.uris.iter().filter_map(|uri| self.uris.get(uri));
            let cn = cert
                .common_name
                .iter()
                .filter_map(|cn| self.common_names.get(cn));
            dns.chain(uris).chain(cn)
        });
        let from_token = token.and_then(|token| self.tokens.get(&sha256(token.as_bytes())));
        from_certificate
            .chain(from_token)
            .max_by_key(|caller| caller.role)
            .cloned()
    }
}

/// The token of an `authorization: Bearer <token>` header.
fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// What a refused client presented, for the log: certificate names, and whether it
/// sent a token (never the token).
struct Presented<'a> {
    certificate: Option<&'a CertIdentity>,
    token: bool,
}

impl std::fmt::Display for Presented<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.certificate, self.token) {
            (Some(cert), true) => write!(f, "{cert},bearer token"),
            (Some(cert), false) => write!(f, "{cert}"),
            (None, true) => f.write_str("bearer token"),
            (None, false) => f.write_str("anonymous"),
        }
    }
}

/// Counts, logs and words a refusal of `method` (`preemptd.v1.Preemption/UpdatePod`, the
/// metric's label); `call` is the call as the message names it.
fn deny(
    method: &'static str,
    call: &str,
    needed: Role,
    caller: Option<&Caller>,
    presented: &Presented<'_>,
) -> ApiError {
    let role = caller.map_or("none", |c| c.role.name());
    crate::ops::metrics::authz_denied(method, role);
    match caller {
        Some(caller) => {
            tracing::warn!(method, identity = %caller.identity, role, needed = needed.name(), "permission denied");
        }
        // A certificate the client CA signed is an identity, only not one the policy lists.
        None if presented.certificate.is_some() => {
            tracing::warn!(method, identity = %presented, needed = needed.name(), "permission denied: unknown identity");
        }
        None => {
            tracing::warn!(method, identity = %presented, needed = needed.name(), "unauthenticated: no known credential");
            return ApiError::unauthenticated(call, needed.name());
        }
    }
    ApiError::permission_denied(call, needed.name(), caller.map(|c| c.role.name()))
}

/// The method's name for metrics and messages: known ones as `service/method`, other
/// paths as `unknown` (clients cannot grow the metric's label set).
fn method_name(path: &str) -> &'static str {
    super::middleware::known_method_name(path).unwrap_or("unknown")
}

/// For `Preempt` without `dry_run`: a writer is needed. `enforced`: an `--authz` policy
/// is in place (without one, every caller is a writer).
pub(crate) fn check_commit(extensions: &http::Extensions, enforced: bool) -> Result<(), ApiError> {
    if !enforced {
        return Ok(());
    }
    let caller = extensions.get::<Caller>();
    if caller.is_some_and(|c| c.role >= Role::Writer) {
        return Ok(());
    }
    let presented = Presented {
        certificate: extensions
            .get::<PeerInfo>()
            .and_then(|peer| peer.certificate.as_deref()),
        token: false,
    };
    Err(deny(
        "preemptd.v1.Preemption/Preempt",
        "preemptd.v1.Preemption/Preempt without dry_run",
        Role::Writer,
        caller,
        &presented,
    ))
}

/// A call to the extender's HTTP port: every verb needs a reader, identified by the
/// connection's client certificate or a bearer token, as on the gRPC port. `method` is
/// the metric's label (`extender/filter`).
pub(crate) fn check_extender(
    policy: &AuthzPolicy,
    method: &'static str,
    certificate: Option<&CertIdentity>,
    headers: &http::HeaderMap,
) -> Result<Caller, ApiError> {
    let token = bearer_token(headers);
    let caller = policy.resolve(certificate, token);
    match caller {
        Some(caller) if caller.role >= Role::Reader => Ok(caller),
        caller => {
            let presented = Presented {
                certificate,
                token: token.is_some(),
            };
            Err(deny(
                method,
                method,
                Role::Reader,
                caller.as_ref(),
                &presented,
            ))
        }
    }
}

/// The tower layer: with a policy, every call is checked; without one, calls pass.
#[derive(Clone)]
pub(crate) struct AuthzLayer {
    policy: Option<Arc<AuthzPolicy>>,
}

impl AuthzLayer {
    pub(crate) fn new(policy: Option<Arc<AuthzPolicy>>) -> Self {
        AuthzLayer { policy }
    }
}

impl<S> Layer<S> for AuthzLayer {
    type Service = Authz<S>;

    fn layer(&self, inner: S) -> Authz<S> {
        Authz {
            inner,
            policy: self.policy.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Authz<S> {
    inner: S,
    policy: Option<Arc<AuthzPolicy>>,
}

impl<S> Service<http::Request<Body>> for Authz<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Either<S::Future, Ready<Result<http::Response<Body>, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let Some(policy) = &self.policy else {
            return Either::Left(self.inner.call(request));
        };
        let path = request.uri().path();
        let needed = required_role(path);
        let certificate = request
            .extensions()
            .get::<PeerInfo>()
            .and_then(|peer| peer.certificate.clone());
        let token = bearer_token(request.headers());
        let caller = policy.resolve(certificate.as_deref(), token);
        if let Some(caller) = caller.as_ref().filter(|c| c.role >= needed) {
            let caller = caller.clone();
            request.extensions_mut().insert(caller);
            return Either::Left(self.inner.call(request));
        }
        let presented = Presented {
            certificate: certificate.as_deref(),
            token: token.is_some(),
        };
        // Unknown paths are named as sent (they are the client's own words), cut short.
        let call = path.strip_prefix('/').unwrap_or(path);
        let call = &call[..call.floor_char_boundary(call.len().min(200))];
        let error = deny(method_name(path), call, needed, caller.as_ref(), &presented);
        Either::Right(ready(Ok(tonic::Status::from(error).into_http())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
clients:
  - uri: spiffe://cluster.local/ns/kube-system/sa/scheduler
    role: writer
  - dns: Dashboard.ops.svc
    role: reader
  - cn: preemptd-admin
    role: admin
  - name: grafana
    token_sha256: 2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b
    role: reader
"#;

    fn policy() -> AuthzPolicy {
        AuthzPolicy::from_yaml(POLICY, Path::new(".")).expect("policy")
    }

    #[test]
    fn identities_map_to_their_roles() {
        let policy = policy();
        let cert = |dns: &str, uri: &str, cn: &str| CertIdentity {
            dns: vec![dns.to_string()],
            uris: vec![uri.to_string()],
            common_name: Some(cn.to_string()),
        };
        let role = |cert: Option<&CertIdentity>, token: Option<&str>| {
            policy.resolve(cert, token).map(|c| c.role)
        };
        let scheduler = cert(
            "x",
            "spiffe://cluster.local/ns/kube-system/sa/scheduler",
            "y",
        );
        assert_eq!(role(Some(&scheduler), None), Some(Role::Writer));
        // DNS names compare without case.
        assert_eq!(
            role(Some(&cert("dashboard.OPS.svc", "u", "c")), None),
            Some(Role::Reader)
        );
        assert_eq!(
            role(Some(&cert("x", "u", "preemptd-admin")), None),
            Some(Role::Admin)
        );
        assert_eq!(role(Some(&cert("x", "u", "c")), None), None);
        // sha256("secret")
        assert_eq!(role(None, Some("secret")), Some(Role::Reader));
        assert_eq!(role(None, Some("Secret")), None);
        // The highest role any credential grants.
        assert_eq!(role(Some(&scheduler), Some("secret")), Some(Role::Writer));
        let caller = policy.resolve(None, Some("secret")).expect("caller");
        assert_eq!(&*caller.identity, "token:grafana");
    }

    #[test]
    fn bad_files_name_the_field() {
        let error = |text: &str| {
            AuthzPolicy::from_yaml(text, Path::new("."))
                .expect_err("refused")
                .to_string()
        };
        assert!(error("clients:\n  - dns: a\n    role: root\n").contains("unknown variant `root`"),);
        assert_eq!(
            error("clients:\n  - dns: a\n    cn: b\n    role: reader\n"),
            "clients[0]: exactly one of dns, uri, cn, token_sha256, token_file is required"
        );
        assert_eq!(
            error(
                "clients:\n  - dns: a\n    role: reader\n  - token_sha256: abc\n    role: reader\n"
            ),
            "clients[1].token_sha256: expected 64 hex digits"
        );
        assert_eq!(
            error("clients:\n  - dns: a\n    role: reader\n  - dns: A\n    role: admin\n"),
            "clients[1]: dns:a listed twice"
        );
        assert!(
            error("clients:\n  - token_file: /nonexistent/t\n    role: reader\n")
                .starts_with("clients[0].token_file: /nonexistent/t")
        );
    }

    #[test]
    fn token_files_are_read_relative_to_the_policy() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("ci"), "s3cret\n").expect("write token");
        let policy = AuthzPolicy::from_yaml(
            "clients:\n  - token_file: ci\n    name: ci\n    role: writer\n",
            dir.path(),
        )
        .expect("policy");
        let caller = policy.resolve(None, Some("s3cret")).expect("caller");
        assert_eq!((caller.role, &*caller.identity), (Role::Writer, "token:ci"));
    }

    #[test]
    fn methods_need_their_roles() {
        let p = |m: &str| required_role(&format!("/preemptd.v1.Preemption/{m}"));
        assert_eq!(p("Preempt"), Role::Reader);
        assert_eq!(p("WatchNominations"), Role::Reader);
        assert_eq!(p("PlanDrain"), Role::Reader);
        assert_eq!(p("PreemptGroup"), Role::Reader);
        assert_eq!(p("UpdatePod"), Role::Writer);
        assert_eq!(p("Sync"), Role::Writer);
        assert_eq!(p("SomethingNew"), Role::Admin);
        assert_eq!(required_role("/grpc.health.v1.Health/Check"), Role::Reader);
        assert_eq!(required_role("/other.Service/Call"), Role::Admin);
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(bearer_token(&headers), None);
        headers.insert(
            http::header::AUTHORIZATION,
            "Bearer abc".parse().expect("value"),
        );
        assert_eq!(bearer_token(&headers), Some("abc"));
        headers.insert(
            http::header::AUTHORIZATION,
            "bearer  abc ".parse().expect("value"),
        );
        assert_eq!(bearer_token(&headers), Some("abc"));
        headers.insert(
            http::header::AUTHORIZATION,
            "Basic abc".parse().expect("value"),
        );
        assert_eq!(bearer_token(&headers), None);
    }
}
