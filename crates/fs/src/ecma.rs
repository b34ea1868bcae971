//! ECMAScript regular expressions for the file tools: the engine of
//! `agent-tools-ecma`, re-exported, and the content search that drives it
//! over the workspace's files (the walk, the index's candidates, ripgrep's
//! searcher).

mod search;

use agent_tools_error::{ErrorCode, ToolError};
use agent_tools_index::{Query, regex_query};

pub use agent_tools_ecma::*;
pub use search::{BINARY_PROBE_BYTES, EcmaSearch, FileLines, FoundLine, SearchFound};

/// The error a tool answers when matching stopped: cancelled, out of time,
/// or over the step budget. Here rather than in the engine, which knows
/// nothing of the tools' error envelope.
pub fn stop_error(stop: EcmaStop) -> ToolError {
    match stop {
        EcmaStop::Cancelled => crate::cancelled(),
        EcmaStop::CallTime { .. } => ToolError::new(ErrorCode::Timeout, stop.to_string()),
        EcmaStop::OverBudget { .. } => ToolError::new(ErrorCode::TooLarge, stop.to_string()),
    }
}

/// The workspace index's trigram query for `matcher`'s regex (see
/// [`EcmaMatcher::trigram_hir`]); every file passes when it gives none.
pub(crate) fn trigram_query(matcher: &EcmaMatcher) -> Query {
    matcher
        .trigram_hir()
        .map_or(Query::All, |hir| regex_query(&hir))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_trigram_query_keeps_to_ascii_literals_both_dialects_read_alike() {
        let query = |pattern: &str, ci: bool| {
            trigram_query(&EcmaMatcher::new(EcmaRegex::new(pattern, ci).unwrap()))
        };
        let rust = |pattern: &str| regex_query(&regex_syntax::parse(pattern).unwrap());
        // A plain literal narrows as the same literal would for grep; case
        // folding is the index's own (ASCII).
        assert_eq!(query("alpha", false), rust("alpha"));
        assert_eq!(query("ALPHA", true), rust("alpha"));
        // Read differently by the two dialects: no narrowing.
        assert_eq!(query(r"(a)\1alpha", false), Query::All);
        // A non-ASCII character is any character: "naïve" requires only the
        // trigrams of its ASCII runs around it, under either case mode.
        assert_eq!(query("naïveté", true), rust("na.vet."));
        assert_eq!(query("ïé", false), Query::All);
        assert_eq!(query("xnaïvety", false), rust("xna.vety"));
        // `\s` holds U+FEFF in ECMAScript only: widened, it requires nothing
        // across it.
        assert_eq!(query(r"abc\sdef", false), rust("abc.def"));
        // U+FFFD also stands for the invalid bytes of a line not in UTF-8.
        assert_eq!(query(r"abc\uFFFDdef", false), rust("abc.def"));
    }
}
