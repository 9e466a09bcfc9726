//! TLS to PostgreSQL as `sslmode` and `sslrootcert` ask, against servers the tests start: one
//! with `ssl = on` and a certificate for 127.0.0.1 and localhost signed by a CA made here, one
//! without TLS. Where a store connects, the server itself (`pg_stat_ssl`) says whether its
//! connections are encrypted; where it is refused, the error names the check that failed and
//! comes at once, not after the minute a lost connection is retried for.

#![allow(
    clippy::unwrap_used,
    reason = "test bodies; a failed unwrap fails the test with the error"
)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use harnessx_runtime::{PostgresConfig, PostgresStore, SslMode, StoreError};
use harnessx_testkit::{PgCluster, PgOptions};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tempfile::TempDir;

/// A refusal must come well before the store's default 60 s of retries would end.
const PROMPTLY: Duration = Duration::from_secs(10);

/// A certificate authority: its certificate, PEM, and what signs with it.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn new_ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    Ca {
        pem,
        issuer: Issuer::new(params, key),
    }
}

/// A server certificate for `names`, signed by `ca`: the certificate and its key, PEM.
fn server_certificate(ca: &Ca, names: &[&str]) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names.clone()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, &names[0]);
    params
        .extended_key_usages
        .push(ExtendedKeyUsagePurpose::ServerAuth);
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A server with TLS, and the files a client is given: the CA that signed the server's
/// certificate, another CA, and a file that is not PEM.
struct TlsServer {
    cluster: PgCluster,
    files: TempDir,
}

impl TlsServer {
    fn ca(&self) -> PathBuf {
        self.files.path().join("ca.pem")
    }

    fn other_ca(&self) -> PathBuf {
        self.files.path().join("other-ca.pem")
    }

    /// `postgresql://postgres@HOST:PORT/postgres?QUERY`.
    fn url(&self, host: &str, query: &str) -> String {
        format!(
            "postgresql://postgres@{host}:{}/postgres?{query}",
            self.cluster.port()
        )
    }
}

static TLS_SERVER: Mutex<Weak<TlsServer>> = Mutex::new(Weak::new());
static PLAIN_SERVER: Mutex<Weak<PgCluster>> = Mutex::new(Weak::new());

/// The TLS server the tests running now share; `None` (skip) without PostgreSQL unless `CI`
/// is set. It stops when the last test using it ends.
fn tls_server() -> Option<Arc<TlsServer>> {
    let mut shared = TLS_SERVER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(server) = shared.upgrade() {
        return Some(server);
    }
    let ca = new_ca("harnessx test CA");
    let (certificate, key) = server_certificate(&ca, &["127.0.0.1", "localhost"]);
    let options = PgOptions::default().fsync(false).tls(certificate, key);
    let cluster = harnessx_testkit::require_or_skip_with(options)?;
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("ca.pem"), &ca.pem).unwrap();
    std::fs::write(files.path().join("other-ca.pem"), new_ca("another CA").pem).unwrap();
    let server = Arc::new(TlsServer { cluster, files });
    *shared = Arc::downgrade(&server);
    Some(server)
}

/// A server without TLS, shared the same way.
fn plain_server() -> Option<Arc<PgCluster>> {
    let mut shared = PLAIN_SERVER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cluster) = shared.upgrade() {
        return Some(cluster);
    }
    let cluster = Arc::new(harnessx_testkit::require_or_skip_with(
        PgOptions::default().fsync(false),
    )?);
    *shared = Arc::downgrade(&cluster);
    Some(cluster)
}

