//! The fault proxy in front of real HTTP servers.

use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
use axum::body::Body;
use axum::routing::get;

/// A server that streams three SSE events the way Python servers write them: CRLF line ends,
/// each event its own chunk of a chunked answer.
async fn crlf_event_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().route(
        "/events",
        get(|| async {
            let events = futures::stream::iter((1..=3).map(|n| {
                Ok::<_, std::convert::Infallible>(format!("event: update\r\ndata: {n}\r\n\r\n"))
            }));
            (
                [("content-type", "text/event-stream")],
                Body::from_stream(events),
            )
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test]
async fn a_cut_after_one_event_fires_on_crlf_events_in_chunked_answers() {
    let addr = crlf_event_server().await;
    let proxy = FaultProxy::start(addr).await.expect("proxy");
    proxy.plan(&[Fault::CutAfterEvents(1)]);
    let mut response = reqwest::get(format!("{}/events", proxy.url()))
        .await
        .expect("the head passes");
    let mut received = Vec::new();
    let cut = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received.extend_from_slice(&chunk),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    let text = String::from_utf8_lossy(&received);
    assert!(cut, "the stream was cut, not ended: {text:?}");
    assert_eq!(
        text, "event: update\r\ndata: 1\r\n\r\n",
        "exactly the first event"
    );
}
