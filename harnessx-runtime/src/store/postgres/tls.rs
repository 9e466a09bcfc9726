//! TLS through rustls: `sslmode` and `sslrootcert` as libpq reads them, the connector that the
//! pool and the listening connection both use, and the translation of a refused handshake into
//! an error that says which check failed (such an error is final, never retried).
//!
//! The crypto provider is aws-lc-rs, which reqwest's rustls already builds; it is named
//! explicitly, so a program whose rustls also has `ring` enabled still gets one provider.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::Socket;
use tokio_postgres::config::Host;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use crate::error::StoreError;

/// Whether and how a [`PostgresStore`](super::PostgresStore) encrypts its connections: libpq's
/// `sslmode`, given in the connection URL (`?sslmode=verify-full`) or with
/// [`PostgresConfig::ssl_mode`](super::PostgresConfig::ssl_mode).
///
/// | `sslmode` | encrypted | the server's certificate |
/// |---|---|---|
/// | `disable` | never | — |
/// | `prefer` (the default) | when the server offers TLS | not checked |
/// | `require` | always | not checked; its CA is, when `sslrootcert` names a file (as libpq) |
/// | `verify-ca` | always | signed by a trusted CA |
/// | `verify-full` | always | signed by a trusted CA and valid for the host name |
///
/// ```
/// use harnessx_runtime::store::SslMode;
///
/// let mode: SslMode = "verify-full".parse()?;
/// assert_eq!(mode, SslMode::VerifyFull);
/// assert_eq!(mode.to_string(), "verify-full");
/// assert_eq!(SslMode::default(), SslMode::Prefer);
/// # Ok::<(), harnessx_runtime::StoreError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SslMode {
    /// Plain text only.
    Disable,
    /// TLS when the server offers it, plain text when it does not; no certificate check.
    #[default]
    Prefer,
    /// TLS or no connection; the certificate is not checked unless `sslrootcert` names a file.
    Require,
    /// TLS, and the server's certificate must be signed by a trusted CA; any host name.
    VerifyCa,
    /// TLS, a certificate signed by a trusted CA, and valid for the host connected to.
    VerifyFull,
}

impl SslMode {
    /// The name libpq gives the mode (`verify-full`).
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SslMode {
    type Err = StoreError;

    /// Reads libpq's names; anything else is a [`StoreError::Setting`] naming the five modes.
    fn from_str(s: &str) -> Result<Self, StoreError> {
        const ALL: [SslMode; 5] = [
            SslMode::Disable,
            SslMode::Prefer,
            SslMode::Require,
            SslMode::VerifyCa,
            SslMode::VerifyFull,
        ];
        if let Some(mode) = ALL.into_iter().find(|m| m.as_str() == s) {
            return Ok(mode);
        }
        let why = if s == "allow" {
            ", which this store does not support (it tries plain text first)"
        } else {
            ""
        };
        Err(StoreError::Setting {
            setting: "sslmode".into(),
            problem: format!(
                "is `{s}`{why}; use one of disable, prefer, require, verify-ca, verify-full"
            ),
        })
    }
}

/// What the certificate check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

/// Where the trusted CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// `sslrootcert=<path>`: a PEM file.
    File(PathBuf),
    /// The system's trust store: `sslrootcert=system`, or no `sslrootcert` under `verify-ca` or
    /// `verify-full` (`named` tells which, for the messages).
    System { named: bool },
}

/// A store's TLS settings, resolved from the URL and the builder.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    mode: SslMode,
    check: Check,
    roots: Option<Roots>,
}

impl Settings {
    /// Resolves `sslmode` and `sslrootcert` as libpq does: `sslrootcert=system` defaults the
    /// mode to `verify-full` and allows no other; a file under `require` checks the CA.
    pub(super) fn resolve(
        mode: Option<SslMode>,
        root_cert: Option<PathBuf>,
    ) -> Result<Self, StoreError> {
        let named = root_cert.map(|path| {
            if path == Path::new("system") {
                Roots::System { named: true }
            } else {
                Roots::File(path)
            }
        });
        let system_named = named == Some(Roots::System { named: true });
        let mode = match mode {
            Some(mode) => mode,
            None if system_named => SslMode::VerifyFull,
            None => SslMode::Prefer,
        };
        if system_named && mode != SslMode::VerifyFull {
            return Err(StoreError::Setting {
                setting: "sslrootcert".into(),
                problem: format!(
                    "is `system`, which needs sslmode=verify-full (it is `{mode}`): the system's \
                     roots trust any public CA, so only the host name check makes them safe; \
                     use sslmode=verify-full, or name a CA file"
                ),
            });
        }
        let (check, roots) = match mode {
            SslMode::Disable | SslMode::Prefer => (Check::Nothing, None),
            SslMode::Require => match named {
                Some(file @ Roots::File(_)) => (Check::Chain, Some(file)),
                _ => (Check::Nothing, None),
            },
            SslMode::VerifyCa | SslMode::VerifyFull => {
                let check = if mode == SslMode::VerifyCa {
                    Check::Chain
                } else {
                    Check::ChainAndName
                };
                (check, Some(named.unwrap_or(Roots::System { named: false })))
            }
        };
        Ok(Self { mode, check, roots })
    }

