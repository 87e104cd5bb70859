//! The page itself, built into the binary: one HTML file, one style sheet and one plain
//! JavaScript file (no build step, no Node), served from memory.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::WebState;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/style.css");
/// Where the page's HTML takes the token its script sends with every POST.
const TOKEN_SLOT: &str = "{{TOKEN}}";

/// Nothing but this page's own files: no inline script, no other origin, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                       frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

pub async fn index(State(st): State<Arc<WebState>>) -> Response {
    let html = INDEX.replace(TOKEN_SLOT, st.guard.token());
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

pub async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT).into_response()
}

pub async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_one_token_slot_and_only_its_own_files() {
        assert_eq!(INDEX.matches(TOKEN_SLOT).count(), 1);
        assert!(INDEX.contains("src=\"/app.js\"") && INDEX.contains("href=\"/style.css\""));
        // The CSP forbids inline code: the page must have none.
        assert!(!INDEX.contains("<script>") && !INDEX.contains("style=\"") && !INDEX.contains("onclick"));
        assert!(!SCRIPT.contains("innerHTML"), "text from VMs goes in as text, never as HTML");
    }
}
