//! A request refused before its body was read leaves that body on the connection, so the
//! connection cannot carry another request. Such answers say `Connection: close`, and the
//! client opens a new connection instead of failing its next request on this one.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;
use http::header::CONNECTION;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// Answers with `Connection: close` when the handler did not read the request body to its end.
pub(crate) async fn close_if_unread(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let read = Arc::new(AtomicBool::new(body.is_end_stream()));
    let body = Body::new(Watched {
        inner: body,
        read: Arc::clone(&read),
    });
    let mut response = next.run(Request::from_parts(parts, body)).await;
    if !read.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that notes when it has been read to its end.
struct Watched {
    inner: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
