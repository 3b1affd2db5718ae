//! Where each kind of scheme carries its credential in a request, and how the server asks
//! for it (`WWW-Authenticate`).

use a2a_protocol_types::security::SecurityScheme;
use http::header::{AUTHORIZATION, COOKIE};

/// What a request presents for one scheme.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Presented {
    Nothing,
    /// The credential's place holds two different values: refused, not guessed at.
    Ambiguous,
    Credential(String),
}

/// The `Authorization` scheme a card's scheme uses: `Bearer` for OAuth 2.0 and OpenID
/// Connect, the declared one for HTTP authentication.
fn authorization_scheme(scheme: &SecurityScheme) -> Option<&str> {
    match scheme {
        SecurityScheme::HttpAuth(http) => Some(http.scheme.as_str()),
        SecurityScheme::OAuth2(_) | SecurityScheme::OpenIdConnect(_) => Some("Bearer"),
        SecurityScheme::ApiKey(_) | SecurityScheme::MutualTls(_) => None,
    }
}

/// Refuses a scheme a request cannot carry to this server: mutual TLS without client
/// certificates verified, an API key in an unknown place, an HTTP scheme without a name.
pub(super) fn check_readable(
    name: &str,
    scheme: &SecurityScheme,
    client_certificates: bool,
) -> Result<(), String> {
    match scheme {
        SecurityScheme::MutualTls(_) if !client_certificates => Err(format!(
            "scheme {name:?} is mutual TLS, and this server does not verify client \
             certificates; serve HTTPS asking for them (ServerConfig::with_tls with \
             TlsConfig::with_client_ca_pem, feature `tls`), or terminate TLS in a proxy or \
             tower layer that verifies them and puts a CallerIdentity in the request's \
             extensions"
        )),
        SecurityScheme::ApiKey(key) => {
            if !matches!(key.location.as_str(), "header" | "query" | "cookie") {
                return Err(format!(
                    "API key scheme {name:?} has location {:?}; use \"header\", \"query\" or \
                     \"cookie\"",
                    key.location
                ));
            }
            if key.name.is_empty() || http::HeaderName::from_bytes(key.name.as_bytes()).is_err() {
                return Err(format!(
                    "API key scheme {name:?} needs a name that is a valid header, query \
                     parameter or cookie name"
                ));
            }
            Ok(())
        }
        SecurityScheme::HttpAuth(http) if http.scheme.trim().is_empty() => Err(format!(
            "HTTP scheme {name:?} names no authentication scheme (\"Bearer\", \"Basic\", ...)"
        )),
        _ => Ok(()),
    }
}

/// The credential a request presents for `scheme`.
pub(super) fn presented(scheme: &SecurityScheme, request: &http::request::Parts) -> Presented {
    if let SecurityScheme::ApiKey(key) = scheme {
        return match key.location.as_str() {
            "header" => one(request
                .headers
                .get_all(key.name.as_str())
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::trim)),
            "query" => one(request
                .uri
                .query()
                .and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok())
                .unwrap_or_default()
                .iter()
                .filter(|(name, _)| *name == key.name)
                .map(|(_, value)| value.as_str())),
            "cookie" => one(request
                .headers
                .get_all(COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|cookies| cookies.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .filter(|(name, _)| *name == key.name)
                .map(|(_, value)| value.trim_matches('"'))),
            _ => Presented::Nothing,
        };
    }
    if let SecurityScheme::MutualTls(_) = scheme {
        return client_certificate(request);
    }
    let Some(wanted) = authorization_scheme(scheme) else {
        return Presented::Nothing;
    };
    one(request
        .headers
        .get_all(AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.trim().split_once(' '))
        .filter(|(given, _)| given.eq_ignore_ascii_case(wanted))
        .map(|(_, credential)| credential.trim()))
}

/// The verified client certificate's common name (or subject), when the connection has one.
#[cfg(feature = "tls")]
fn client_certificate(request: &http::request::Parts) -> Presented {
    match request.extensions.get::<crate::tls::ClientCertificate>() {
        Some(cert) => Presented::Credential(
            cert.common_name
                .clone()
                .unwrap_or_else(|| cert.subject.clone()),
        ),
        None => Presented::Nothing,
    }
}

