//! Paths to `file:` URIs and back.

use std::path::{Path, PathBuf};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What stays as is in a path: RFC 3986's unreserved characters and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The `file:` URI of an absolute path.
pub fn path_to_uri(path: &Path) -> String {
    format!(
        "file://{}",
        utf8_percent_encode(&path.to_string_lossy(), PATH)
    )
}

/// The path a `file:` URI names (servers encode differently, so this
/// decodes whatever was escaped); `None` for other schemes.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: only the local host is ours.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let decoded = percent_decode_str(rest).decode_utf8().ok()?;
    Some(PathBuf::from(decoded.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_odd_names() {
        for path in ["/a/b.py", "/a b/c#d%e.py", "/é/ü.ts", "/x:y/[z].rs"] {
            let uri = path_to_uri(Path::new(path));
            assert!(uri.starts_with("file:///"), "{uri}");
            assert_eq!(uri_to_path(&uri).unwrap(), PathBuf::from(path), "{uri}");
        }
        assert_eq!(
            uri_to_path("file:///c%3A/x").unwrap(),
            PathBuf::from("/c:/x")
        );
        assert_eq!(uri_to_path("untitled:1"), None);
        assert_eq!(uri_to_path("file://elsewhere/x"), None);
    }
}
