//! HTTPS terminated by the server, and mutual TLS as a card's scheme: a client certificate
//! from the configured CA authenticates its holder (by common name) on both bindings, a
//! client without one is answered 401, one from another CA cannot connect, and callers still
//! see only their own tasks. Certificates are made fresh for each run.

mod common;

use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::auth::{Authenticator, ClientCertificates};
use a2a_protocol_server::tls::TlsConfig;
use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
use a2a_protocol_types::security::{MutualTlsSecurityScheme, SecurityRequirement, SecurityScheme};
use common::{Binding, HTTP_BINDINGS, send_params};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::{Value, json};

/// A CA, and certificates it issues (PEM).
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        Self {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA"),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `names` (hosts) with common name `cn`: (certificate, key) PEM.
    fn issue(&self, cn: &str, names: &[&str]) -> (String, String) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        (cert.pem(), key.serialize_pem())
    }
}

/// The echo agent over `tls`, its card requiring mutual TLS, any certificate the client CA
/// issued accepted.
fn mtls_server(tls: TlsConfig) -> A2aServer {
    let mut card = EchoAgent::card();
    card.security_schemes.insert(
        "mtls".into(),
        SecurityScheme::MutualTls(MutualTlsSecurityScheme { description: None }),
    );
    card.security_requirements.push(SecurityRequirement {
        schemes: [("mtls".to_owned(), Default::default())].into(),
    });
    A2aServer::new(
        RequestHandler::builder(EchoAgent::new())
            .with_agent_card(card)
            .build(),
    )
    .with_config(
        ServerConfig::default()
            .with_tls(tls)
            .with_authentication(Authenticator::new().with_verifier("mtls", ClientCertificates)),
    )
}

/// An HTTPS server whose card requires mutual TLS with certificates from `clients`; its base
/// URL.
async fn serve_mtls(server_ca: &Authority, clients: &Authority) -> String {
    let (cert, key) = server_ca.issue("agent", &["127.0.0.1", "localhost"]);
    let tls = TlsConfig::from_pem(cert.as_bytes(), key.as_bytes())
        .expect("server TLS")
        .with_client_ca_pem(clients.pem().as_bytes())
        .expect("client CA");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("https://{}", listener.local_addr().expect("addr"));
    let server = mtls_server(tls);
    tokio::spawn(server.serve(listener, std::future::pending()));
    base
}

/// An HTTPS client trusting `server_ca`, presenting `identity` (certificate, key) if given.
fn https_client(server_ca: &Authority, identity: Option<&(String, String)>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(server_ca.pem().as_bytes()).expect("CA"),
        )
        .timeout(std::time::Duration::from_secs(20));
    if let Some((cert, key)) = identity {
        builder = builder.identity(
            reqwest::Identity::from_pem(format!("{cert}\n{key}").as_bytes()).expect("identity"),
        );
    }
    builder.build().expect("client")
}

/// Calls `method` over `binding`: the HTTP status and the body.
async fn call(
    client: &reqwest::Client,
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
) -> Result<(u16, Value), reqwest::Error> {
    let request = match (binding, method) {
        (Binding::JsonRpc, _) => client
            .post(format!("{base}/"))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})),
        (Binding::Rest, "SendMessage") => client.post(format!("{base}/message:send")).json(&params),
        (Binding::Rest, "ListTasks") => client.get(format!("{base}/tasks")),
        (Binding::Rest, "GetTask") => client.get(format!(
            "{base}/tasks/{}",
            params["id"].as_str().unwrap_or("")
        )),
        (Binding::Rest, other) => panic!("no mapping for {other}"),
        (Binding::Grpc, _) => panic!("this harness speaks HTTP/1.1 only"),
    };
    let response = request.header("A2A-Version", "1.0").send().await?;
    let status = response.status().as_u16();
    Ok((status, response.json().await.unwrap_or(Value::Null)))
}

fn result(binding: Binding, body: &Value) -> Value {
    match binding {
        Binding::JsonRpc => body["result"].clone(),
        Binding::Rest | Binding::Grpc => body.clone(),
    }
}

#[tokio::test]
async fn a_client_certificate_from_the_ca_authenticates_its_holder() {
    let server_ca = Authority::new("test server CA");
    let clients = Authority::new("test clients CA");
    let base = serve_mtls(&server_ca, &clients).await;
    let alice = https_client(&server_ca, Some(&clients.issue("alice", &[])));
    let bob = https_client(&server_ca, Some(&clients.issue("bob", &[])));
    let nobody = https_client(&server_ca, None);

    // The public card is served over HTTPS, and names HTTPS URLs.
    let card: Value = nobody
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("JSON");
    let urls = card["supportedInterfaces"].to_string();
    assert!(
        urls.contains("https://") && !urls.contains("http://"),
        "{urls}"
    );

    for binding in HTTP_BINDINGS {
        // Without a certificate: connected, but not authenticated.
        let (status, body) = call(&nobody, binding, &base, "ListTasks", json!({}))
            .await
            .expect("answered");
        assert_eq!(status, 401, "{binding:?}: {body}");
        // Alice's certificate: she sends, and her task is hers alone.
        let (status, body) = call(
            &alice,
            binding,
            &base,
            "SendMessage",
            send_params(&uuid::Uuid::new_v4().to_string(), "over mTLS"),
        )
        .await
        .expect("answered");
        assert_eq!(status, 200, "{binding:?}: {body}");
        let id = result(binding, &body)["task"]["id"]
            .as_str()
            .expect("a task")
            .to_owned();
        let (status, _) = call(&alice, binding, &base, "GetTask", json!({"id": id}))
            .await
            .expect("answered");
        assert_eq!(status, 200, "{binding:?}");
        let (_, body) = call(&bob, binding, &base, "GetTask", json!({"id": id}))
            .await
            .expect("answered");
        assert!(
            body.to_string().contains("TASK_NOT_FOUND"),
            "{binding:?}: {body}"
        );
    }

    // A certificate from another CA does not get through the handshake.
    let stranger_ca = Authority::new("someone else's CA");
    let stranger = https_client(&server_ca, Some(&stranger_ca.issue("mallory", &[])));
    let refused = call(&stranger, Binding::JsonRpc, &base, "ListTasks", json!({})).await;
    assert!(
        refused.is_err(),
        "a stranger's certificate was accepted: {refused:?}"
    );
}

#[tokio::test]
async fn mutual_tls_without_client_certificates_keeps_the_server_from_starting() {
    let server_ca = Authority::new("test server CA");
    let (cert, key) = server_ca.issue("agent", &["127.0.0.1"]);
    // HTTPS, but no client CA: no certificate can ever arrive.
    let tls = TlsConfig::from_pem(cert.as_bytes(), key.as_bytes()).expect("TLS");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let error = mtls_server(tls)
        .serve(listener, std::future::pending())
        .await
        .expect_err("refuses to start");
    assert!(error.to_string().contains("with_client_ca_pem"), "{error}");
}
