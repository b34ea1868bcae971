//! Paging of result lists, shared by grep, glob and list_dir: one place for
//! how a page is cut and for the footer's wording.

/// Room kept at the end of the output budget for footers and notes, so the
/// dispatcher's final cut never removes them.
pub(crate) const FOOTER_ROOM: usize = 400;

/// Where a page stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageEnd {
    /// One past the last result shown (0-based), i.e. the `offset` that
    /// continues.
    pub shown_end: u64,
    /// The output budget, not the limit, stopped the page.
    pub budget_hit: bool,
}

/// The end of the requested page: `offset + limit`, or everything.
pub(crate) fn requested_end(offset: u64, limit: Option<u64>, total: u64) -> u64 {
    limit.map_or(total, |limit| offset.saturating_add(limit).min(total))
}

/// Appends the results `offset..` of `lines` (each one result, ending in a
/// newline) to `out`, up to `limit` and the output budget. The first result
/// of the page is always shown, however long.
pub(crate) fn page_lines<'a>(
    out: &mut String,
    lines: impl IntoIterator<Item = &'a str>,
    total: u64,
    offset: u64,
    limit: Option<u64>,
    max_output_bytes: usize,
) -> PageEnd {
    let end = requested_end(offset, limit, total);
    let budget = max_output_bytes.saturating_sub(FOOTER_ROOM);
    let mut page = PageEnd {
        shown_end: offset.min(total),
        budget_hit: false,
    };
    let start = out.len();
    let wanted = usize::try_from(end.saturating_sub(offset)).unwrap_or(usize::MAX);
    let skip = usize::try_from(offset).unwrap_or(usize::MAX);
    for line in lines.into_iter().skip(skip).take(wanted) {
        if out.len() - start + line.len() > budget && page.shown_end > offset {
            page.budget_hit = true;
            break;
        }
        out.push_str(line);
        page.shown_end += 1;
    }
    page
}

/// The footer after a page of `total` results starting at `offset`, or
/// nothing when the page holds every result (and `total` is not 0).
pub(crate) fn footer(total: u64, offset: u64, page: PageEnd) -> String {
    if total > 0 && offset >= total {
        format!("[offset {offset} is past the end of {total} results; page from offset=0]\n")
    } else if page.shown_end < total {
        let why = if page.budget_hit {
            "output limit reached; "
        } else {
            ""
        };
        format!(
            "[{why}showing {}..{} of {total}; call again with offset={} for more]\n",
            offset + 1,
            page.shown_end,
            page.shown_end
        )
    } else {
        String::new()
    }
}

/// A `limit` of 0 is refused: omitting it means "all".
pub(crate) fn check_limit(limit: Option<u64>) -> agent_tools_error::ToolResult<()> {
    if limit == Some(0) {
        return Err(agent_tools_error::ToolError::invalid_input(
            "limit must be at least 1; omit it for all results",
        ));
    }
    Ok(())
}
