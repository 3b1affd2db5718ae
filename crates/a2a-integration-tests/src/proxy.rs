//! A TCP proxy on 127.0.0.1 that breaks connections on purpose, so a client meets the
//! ambiguous failure for real: the request reached the server, the answer never came back.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything both ways.
    Pass,
    /// Forward the request; when the server starts answering, drop the client's connection
    /// without forwarding a byte of the answer.
    CutBeforeResponse,
    /// Forward the answer up to and including the `n`-th SSE event (the `n`-th blank line
    /// after the headers), then drop the client's connection.
    CutAfterEvents(usize),
}

/// A running proxy. Each accepted connection takes the next planned fault, then `Pass`.
pub struct FaultProxy {
    addr: SocketAddr,
    plan: Arc<Mutex<VecDeque<Fault>>>,
    connections: Arc<AtomicUsize>,
}

impl FaultProxy {
    /// Starts a proxy in front of `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let plan: Arc<Mutex<VecDeque<Fault>>> = Arc::default();
        let connections = Arc::new(AtomicUsize::new(0));
        let (plan_for_task, count) = (Arc::clone(&plan), Arc::clone(&connections));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let fault = plan_for_task
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .pop_front()
                    .unwrap_or(Fault::Pass);
                tokio::spawn(relay(client, upstream, fault));
            }
        });
        Ok(Self {
            addr,
            plan,
            connections,
        })
    }

    /// Plans faults for the next connections, in order.
    pub fn plan(&self, faults: &[Fault]) {
        self.plan
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(faults.iter().copied());
    }

    /// The proxy's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many connections it has accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn relay(client: TcpStream, upstream: SocketAddr, fault: Fault) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let requests = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    let mut buffer = vec![0u8; 16 * 1024];
    let mut events_seen = 0;
    let mut in_body = false;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match server_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buffer[..n];
        match fault {
            Fault::Pass => {}
            Fault::CutBeforeResponse => break,
            Fault::CutAfterEvents(limit) => {
                // Find where the limit is reached within this chunk, if it is.
                let mut cut_at = None;
                for (i, &byte) in chunk.iter().enumerate() {
                    tail.push(byte);
                    if tail.len() > 4 {
                        tail.remove(0);
                    }
                    if !in_body {
                        in_body = tail.ends_with(b"\r\n\r\n");
                    } else if tail.ends_with(b"\n\n") {
                        events_seen += 1;
                        if events_seen == limit {
                            cut_at = Some(i + 1);
                            break;
                        }
                    }
                }
                if let Some(end) = cut_at {
                    let _ = client_write.write_all(&chunk[..end]).await;
                    let _ = client_write.flush().await;
                    break;
                }
            }
        }
        if client_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    requests.abort();
}