    /// The mode tokio-postgres negotiates with: `require` for the three that need TLS. Over
    /// Unix sockets only, as libpq, TLS is not asked for (the server never offers it there).
    pub(super) fn negotiation(
        &self,
        config: &tokio_postgres::Config,
    ) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Negotiate;
        let unix_only = !config.get_hosts().is_empty()
            && config.get_hostaddrs().is_empty()
            && config
                .get_hosts()
                .iter()
                .all(|h| !matches!(h, Host::Tcp(_)));
        match self.mode {
            SslMode::Disable => Negotiate::Disable,
            _ if unix_only => Negotiate::Disable,
            SslMode::Prefer => Negotiate::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Negotiate::Require,
        }
    }

    /// The trusted roots, read now so a bad file is reported before anything connects.
    fn load_roots(&self) -> Result<RootCertStore, StoreError> {
        let mut store = RootCertStore::empty();
        match &self.roots {
            None => {}
            Some(Roots::File(path)) => {
                let setting = |problem: String| StoreError::Setting {
                    setting: "sslrootcert".into(),
                    problem: format!("names `{}`, which {problem}", path.display()),
                };
                let pem = std::fs::read(path).map_err(|e| {
                    setting(format!(
                        "cannot be read ({e}); give a PEM file of CA certificates, or `system` \
                         for the system's trusted roots"
                    ))
                })?;
                let certs = CertificateDer::pem_slice_iter(&pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        setting(format!(
                            "is not a valid PEM file ({}); give a PEM file of CA certificates",
                            pem_problem(&e)
                        ))
                    })?;
                if certs.is_empty() {
                    return Err(setting(
                        "holds no certificate (no -----BEGIN CERTIFICATE----- block); give a PEM \
                         file of CA certificates"
                            .into(),
                    ));
                }
                for (i, cert) in certs.into_iter().enumerate() {
                    store.add(cert).map_err(|e| {
                        setting(format!(
                            "holds a certificate (number {}) that cannot be used as a CA ({e})",
                            i + 1
                        ))
                    })?;
                }
            }
            Some(Roots::System { named }) => {
                let found = rustls_native_certs::load_native_certs();
                store.add_parsable_certificates(found.certs);
                if store.is_empty() {
                    let errors: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
                    return Err(self.no_system_roots(*named, &errors));
                }
            }
        }
        Ok(store)
    }

    /// The error when the system's trust store holds no certificate.
    fn no_system_roots(&self, named: bool, errors: &[String]) -> StoreError {
        let given = if named {
            "is `system`".to_owned()
        } else {
            format!(
                "is not given, so sslmode={} uses the system's trusted roots",
                self.mode
            )
        };
        let errors = if errors.is_empty() {
            String::new()
        } else {
            format!(" ({})", errors.join("; "))
        };
        StoreError::Setting {
            setting: "sslrootcert".into(),
            problem: format!(
                "{given}, but the system has none{errors}; install them (the ca-certificates \
                 package, or SSL_CERT_FILE) or give the server's CA as sslrootcert=/path/to/ca.pem"
            ),
        }
    }

    /// Says why the handshake with `host` was refused, in the terms of these settings.
    fn describe(&self, e: &rustls::Error, host: &str) -> String {
        let mode = self.mode;
        match e {
            rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => {
                name_mismatch(host, &[])
            }
            rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                presented,
                ..
            }) => name_mismatch(host, presented),
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                match &self.roots {
                    Some(Roots::File(path)) => format!(
                        "the server's certificate is not signed by a CA in sslrootcert `{}`; put \
                         the CA that signed it in that file",
                        path.display()
                    ),
                    Some(Roots::System { named: true }) => {
                        "the server's certificate is not signed by a CA the system trusts \
                         (sslrootcert=system); give the CA that signed it as \
                         sslrootcert=/path/to/ca.pem"
                            .to_owned()
                    }
                    _ => format!(
                        "the server's certificate is not signed by a CA the system trusts (no \
                         sslrootcert was given, so sslmode={mode} used the system's roots); give \
                         the CA that signed it as sslrootcert=/path/to/ca.pem"
                    ),
                }
            }
            rustls::Error::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. },
            ) => "the server's certificate has expired; renew it on the server, or set this \
                  machine's clock right"
                .to_owned(),
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. },
            ) => "the server's certificate is not valid yet; check its dates and this machine's \
                  clock"
                .to_owned(),
            rustls::Error::InvalidCertificate(_) => format!(
                "the server's certificate was refused ({e}); sslmode={mode} checks that a \
                 trusted CA signed it"
            ),
            rustls::Error::AlertReceived(_) => {
                format!("the server ended the TLS handshake ({e}); the server's log says why")
            }
            _ => format!("the TLS handshake failed ({e})"),
        }
    }
}

