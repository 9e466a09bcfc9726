//! The console: static pages (HTML, CSS and JavaScript modules, no build step) compiled into the
//! binary and served at `/console/`, with `/` sending a browser there.
//!
//! The files carry no data and need no key; everything the console shows comes from the `/v2`
//! API, which refuses any request without a valid API key. The pages render nothing but the
//! sign-in form until the tab holds a key (kept in `sessionStorage`, sent as
//! `Authorization: Bearer …`); a key the server refuses is forgotten and the sign-in form comes
//! back. So "nothing is served without the key" means: no agent, run, conversation or setting
//! leaves the server without one.
//!
//! ```
//! use harnessx_server::console::{ASSETS, router};
//! let app: axum::Router = router(); // merged into `harnessx_server::router`
//! assert_eq!(ASSETS[0].name, "index.html");
//! assert!(ASSETS[0].body.contains("/console/app.js"));
//! ```

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::error::ApiError;

/// Where the console lives.
pub const CONSOLE_PATH: &str = "/console/";

/// What the pages may load and call: only this server, no inline script or style, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// One embedded file: its name under `/console/`, its media type and its text.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The file name (`app.js`).
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its text.
    pub body: &'static str,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_str!(concat!("../console/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console, `index.html` first.
pub const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("signin.js", JS),
    asset!("agents.js", JS),
    asset!("agent.js", JS),
    asset!("conversations.js", JS),
    asset!("conversation.js", JS),
    asset!("run.js", JS),
    asset!("cards.js", JS),
    asset!("values.js", JS),
    asset!("markdown.js", JS),
    asset!("tools.js", JS),
    asset!("connectors.js", JS),
    asset!("knowledge.js", JS),
    asset!("webhooks.js", JS),
];

/// The console's routes: `/` and `/console` redirect to `/console/`, which serves the page;
/// `/console/{file}` serves the embedded files. Merged into the application by
/// [`router`](crate::router); needs no state and no key.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(to_console))
        .route("/console", get(to_console))
        .route("/console/", get(index))
        .route("/console/{file}", get(file))
}

async fn to_console() -> Redirect {
    Redirect::to(CONSOLE_PATH)
}

async fn index() -> Response {
    serve(&ASSETS[0])
}

async fn file(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(asset) => serve(asset),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "no_console_file",
            format!(
                "the console has no file `{}`; open {CONSOLE_PATH}",
                crate::api::extract::shorten(&name)
            ),
        )
        .into_response(),
    }
}

fn serve(asset: &Asset) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        asset.body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GETs `path` from the console's routes served on 127.0.0.1, without following redirects.
    async fn get(path: &str) -> (StatusCode, axum::http::HeaderMap, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app: Router = router();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let res = client
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap();
        // reqwest and axum share the `http` crate's types.
        let (status, headers) = (res.status(), res.headers().clone());
        let body = res.text().await.unwrap();
        server.abort();
        (status, headers, body)
    }

    #[tokio::test]
    async fn the_root_and_bare_path_redirect_to_the_console() {
        for path in ["/", "/console"] {
            let (status, headers, _) = get(path).await;
            assert!(status.is_redirection(), "{path}: {status}");
            assert_eq!(headers[header::LOCATION], CONSOLE_PATH, "{path}");
        }
    }

    #[tokio::test]
    async fn every_file_is_served_with_its_type_and_a_strict_policy() {
        let (status, headers, body) = get("/console/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert!(body.contains("<main id=\"main\""), "{body}");
        for asset in ASSETS {
            let (status, headers, body) = get(&format!("/console/{}", asset.name)).await;
            assert_eq!(status, StatusCode::OK, "{}", asset.name);
            assert_eq!(
                headers[header::CONTENT_TYPE],
                asset.content_type,
                "{}",
                asset.name
            );
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(body, asset.body, "{}", asset.name);
        }
    }

    #[tokio::test]
    async fn an_unknown_file_is_a_json_404_naming_it() {
        let (status, headers, body) = get("/console/secrets.txt").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["code"], "no_console_file");
        assert_eq!(
            v["error"]["message"],
            "the console has no file `secrets.txt`; open /console/"
        );
    }

    /// Every file a page loads or imports is embedded, and every embedded file is used: a file
    /// added to the folder but not to [`ASSETS`] (or the reverse) fails here, not in a browser.
    #[test]
    fn the_embedded_files_are_exactly_those_the_pages_reference() {
        let mut referenced = std::collections::BTreeSet::from(["index.html".to_owned()]);
        for asset in ASSETS {
            for pattern in ["\"/console/", "from \"./"] {
                for (at, _) in asset.body.match_indices(pattern) {
                    let rest = &asset.body[at + pattern.len()..];
                    let end = rest.find('"').unwrap();
                    referenced.insert(rest[..end].to_owned());
                }
            }
        }
        let embedded: std::collections::BTreeSet<String> =
            ASSETS.iter().map(|a| a.name.to_owned()).collect();
        assert_eq!(referenced, embedded);
        let on_disk: std::collections::BTreeSet<String> =
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/console"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        assert_eq!(on_disk, embedded, "every file in console/ is embedded");
    }

    /// Markup is never built from data: the pages set text, not HTML.
    #[test]
    fn no_page_writes_html_from_strings() {
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
            ] {
                assert!(
                    !asset.body.contains(sink),
                    "{} uses {sink}; build elements with h() instead",
                    asset.name
                );
            }
        }
    }
}
