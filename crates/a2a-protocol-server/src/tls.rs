//! Serving HTTPS: TLS terminated by the server itself (rustls), and client certificates for
//! mutual TLS, whose verified subject a card's `mtlsSecurityScheme` authenticates by.
//!
//! ```no_run
//! use a2a_protocol_server::ServerConfig;
//! use a2a_protocol_server::tls::TlsConfig;
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let tls = TlsConfig::from_pem_files("/etc/agent/cert.pem", "/etc/agent/key.pem")?
//!     // Ask clients for a certificate issued by this CA (mutual TLS).
//!     .with_client_ca_pem(&std::fs::read("/etc/agent/clients-ca.pem")?)?;
//! let config = ServerConfig::default().with_tls(tls);
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The PEM holds no certificate or no private key, or cannot be parsed.
    #[error("{0}")]
    Pem(String),
    /// rustls refused the certificates or key.
    #[error("the TLS configuration was refused: {0}")]
    Config(String),
}

/// The server's certificate chain and key, and optionally the CA client certificates must
/// chain to.
#[derive(Clone)]
pub struct TlsConfig {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    client_roots: Option<Arc<rustls::RootCertStore>>,
    server: Arc<rustls::ServerConfig>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("certificates", &self.chain.len())
            .field("client_certificates", &self.client_roots.is_some())
            .finish()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsConfig {
    /// Serves with the certificate chain `cert_chain` (PEM, the server's certificate first)
    /// and its private key `key` (PEM: PKCS#8, PKCS#1 or SEC1).
    ///
    /// ```
    /// use a2a_protocol_server::tls::TlsConfig;
    ///
    /// let error = TlsConfig::from_pem(b"not PEM", b"not PEM").unwrap_err();
    /// assert!(error.to_string().contains("certificate"), "{error}");
    /// ```
    pub fn from_pem(cert_chain: &[u8], key: &[u8]) -> Result<Self, TlsError> {
        let chain = CertificateDer::pem_slice_iter(cert_chain)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Pem(format!("the certificate PEM cannot be read: {e}")))?;
        if chain.is_empty() {
            return Err(TlsError::Pem(
                "the certificate PEM holds no certificate (-----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| {
            TlsError::Pem(format!(
                "the key PEM holds no private key (PKCS#8, PKCS#1 or SEC1) that can be read: {e}"
            ))
        })?;
        let key = Arc::new(key);
        let server = build(&chain, &key, None)?;
        Ok(Self {
            chain,
            key,
            client_roots: None,
            server,
        })
    }

    /// [`TlsConfig::from_pem`] with the PEM read from files.
    ///
    /// ```
    /// use a2a_protocol_server::tls::{TlsConfig, TlsError};
    ///
    /// let error = TlsConfig::from_pem_files("/no/such/cert.pem", "/no/such/key.pem").unwrap_err();
    /// assert!(matches!(error, TlsError::Read { .. }));
    /// ```
    pub fn from_pem_files(
        cert_chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.display().to_string(),
                source,
            })
        };
        Self::from_pem(&read(cert_chain.as_ref())?, &read(key.as_ref())?)
    }

    /// Asks every client for a certificate and verifies the one it presents against the CA
    /// certificates in `ca` (PEM). A client without one still connects; whether a request
    /// needs one is the card's to say (an `mtlsSecurityScheme` in its requirements). A
    /// certificate that does not verify ends the handshake.
    ///
    /// ```
    /// use a2a_protocol_server::tls::TlsConfig;
    ///
    /// # fn check(server: TlsConfig) {
    /// assert!(server.with_client_ca_pem(b"no certificates here").is_err());
    /// # }
    /// ```
    pub fn with_client_ca_pem(mut self, ca: &[u8]) -> Result<Self, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca) {
            let cert =
                cert.map_err(|e| TlsError::Pem(format!("the client CA PEM cannot be read: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| TlsError::Config(format!("a client CA certificate: {e}")))?;
        }
        if roots.is_empty() {
            return Err(TlsError::Pem(
                "the client CA PEM holds no certificate (-----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        let roots = Arc::new(roots);
        self.server = build(&self.chain, &self.key, Some(&roots))?;
        self.client_roots = Some(roots);
        Ok(self)
    }

    /// Whether clients are asked for certificates.
    pub(crate) fn verifies_clients(&self) -> bool {
        self.client_roots.is_some()
    }

    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.server))
    }
}

fn build(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    client_roots: Option<&Arc<rustls::RootCertStore>>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let refused = |e: rustls::Error| TlsError::Config(e.to_string());
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(refused)?;
    let builder = match client_roots {
        None => builder.with_no_client_auth(),
        Some(roots) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::clone(roots),
                provider(),
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain.to_vec(), key.clone_key())
        .map_err(refused)?;
    // HTTP/2 is offered only where it is served: for gRPC.
    config.alpn_protocols = if cfg!(feature = "grpc") {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

/// The verified certificate a client presented on a mutual TLS connection, in each of its
/// requests' extensions. (A layer of your own that terminates TLS may insert one too; the
/// card's `mtlsSecurityScheme` reads it.)
///
/// ```
/// use a2a_protocol_server::tls::ClientCertificate;
///
/// let cert = ClientCertificate::new("CN=alice, O=Example", Some("alice".into()));
/// assert_eq!(cert.common_name.as_deref(), Some("alice"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCertificate {
    /// The subject's distinguished name (RFC 4514), such as `CN=alice, O=Example`.
    pub subject: String,
    /// The subject's common name, if it has one.
    pub common_name: Option<String>,
}

impl ClientCertificate {
    /// A certificate with `subject` (RFC 4514) and `common_name`.
    ///
    /// ```
    /// use a2a_protocol_server::tls::ClientCertificate;
    ///
    /// assert_eq!(ClientCertificate::new("CN=bob", Some("bob".into())).subject, "CN=bob");
    /// ```
    pub fn new(subject: impl Into<String>, common_name: Option<String>) -> Self {
        Self {
            subject: subject.into(),
            common_name,
        }
    }

    /// The certificate in `der`, or `None` if it cannot be parsed (rustls verified it, so it
    /// can).
    pub(crate) fn parse(der: &[u8]) -> Option<Self> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = cert.subject();
        Some(Self {
            subject: subject.to_string(),
            common_name: subject
                .iter_common_name()
                .next()
                .and_then(|cn| cn.as_str().ok())
                .map(str::to_owned),
        })
    }
}
