//! Accepting connections within limits: at most [`ServerConfig::max_connections`] at once, a
//! deadline for every request's headers that also closes a connection left idle, and a
//! shorter one for connections accepted while half the slots are taken, so a flood of idle
//! sockets is shed in seconds instead of starving everyone else.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::server::ServerConfig;

/// How long the accept loop pauses after an error such as running out of file descriptors,
/// so it does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` until `stop` is cancelled, then waits for the connections
/// still open to finish (the caller bounds that wait).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    config: &ServerConfig,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let capacity = config.max_connections.max(1);
    let slots = Arc::new(Semaphore::new(capacity));
    let crowded_at = capacity / 2;
    let graceful = GracefulShutdown::new();
    #[cfg(feature = "tls")]
    let tls = config.tls.as_ref().map(crate::tls::TlsConfig::acceptor);
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => break,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (tcp, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::debug!(%error, "could not accept a connection");
                    drop(permit);
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let in_use = capacity.saturating_sub(slots.available_permits());
        let header_timeout = if in_use >= crowded_at {
            config.crowded_header_timeout
        } else {
            config.header_timeout
        };
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true);
        #[cfg(feature = "tls")]
        if let Some(tls) = &tls {
            let (acceptor, watcher, router) = (tls.clone(), graceful.watcher(), router.clone());
            tokio::spawn(async move {
                // The handshake counts against the same deadline as the headers.
                let stream = match tokio::time::timeout(header_timeout, acceptor.accept(tcp)).await
                {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(error)) => {
                        tracing::debug!(%error, %peer, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
                let certificate = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|chain| chain.first())
                    .and_then(|der| crate::tls::ClientCertificate::parse(der));
                let service = service(router, peer, certificate);
                let connection = http.serve_connection(TokioIo::new(stream), service);
                if let Err(error) = watcher.watch(connection).await {
                    tracing::debug!(%error, "connection ended with an error");
                }
                drop(permit);
            });
            continue;
        }
        let connection =
            http.serve_connection(TokioIo::new(tcp), service(router.clone(), peer, None));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Without TLS, there is never a client certificate.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
enum ClientCertificate {}
#[cfg(feature = "tls")]
use crate::tls::ClientCertificate;

/// The router as hyper calls it, each request carrying the peer's address (axum's
/// [`ConnectInfo`], which per-address limits read) and the client certificate the TLS
/// handshake verified, if any.
fn service(
    router: Router,
    peer: SocketAddr,
    certificate: Option<ClientCertificate>,
) -> impl hyper::service::Service<
    http::Request<Incoming>,
    Response = axum::response::Response,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        if let Some(certificate) = &certificate {
            request.extensions_mut().insert(certificate.clone());
        }
        router.clone().oneshot(request.map(axum::body::Body::new))
    })
}