async fn connect(url: String) -> PostgresStore {
    PostgresStore::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Connects, expecting a refusal, and checks that it came at once.
async fn refused(config: PostgresConfig) -> StoreError {
    let start = Instant::now();
    let e = PostgresStore::connect_with(config).await.unwrap_err();
    assert!(
        start.elapsed() < PROMPTLY,
        "took {:?}: {e}",
        start.elapsed()
    );
    e
}

/// Asserts that the store works and that its connections are (or are not) encrypted.
async fn works(store: &PostgresStore, encrypted: bool) {
    assert_eq!(
        store.schema_version().await.unwrap(),
        harnessx_runtime::store::SCHEMA_VERSION
    );
    assert_eq!(store.is_encrypted().await.unwrap(), encrypted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_with_the_ca_and_a_host_the_certificate_names_encrypts_every_connection() {
    let Some(server) = tls_server() else { return };
    let ca = server.ca().display().to_string();
    for host in ["127.0.0.1", "localhost"] {
        let url = server.url(
            host,
            &format!("sslmode=verify-full&sslrootcert={ca}&application_name=tls-{host}"),
        );
        let store = connect(url).await;
        works(&store, true).await;
        while !store.is_listening() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The server's view of every connection the store holds: the pooled ones and the
        // listening one.
        let (admin, connection) =
            tokio_postgres::connect(&server.cluster.url(), tokio_postgres::NoTls)
                .await
                .unwrap();
        let driver = tokio::spawn(connection);
        let row = admin
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE s.ssl), \
                        count(*) FILTER (WHERE s.ssl AND a.query LIKE 'LISTEN%') \
                 FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
                 WHERE a.application_name = $1",
                &[&format!("tls-{host}")],
            )
            .await
            .unwrap();
        let (all, encrypted, listening): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        assert!(all >= 2, "{all} connections");
        assert_eq!((encrypted, listening), (all, 1));
        driver.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_refuses_a_host_name_the_certificate_does_not_name() {
    let Some(server) = tls_server() else { return };
    // The server is reached at 127.0.0.1, under a name its certificate does not hold.
    let url = server.url(
        "elsewhere.invalid",
        &format!(
            "hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={}",
            server.ca().display()
        ),
    );
    let e = refused(PostgresConfig::new(url)).await;
    assert!(matches!(e, StoreError::Tls { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "cannot connect to PostgreSQL at `elsewhere.invalid` over TLS: the server's certificate \
         is not valid for host `elsewhere.invalid` (it names 127.0.0.1, localhost); \
         sslmode=verify-full checks the host name: connect with a name the certificate holds, or \
         use sslmode=verify-ca to check only the CA"
    );
    // A host that is no name at all cannot be checked.
    let key_value = format!(
        "host='not a name' hostaddr=127.0.0.1 port={} user=postgres sslmode=verify-full \
         sslrootcert='{}'",
        server.cluster.port(),
        server.ca().display()
    );
    let e = refused(PostgresConfig::new(key_value)).await;
    assert_eq!(
        e.to_string(),
        "cannot connect to PostgreSQL at `not a name` over TLS: `not a name` is neither a DNS \
         name nor an IP address, so sslmode=verify-full cannot check the server's certificate \
         against it; connect by a name the certificate holds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_ca_accepts_a_host_name_the_certificate_does_not_name() {
    let Some(server) = tls_server() else { return };
    let url = server.url(
        "elsewhere.invalid",
        &format!(
            "hostaddr=127.0.0.1&sslmode=verify-ca&sslrootcert={}",
            server.ca().display()
        ),
    );
    works(&connect(url).await, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_ca_is_refused() {
    let Some(server) = tls_server() else { return };
    let other = server.other_ca();
    // `require` with a root file checks the CA too, as libpq does.
    for mode in ["verify-full", "verify-ca", "require"] {
        let url = server.url(
            "127.0.0.1",
            &format!("sslmode={mode}&sslrootcert={}", other.display()),
        );
        let e = refused(PostgresConfig::new(url)).await;
        assert_eq!(
            e.to_string(),
            format!(
                "cannot connect to PostgreSQL at `127.0.0.1` over TLS: the server's certificate \
                 is not signed by a CA in sslrootcert `{}`; put the CA that signed it in that \
                 file",
                other.display()
            ),
            "sslmode={mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_encrypts_without_a_root_certificate() {
    let Some(server) = tls_server() else { return };
    works(
        &connect(server.url("127.0.0.1", "sslmode=require")).await,
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefer_encrypts_when_the_server_offers_tls_and_is_the_default() {
    let Some(server) = tls_server() else { return };
    works(
        &connect(server.url("127.0.0.1", "sslmode=prefer")).await,
        true,
    )
    .await;
    works(&connect(server.url("localhost", "")).await, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_connects_in_plain_text_to_a_server_with_tls() {
    let Some(server) = tls_server() else { return };
    works(
        &connect(server.url("127.0.0.1", "sslmode=disable")).await,
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_value_strings_and_the_builder_set_tls_too() {
    let Some(server) = tls_server() else { return };
    let ca = server.ca();
    let key_value = format!(
        "host=localhost port={} user=postgres dbname=postgres sslmode=verify-full \
         sslrootcert='{}'",
        server.cluster.port(),
        ca.display()
    );
    works(&connect(key_value).await, true).await;
    // The builder overrides the URL.
    let url = server.url("localhost", "sslmode=disable");
    let config = PostgresConfig::new(url)
        .ssl_mode(SslMode::VerifyFull)
        .root_certificates(&ca);
    works(&PostgresStore::connect_with(config).await.unwrap(), true).await;
    let url = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    );
    let e = refused(PostgresConfig::new(url).root_certificates(server.other_ca())).await;
    assert!(
        e.to_string()
            .contains("is not signed by a CA in sslrootcert"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_where_the_server_offers_none_is_refused_at_once() {
    let Some(cluster) = plain_server() else {
        return;
    };
    for mode in ["require", "verify-full"] {
        let url = format!(
            "postgresql://postgres@127.0.0.1:{}/postgres?sslmode={mode}",
            cluster.port()
        );
        let e = refused(PostgresConfig::new(url)).await;
        assert!(matches!(e, StoreError::Tls { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "cannot connect to PostgreSQL at `127.0.0.1` over TLS: the server does not offer \
                 TLS, and sslmode={mode} needs it; turn `ssl = on` in the server's \
                 postgresql.conf (with a certificate and key), or use sslmode=prefer to allow \
                 plain text"
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefer_falls_back_to_plain_text_when_the_server_offers_no_tls() {
    let Some(cluster) = plain_server() else {
        return;
    };
    let url = format!(
        "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=prefer",
        cluster.port()
    );
    works(&connect(url.clone()).await, false).await;
    works(&connect(cluster.url()).await, false).await;
}

#[tokio::test]
async fn bad_tls_settings_name_the_setting_and_what_to_give() {
    // Nothing listens here: each of these fails before connecting.
    let url = |query: &str| format!("postgresql://postgres@127.0.0.1:1/postgres?{query}");
    let files = tempfile::tempdir().unwrap();
    let missing = files.path().join("missing.pem");
    let not_pem = files.path().join("not.pem");
    std::fs::write(&not_pem, "just text\n").unwrap();
    let broken = files.path().join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nAAAA\n").unwrap();
    let cases = [
        (
            url("sslmode=verify"),
            "the PostgreSQL setting `sslmode` is `verify`; use one of disable, prefer, require, \
             verify-ca, verify-full"
                .to_owned(),
        ),
        (
            "host=127.0.0.1 sslmode=Require".to_owned(),
            "the PostgreSQL setting `sslmode` is `Require`; use one of disable, prefer, require, \
             verify-ca, verify-full"
                .to_owned(),
        ),
        (
            url(&format!(
                "sslmode=verify-full&sslrootcert={}",
                missing.display()
            )),
            format!(
                "the PostgreSQL setting `sslrootcert` names `{}`, which cannot be read (No such \
                 file or directory (os error 2)); give a PEM file of CA certificates, or `system` \
                 for the system's trusted roots",
                missing.display()
            ),
        ),
        (
            url(&format!(
                "sslmode=verify-ca&sslrootcert={}",
                not_pem.display()
            )),
            format!(
                "the PostgreSQL setting `sslrootcert` names `{}`, which holds no certificate (no \
                 -----BEGIN CERTIFICATE----- block); give a PEM file of CA certificates",
                not_pem.display()
            ),
        ),
        (
            url(&format!("sslmode=require&sslrootcert={}", broken.display())),
            format!(
                "the PostgreSQL setting `sslrootcert` names `{}`, which is not a valid PEM file \
                 (a CERTIFICATE section has no -----END CERTIFICATE----- line); give a PEM \
                 file of CA certificates",
                broken.display()
            ),
        ),
        (
            url("sslmode=verify-ca&sslrootcert=system"),
            "the PostgreSQL setting `sslrootcert` is `system`, which needs sslmode=verify-full \
             (it is `verify-ca`): the system's roots trust any public CA, so only the host name \
             check makes them safe; use sslmode=verify-full, or name a CA file"
                .to_owned(),
        ),
    ];
    for (url, expected) in cases {
        let e = refused(PostgresConfig::new(&url)).await;
        assert!(matches!(e, StoreError::Setting { .. }), "{url}: {e:?}");
        assert_eq!(e.to_string(), expected, "{url}");
    }
}