/// What is wrong with a PEM file, with the names pki-types gives as bytes spelled out.
fn pem_problem(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error as Pem;
    match e {
        Pem::MissingSectionEnd { end_marker } => {
            let label = String::from_utf8_lossy(end_marker);
            format!("a {label} section has no -----END {label}----- line")
        }
        Pem::IllegalSectionStart { line } => format!(
            "the line `{}` does not start a section properly",
            String::from_utf8_lossy(line)
        ),
        other => other.to_string(),
    }
}

fn name_mismatch(host: &str, presented: &[String]) -> String {
    let names: Vec<&str> = presented
        .iter()
        .map(|n| {
            // rustls describes names as `DnsName("db.example")` or `IpAddress(10.0.0.1)`.
            n.strip_prefix("DnsName(\"")
                .and_then(|n| n.strip_suffix("\")"))
                .or_else(|| n.strip_prefix("IpAddress(")?.strip_suffix(')'))
                .unwrap_or(n)
        })
        .collect();
    let names = if names.is_empty() {
        String::new()
    } else {
        format!(" (it names {})", names.join(", "))
    };
    format!(
        "the server's certificate is not valid for host `{host}`{names}; sslmode=verify-full \
         checks the host name: connect with a name the certificate holds, or use \
         sslmode=verify-ca to check only the CA"
    )
}

/// A handshake that failed a check: final, so it is never retried.
#[derive(Debug)]
pub(super) struct Refused {
    host: String,
    problem: String,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problem)
    }
}

impl Error for Refused {}

/// tokio-postgres's words for a server that answered the TLS request with "no".
const NOT_OFFERED: &str = "server does not support TLS";

/// Whether `e` is a refused TLS connection (not a lost one): a failed check, or no TLS where
/// it is required.
pub(super) fn is_refused(e: &tokio_postgres::Error) -> bool {
    causes(e).any(|s| s.is::<Refused>() || s.to_string() == NOT_OFFERED)
}

/// The error a refused connection reports: which check failed, at which host.
pub(super) fn refusal(
    e: &tokio_postgres::Error,
    settings: &Settings,
    hosts: &str,
) -> Option<StoreError> {
    for source in causes(e) {
        if let Some(refused) = source.downcast_ref::<Refused>() {
            return Some(StoreError::Tls {
                host: refused.host.clone(),
                problem: refused.problem.clone(),
            });
        }
        if source.to_string() == NOT_OFFERED {
            return Some(StoreError::Tls {
                host: hosts.to_owned(),
                problem: format!(
                    "the server does not offer TLS, and sslmode={} needs it; turn `ssl = on` in \
                     the server's postgresql.conf (with a certificate and key), or use \
                     sslmode=prefer to allow plain text",
                    settings.mode
                ),
            });
        }
    }
    None
}

/// What caused `e`, and what caused that, and so on.
fn causes<'a>(e: &'a tokio_postgres::Error) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(e.source(), |&s| Error::source(s))
}

/// The hosts of a configuration, for messages: `db1,db2`.
pub(super) fn hosts(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .chain(config.get_hostaddrs().iter().map(|a| a.to_string()))
        .collect();
    hosts.join(",")
}

/// Makes a TLS session per connection, for tokio-postgres and the pool.
#[derive(Clone)]
pub(super) struct MakeRustls(Arc<Shared>);

struct Shared {
    settings: Settings,
    config: Arc<ClientConfig>,
}

impl MakeRustls {
    /// Reads the trusted roots and sets up rustls for `settings`.
    pub(super) fn new(settings: Settings) -> Result<Self, StoreError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = Verifier {
            check: settings.check,
            roots: Arc::new(settings.load_roots()?),
            algorithms: provider.signature_verification_algorithms,
        };
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::backend("setting up TLS", e))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        // What libpq sends; PostgreSQL 17's direct TLS negotiation requires it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Self(Arc::new(Shared {
            settings,
            config: Arc::new(config),
        })))
    }

    /// The settings this connector was made with.
    pub(super) fn settings(&self) -> &Settings {
        &self.0.settings
    }
}

