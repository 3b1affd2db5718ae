//! The in-memory key index cannot be filled for everyone: clients known only by their address
//! are counted by network (/24, /64), share half the index between them, and a proxy's
//! `X-Forwarded-For` is believed only from proxies the server trusts.

mod common;

use std::net::IpAddr;
use std::sync::Arc;

use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
use a2a_protocol_server::{CallerIdentity, ServerConfig};
use common::*;
use serde_json::Value;

/// A server whose caller is named by `x-user` (unauthenticated without it), over an index of
/// `max` keys of which a holder keeps `per_holder` once it is half full, and unauthenticated
/// clients half.
async fn server(max: usize, per_holder: usize, config: ServerConfig) -> TestServer {
    let store = Arc::new(InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_max_idempotency_keys(max)
            .with_max_idempotency_keys_per_holder(per_holder)
            .with_max_unauthenticated_idempotency_keys(max / 2),
    ));
    let config = config.with_caller_resolver(|headers: &http::HeaderMap| {
        let user = headers.get("x-user")?.to_str().ok()?;
        Some(CallerIdentity(user.to_owned()))
    });
    serve_with(handler_with_store(CountingAgent::new(), store), config).await
}

/// A keyed send from local address `from`, with `headers`; whether it was accepted (a 503 is
/// a refusal, anything else fails the test).
async fn keyed_send(base: &str, from: IpAddr, headers: &[(&str, &str)]) -> bool {
    let client = reqwest::Client::builder()
        .local_address(from)
        .build()
        .expect("a client");
    let mut request = client
        .post(format!("{base}/message:send"))
        .header("A2A-Version", "1.0")
        .json(&keyed_params(
            &uuid::Uuid::new_v4().to_string(),
            "hi",
            &key(),
        ));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("sent");
    match response.status().as_u16() {
        200 => true,
        503 => false,
        other => {
            let body: Value = response.json().await.unwrap_or(Value::Null);
            panic!("a keyed send answered {other}: {body}");
        }
    }
}

/// Six neighbouring loopback addresses: one client's, as far as quotas go.
fn neighbours() -> Vec<IpAddr> {
    (2..8).map(|i| IpAddr::from([127, 0, 0, i])).collect()
}

/// Six loopback addresses in six different /24 networks: six clients.
fn strangers() -> Vec<IpAddr> {
    (1..7).map(|i| IpAddr::from([127, 0, i, 1])).collect()
}

#[tokio::test]
async fn unauthenticated_clients_cannot_take_the_room_of_authenticated_callers() {
    let server = server(20, 2, ServerConfig::default()).await;
    let mut taken = 0;
    for from in strangers() {
        for _ in 0..30 {
            if !keyed_send(&server.base, from, &[]).await {
                break;
            }
            taken += 1;
        }
    }
    println!("unauthenticated keys taken from six networks: {taken} of 20");
    assert!(
        taken <= 10,
        "together they hold half the index at most: {taken}"
    );
    let local = IpAddr::from([127, 0, 0, 1]);
    for user in ["alice", "bob", "carol"] {
        assert!(
            keyed_send(&server.base, local, &[("x-user", user)]).await,
            "{user} still gets a key"
        );
    }
}

/// Fills half the index with the keys of distinct authenticated callers, so that from then on
/// every holder keeps its quota.
async fn crowd(base: &str, half: usize) {
    let local = IpAddr::from([127, 0, 0, 1]);
    for i in 0..half {
        let user = format!("user-{i}");
        assert!(
            keyed_send(base, local, &[("x-user", &user)]).await,
            "{user}"
        );
    }
}

#[tokio::test]
async fn a_clients_neighbouring_addresses_share_one_quota() {
    let server = server(100, 2, ServerConfig::default()).await;
    crowd(&server.base, 50).await;
    let mut taken = 0;
    for from in neighbours() {
        for _ in 0..5 {
            taken += usize::from(keyed_send(&server.base, from, &[]).await);
        }
    }
    assert_eq!(taken, 2, "one /24, one quota of two");
}

#[tokio::test]
async fn a_forwarded_address_counts_only_behind_a_trusted_proxy() {
    let from = IpAddr::from([127, 0, 0, 1]);
    let clients = ["203.0.113.5", "198.51.100.7", "192.0.2.9"];
    let takes = |base: String| async move {
        let mut taken = 0;
        for client in clients {
            for _ in 0..4 {
                taken += usize::from(
                    keyed_send(
                        &base,
                        from,
                        &[("x-forwarded-for", &format!("{client}, 127.0.0.1"))],
                    )
                    .await,
                );
            }
        }
        taken
    };
    // Not trusted: the header is any client's word, and every request counts as the proxy's.
    let plain = server(100, 2, ServerConfig::default()).await;
    crowd(&plain.base, 50).await;
    assert_eq!(
        takes(plain.base.clone()).await,
        2,
        "one holder, the proxy's network"
    );
    let trusting = server(
        100,
        2,
        ServerConfig::default().with_trusted_proxies(vec!["127.0.0.0/8".parse().expect("a range")]),
    )
    .await;
    crowd(&trusting.base, 50).await;
    assert_eq!(
        takes(trusting.base.clone()).await,
        6,
        "three clients, two keys each"
    );
}