#[cfg(not(feature = "tls"))]
fn client_certificate(_request: &http::request::Parts) -> Presented {
    Presented::Nothing
}

/// The one non-empty value among `values`; two different ones are ambiguous.
fn one<'a>(values: impl Iterator<Item = &'a str>) -> Presented {
    let mut found: Option<&str> = None;
    for value in values.filter(|v| !v.is_empty()) {
        match found {
            Some(earlier) if earlier != value => return Presented::Ambiguous,
            _ => found = Some(value),
        }
    }
    found.map_or(Presented::Nothing, |v| Presented::Credential(v.to_owned()))
}

/// The `WWW-Authenticate` challenge for `scheme` (RFC 9110 §11.6.1; RFC 6750 §3 for bearer
/// tokens, with `error` and `scope`). API keys have no registered scheme; the challenge
/// names where the key goes, so a reader of the 401 knows what to send.
pub(super) fn challenge(
    scheme: &SecurityScheme,
    error: Option<&str>,
    scopes: &[String],
) -> Option<String> {
    let mut value = match scheme {
        SecurityScheme::ApiKey(key) => format!(
            "ApiKey realm=\"a2a\", in=\"{}\", name=\"{}\"",
            quoted(&key.location),
            quoted(&key.name)
        ),
        SecurityScheme::MutualTls(_) => return None,
        other => format!("{} realm=\"a2a\"", authorization_scheme(other)?),
    };
    let bearer = authorization_scheme(scheme).is_some_and(|s| s.eq_ignore_ascii_case("bearer"));
    if bearer {
        if let Some(error) = error {
            value.push_str(&format!(", error=\"{error}\""));
        }
        if !scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
        }
    }
    Some(value)
}

/// `text` safe inside a quoted header parameter.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .filter(|c| !matches!(c, '"' | '\\'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol_types::security::{ApiKeySecurityScheme, HttpAuthSecurityScheme};

    fn parts(headers: &[(&str, &str)], uri: &str) -> http::request::Parts {
        let mut builder = http::Request::builder().uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    fn key(location: &str) -> SecurityScheme {
        SecurityScheme::ApiKey(ApiKeySecurityScheme {
            description: None,
            location: location.into(),
            name: "api_key".into(),
        })
    }

    fn bearer() -> SecurityScheme {
        SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            description: None,
            scheme: "bearer".into(),
            bearer_format: None,
        })
    }

    #[test]
    fn each_place_yields_its_credential() {
        let cred = |s: &str| Presented::Credential(s.into());
        assert_eq!(
            presented(&key("header"), &parts(&[("api_key", "k1")], "/")),
            cred("k1")
        );
        assert_eq!(
            presented(&key("query"), &parts(&[], "/?api_key=k%202")),
            cred("k 2")
        );
        assert_eq!(
            presented(
                &key("cookie"),
                &parts(&[("cookie", "a=b; api_key=k3")], "/")
            ),
            cred("k3")
        );
        assert_eq!(
            presented(&bearer(), &parts(&[("authorization", "Bearer t-1")], "/")),
            cred("t-1")
        );
        assert_eq!(
            presented(&bearer(), &parts(&[("authorization", "Basic dTpw")], "/")),
            Presented::Nothing
        );
        assert_eq!(
            presented(&key("header"), &parts(&[], "/")),
            Presented::Nothing
        );
    }

    #[test]
    fn two_different_credentials_are_refused() {
        let request = parts(&[("api_key", "k1"), ("api_key", "k2")], "/");
        assert_eq!(presented(&key("header"), &request), Presented::Ambiguous);
        let request = parts(&[], "/?api_key=k1&api_key=k2");
        assert_eq!(presented(&key("query"), &request), Presented::Ambiguous);
    }

    #[test]
    fn challenges_say_what_to_send() {
        assert_eq!(
            challenge(&key("header"), None, &[]).unwrap(),
            "ApiKey realm=\"a2a\", in=\"header\", name=\"api_key\""
        );
        assert_eq!(
            challenge(
                &bearer(),
                Some("insufficient_scope"),
                &["tasks:write".into()]
            )
            .unwrap(),
            "bearer realm=\"a2a\", error=\"insufficient_scope\", scope=\"tasks:write\""
        );
    }
}