impl MakeTlsConnect<Socket> for MakeRustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = Box<dyn Error + Send + Sync>;

    /// Never fails: tokio-postgres asks for a connector even for a connection it will not
    /// encrypt, so a host name that cannot be checked is reported by the handshake itself.
    fn make_tls_connect(&mut self, host: &str) -> Result<RustlsConnect, Self::Error> {
        Ok(RustlsConnect {
            shared: Arc::clone(&self.0),
            host: host.to_owned(),
        })
    }
}

/// One connection's handshake.
pub(super) struct RustlsConnect {
    shared: Arc<Shared>,
    host: String,
}

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = Box<dyn Error + Send + Sync>;
    type Future = Pin<Box<dyn Future<Output = Result<RustlsStream, Self::Error>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(self.handshake(stream))
    }
}

impl RustlsConnect {
    /// The handshake. A failed check becomes [`Refused`]; an I/O error (a connection reset by
    /// a restarting server) stays one, so it is retried.
    async fn handshake(self, stream: Socket) -> Result<RustlsStream, Box<dyn Error + Send + Sync>> {
        let refused = |problem| Refused {
            host: self.host.clone(),
            problem,
        };
        let name = match ServerName::try_from(self.host.clone()) {
            Ok(name) => name,
            Err(_) if self.shared.settings.check == Check::ChainAndName => {
                return Err(Box::new(refused(format!(
                    "`{}` is neither a DNS name nor an IP address, so sslmode=verify-full cannot \
                     check the server's certificate against it; connect by a name the \
                     certificate holds",
                    self.host
                ))));
            }
            // No name is checked: any will do, and an address sends no SNI.
            Err(_) => ServerName::IpAddress(std::net::IpAddr::from(Ipv4Addr::UNSPECIFIED).into()),
        };
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(&self.shared.config));
        match connector.connect(name, stream).await {
            Ok(stream) => Ok(RustlsStream(stream)),
            Err(e) => match e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            {
                Some(tls) => Err(Box::new(refused(
                    self.shared.settings.describe(tls, &self.host),
                ))),
                None => Err(Box::new(e)),
            },
        }
    }
}

/// An encrypted connection.
pub(super) struct RustlsStream(tokio_rustls::client::TlsStream<Socket>);

