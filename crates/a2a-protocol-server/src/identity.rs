//! Who calls: the identity authentication establishes, which scopes tasks, keys and push
//! configs.

/// Who is calling, as established by the server's authentication (not by anything the client
/// merely claims in the body): a tower layer in front of the agent may put it in the request's
/// extensions (the axum idiom), or a [`crate::CallerResolver`] may read it from the headers.
/// The layer's answer wins.
///
/// ```
/// use a2a_protocol_server::{A2aServer, CallerIdentity, RequestHandler, ServerConfig};
/// use a2a_protocol_server::agents::EchoAgent;
///
/// // Trust a header set by an authenticating proxy in front of the server.
/// let config = ServerConfig::default().with_caller_resolver(|headers: &http::HeaderMap| {
///     let user = headers.get("x-authenticated-user")?.to_str().ok()?;
///     Some(CallerIdentity(user.to_owned()))
/// });
/// let server = A2aServer::new(RequestHandler::builder(EchoAgent::new()).build()).with_config(config);
/// # let _ = server;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallerIdentity(pub String);
