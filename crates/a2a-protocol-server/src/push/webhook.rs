//! The checks on a push config when it is created: a URL the server may POST to, and header
//! values it can send. Refusals are `InvalidParams` naming the field.

use std::net::IpAddr;
use std::time::Duration;

use a2a_protocol_types::A2aError;
use a2a_protocol_types::push::TaskPushNotificationConfig;

use super::AddressRange;
use super::address::may_reach;

/// The longest webhook URL accepted, in bytes.
const MAX_URL_BYTES: usize = 2048;
/// The longest token or credentials accepted, in bytes.
const MAX_SECRET_BYTES: usize = 4096;
/// How long a webhook's host may take to resolve when its config is created.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

fn refuse(field: &str, problem: impl Into<String>) -> A2aError {
    let problem = problem.into();
    A2aError::invalid_params(format!("{field}: {problem}")).with_field_violation(field, problem)
}

/// The host and port of a webhook URL, once it is `http` or `https` with a host and no user
/// info. The host of an IPv6 literal comes without its brackets.
pub(crate) fn host_and_port(url: &str) -> Result<(String, u16), String> {
    if url.len() > MAX_URL_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_URL_BYTES} are allowed",
            url.len()
        ));
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|_| "is not a URL; give an absolute http or https URL".to_owned())?;
    let port = match uri.scheme_str() {
        Some("https") => 443,
        Some("http") => 80,
        _ => return Err("must be an http or https URL".to_owned()),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| "has no host; give an absolute http or https URL".to_owned())?;
    if authority.as_str().contains('@') {
        return Err(
            "carries user info; put credentials in `authentication`, not in the URL".to_owned(),
        );
    }
    let host = authority.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err("has no host; give an absolute http or https URL".to_owned());
    }
    Ok((host.to_owned(), authority.port_u16().unwrap_or(port)))
}

/// Refuses what a header cannot carry: control characters and anything over the limit.
fn header_safe(field: &str, value: &str) -> Result<(), A2aError> {
    if value.len() > MAX_SECRET_BYTES {
        return Err(refuse(
            field,
            format!("is too long; at most {MAX_SECRET_BYTES} bytes are allowed"),
        ));
    }
    if http::HeaderValue::from_str(value).is_err() {
        return Err(refuse(
            field,
            "holds characters an HTTP header cannot carry (control characters or non-ASCII)",
        ));
    }
    Ok(())
}

/// Checks `config` (fields named under `prefix`, such as `"configuration.taskPushNotificationConfig."`)
/// and that its URL reaches only allowed addresses now. Delivery checks every address again
/// as it connects.
pub(crate) async fn check(
    config: &TaskPushNotificationConfig,
    prefix: &str,
    allowed: &[AddressRange],
) -> Result<(), A2aError> {
    let url_field = format!("{prefix}url");
    let (host, port) = host_and_port(&config.url).map_err(|p| refuse(&url_field, p))?;
    if let Some(token) = &config.token {
        header_safe(&format!("{prefix}token"), token)?;
    }
    if let Some(authentication) = &config.authentication {
        let scheme_field = format!("{prefix}authentication.scheme");
        let scheme = authentication.scheme.as_str();
        let token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if scheme.is_empty() || scheme.len() > 64 || !scheme.chars().all(token_char) {
            return Err(refuse(
                &scheme_field,
                "must be an HTTP authentication scheme such as Bearer or Basic",
            ));
        }
        if let Some(credentials) = &authentication.credentials {
            header_safe(&format!("{prefix}authentication.credentials"), credentials)?;
        }
    }
    let addresses: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(address) => vec![address],
        Err(_) => {
            let lookup = tokio::net::lookup_host((host.as_str(), port));
            match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
                _ => {
                    return Err(refuse(
                        &url_field,
                        format!(
                            "the host {host:?} does not resolve; give a webhook this server can reach"
                        ),
                    ));
                }
            }
        }
    };
    if addresses.is_empty() {
        return Err(refuse(
            &url_field,
            format!("the host {host:?} has no address"),
        ));
    }
    if let Some(refused) = addresses.iter().find(|a| !may_reach(**a, allowed)) {
        return Err(refuse(
            &url_field,
            format!(
                "reaches {refused}, a loopback, private, link-local or otherwise internal \
                 address; webhooks must be public, or the server must allow the address \
                 (a2a serve --allow-push-to {refused})"
            ),
        ));
    }
    Ok(())
}

/// The config as `Get` and `List` answer it: the credentials masked, all but their last four
/// characters when they are long enough to keep four.
pub(crate) fn redacted(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    if let Some(credentials) = config
        .authentication
        .as_mut()
        .and_then(|a| a.credentials.as_mut())
    {
        let shown: String = if credentials.chars().count() >= 16 {
            let tail: Vec<char> = credentials.chars().rev().take(4).collect();
            tail.into_iter().rev().collect()
        } else {
            String::new()
        };
        *credentials = format!("****{shown}");
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_host_and_port() {
        for (url, host, port) in [
            ("https://client.example/hook", "client.example", 443),
            ("http://127.0.0.1:9000/x?y=1", "127.0.0.1", 9000),
            ("http://[::1]:8080/", "::1", 8080),
            ("HTTPS://Client.Example", "Client.Example", 443),
        ] {
            assert_eq!(host_and_port(url), Ok((host.to_owned(), port)), "{url}");
        }
        for url in [
            "ftp://client.example/",
            "/relative",
            "client.example",
            "https://user:pw@client.example/",
            "file:///etc/passwd",
            "",
        ] {
            assert!(host_and_port(url).is_err(), "{url}");
        }
        let long = format!("https://client.example/{}", "a".repeat(MAX_URL_BYTES));
        assert!(host_and_port(&long).is_err());
    }

    #[test]
    fn credentials_are_masked() {
        let config: TaskPushNotificationConfig = serde_json::from_value(serde_json::json!({
            "taskId": "t", "url": "https://h/",
            "authentication": {"scheme": "Bearer", "credentials": "abcdefghijklmnopqrstuvwxyz"},
        }))
        .expect("a config");
        let shown = redacted(config);
        let credentials = shown.authentication.and_then(|a| a.credentials);
        assert_eq!(credentials.as_deref(), Some("****wxyz"));
        let short: TaskPushNotificationConfig = serde_json::from_value(serde_json::json!({
            "taskId": "t", "url": "https://h/",
            "authentication": {"scheme": "Bearer", "credentials": "short"},
        }))
        .expect("a config");
        let credentials = redacted(short).authentication.and_then(|a| a.credentials);
        assert_eq!(credentials.as_deref(), Some("****"));
    }
}