impl AsyncRead for RustlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl TlsStream for RustlsStream {
    /// No channel binding: SCRAM authentication goes on without it.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

/// Checks what [`Check`] asks for, with webpki, against the loaded roots; no revocation check
/// (libpq checks none without `sslcrl`). Handshake signatures are always verified.
#[derive(Debug)]
struct Verifier {
    check: Check,
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.check != Check::Nothing {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                &self.roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
            if self.check == Check::ChainAndName {
                verify_server_name(&cert, server_name)?;
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(mode: Option<&str>, root: Option<&str>) -> Result<Settings, StoreError> {
        Settings::resolve(mode.map(|m| m.parse().unwrap()), root.map(PathBuf::from))
    }

    #[test]
    fn modes_read_and_print_libpq_names() {
        for name in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            assert_eq!(name.parse::<SslMode>().unwrap().to_string(), name);
        }
        assert_eq!(
            "allow".parse::<SslMode>().unwrap_err().to_string(),
            "the PostgreSQL setting `sslmode` is `allow`, which this store does not support (it \
             tries plain text first); use one of disable, prefer, require, verify-ca, verify-full"
        );
    }

    #[test]
    fn the_check_follows_the_mode_and_the_root_file() {
        let check = |mode, root| {
            let s = resolve(mode, root).unwrap();
            (s.mode, s.check, s.roots)
        };
        let file = || Some(Roots::File("/ca.pem".into()));
        assert_eq!(check(None, None), (SslMode::Prefer, Check::Nothing, None));
        assert_eq!(
            check(Some("prefer"), Some("/ca.pem")),
            (SslMode::Prefer, Check::Nothing, None)
        );
        assert_eq!(
            check(Some("require"), None),
            (SslMode::Require, Check::Nothing, None)
        );
        // libpq's rule: `require` with a root file checks the CA.
        assert_eq!(
            check(Some("require"), Some("/ca.pem")),
            (SslMode::Require, Check::Chain, file())
        );
        assert_eq!(
            check(Some("verify-ca"), None),
            (
                SslMode::VerifyCa,
                Check::Chain,
                Some(Roots::System { named: false })
            )
        );
        assert_eq!(
            check(Some("verify-full"), Some("/ca.pem")),
            (SslMode::VerifyFull, Check::ChainAndName, file())
        );
        assert_eq!(
            check(None, Some("system")),
            (
                SslMode::VerifyFull,
                Check::ChainAndName,
                Some(Roots::System { named: true })
            )
        );
    }

    #[test]
    fn system_roots_need_verify_full() {
        let e = resolve(Some("require"), Some("system")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the PostgreSQL setting `sslrootcert` is `system`, which needs sslmode=verify-full (it \
             is `require`): the system's roots trust any public CA, so only the host name check \
             makes them safe; use sslmode=verify-full, or name a CA file"
        );
    }

    #[test]
    fn an_empty_system_trust_store_says_what_to_install() {
        let implied = resolve(Some("verify-ca"), None).unwrap();
        assert_eq!(
            implied.no_system_roots(false, &[]).to_string(),
            "the PostgreSQL setting `sslrootcert` is not given, so sslmode=verify-ca uses the \
             system's trusted roots, but the system has none; install them (the ca-certificates \
             package, or SSL_CERT_FILE) or give the server's CA as sslrootcert=/path/to/ca.pem"
        );
        let named = resolve(None, Some("system")).unwrap();
        assert_eq!(
            named
                .no_system_roots(true, &["could not read /etc/ssl/certs".into()])
                .to_string(),
            "the PostgreSQL setting `sslrootcert` is `system`, but the system has none (could not \
             read /etc/ssl/certs); install them (the ca-certificates package, or SSL_CERT_FILE) or \
             give the server's CA as sslrootcert=/path/to/ca.pem"
        );
    }

    #[test]
    fn pem_problems_spell_out_names() {
        use rustls::pki_types::pem::Error as Pem;
        assert_eq!(
            pem_problem(&Pem::MissingSectionEnd {
                end_marker: b"CERTIFICATE".to_vec()
            }),
            "a CERTIFICATE section has no -----END CERTIFICATE----- line"
        );
        assert_eq!(
            pem_problem(&Pem::IllegalSectionStart {
                line: b"-----BEGIN X".to_vec()
            }),
            "the line `-----BEGIN X` does not start a section properly"
        );
        assert_eq!(pem_problem(&Pem::NoItemsFound), "no items found");
    }

    #[test]
    fn a_name_mismatch_lists_the_certificates_names() {
        let presented = vec![
            "DnsName(\"db.example\")".to_owned(),
            "IpAddress(10.0.0.1)".to_owned(),
            "DirectoryName".to_owned(),
        ];
        assert_eq!(
            name_mismatch("db2.example", &presented),
            "the server's certificate is not valid for host `db2.example` (it names db.example, \
             10.0.0.1, DirectoryName); sslmode=verify-full checks the host name: connect with a \
             name the certificate holds, or use sslmode=verify-ca to check only the CA"
        );
    }

    #[test]
    fn other_certificate_problems_say_what_to_do() {
        let s = resolve(Some("verify-full"), Some("/ca.pem")).unwrap();
        let cert = |e| s.describe(&rustls::Error::InvalidCertificate(e), "db");
        assert_eq!(
            cert(CertificateError::Expired),
            "the server's certificate has expired; renew it on the server, or set this machine's \
             clock right"
        );
        assert_eq!(
            cert(CertificateError::NotValidYet),
            "the server's certificate is not valid yet; check its dates and this machine's clock"
        );
        assert_eq!(
            cert(CertificateError::BadSignature),
            "the server's certificate was refused (invalid peer certificate: BadSignature); \
             sslmode=verify-full checks that a trusted CA signed it"
        );
        assert_eq!(
            s.describe(
                &rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
                "db"
            ),
            "the server ended the TLS handshake (received fatal alert: HandshakeFailure); the \
             server's log says why"
        );
        assert_eq!(
            s.describe(&rustls::Error::General("boom".into()), "db"),
            "the TLS handshake failed (unexpected error: boom)"
        );
        let system = resolve(Some("verify-ca"), None).unwrap();
        assert_eq!(
            system.describe(
                &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "db"
            ),
            "the server's certificate is not signed by a CA the system trusts (no sslrootcert was \
             given, so sslmode=verify-ca used the system's roots); give the CA that signed it as \
             sslrootcert=/path/to/ca.pem"
        );
        let named = resolve(None, Some("system")).unwrap();
        assert_eq!(
            named.describe(
                &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "db"
            ),
            "the server's certificate is not signed by a CA the system trusts \
             (sslrootcert=system); give the CA that signed it as sslrootcert=/path/to/ca.pem"
        );
    }
}
