//! A browser's `User-Agent` as people read it: "Chrome on Linux", "Safari on iOS", or
//! "Unknown browser" for anything not recognised. Pure: the header is whatever the client chose
//! to say, so this only names what it claims.

/// "<browser> on <system>", "<browser>" when the system is not recognised, "Unknown browser"
/// when the browser is not.
pub fn describe(user_agent: Option<&str>) -> String {
    let Some(ua) = user_agent.map(str::trim).filter(|u| !u.is_empty()) else {
        return "Unknown browser".to_owned();
    };
    match (browser(ua), system(ua)) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_owned(),
        (None, _) => "Unknown browser".to_owned(),
    }
}

/// The browser, by the token that names it; the order matters, as most claim to be others too
/// (Edge and Opera say "Chrome", Chrome says "Safari").
fn browser(ua: &str) -> Option<&'static str> {
    let has = |token: &str| ua.contains(token);
    Some(if has("Edg/") || has("EdgA/") || has("EdgiOS/") {
        "Edge"
    } else if has("OPR/") || has("Opera") {
        "Opera"
    } else if has("SamsungBrowser/") {
        "Samsung Internet"
    } else if has("Firefox/") || has("FxiOS/") {
        "Firefox"
    } else if has("HeadlessChrome/") || has("Chrome/") || has("CriOS/") || has("Chromium/") {
        "Chrome"
    } else if has("Safari/") && has("Version/") {
        "Safari"
    } else if has("curl/") {
        "curl"
    } else {
        return None;
    })
}

/// The operating system, by the token that names it (Android before Linux, iOS before macOS).
fn system(ua: &str) -> Option<&'static str> {
    let has = |token: &str| ua.contains(token);
    Some(if has("Android") {
        "Android"
    } else if has("iPhone") || has("iPad") || has("iPod") {
        "iOS"
    } else if has("Windows") {
        "Windows"
    } else if has("Mac OS X") || has("Macintosh") {
        "macOS"
    } else if has("CrOS") {
        "ChromeOS"
    } else if has("Linux") || has("X11") {
        "Linux"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn common_browsers_are_named_with_their_system() {
        for (ua, said) in [
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
                "Chrome on Linux",
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
                "Chrome on Linux",
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0",
                "Edge on Windows",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
                "Safari on macOS",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
                "Safari on iOS",
            ),
            (
                "Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0",
                "Firefox on Android",
            ),
            ("curl/8.4.0", "curl"),
        ] {
            assert_eq!(describe(Some(ua)), said, "{ua}");
        }
    }

    #[test]
    fn anything_else_is_an_unknown_browser() {
        assert_eq!(describe(None), "Unknown browser");
        assert_eq!(describe(Some("  ")), "Unknown browser");
        assert_eq!(describe(Some("my-script/1.0")), "Unknown browser");
        assert_eq!(describe(Some("\u{202e}Linux")), "Unknown browser");
    }
}
