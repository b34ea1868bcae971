//! PDFs for `Read`: the text of their pages, extracted with lopdf, within
//! budgets of memory and time.
//!
//! A PDF is small on disk and can be huge once read: compressed streams
//! inflate a thousandfold, and lopdf parses a page's content into
//! operations that take tens of times the decoded bytes. So every step
//! that decodes is bounded: each stream decoded while loading
//! ([`LOAD_STREAM_BYTES`]) and all object streams together
//! ([`LOAD_BUDGET_BYTES`]); each page's content ([`PAGE_CONTENT_BYTES`],
//! a page over it is named as not read) and the pages of one call together
//! ([`CALL_CONTENT_BYTES`], the pages past it named as not read). The
//! decoded bytes bound the time as well as the memory; the cancel flag is
//! looked at between pages.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use lopdf::{DecompressError, Document, LoadOptions, Object, ObjectId};

use agent_tools::{Content, ErrorCode, Reply, ToolError, ToolResult};

use crate::messages::{self, thrown};

/// The most pages one call reads.
pub(crate) const MAX_PAGES_PER_CALL: u32 = 20;

/// The most pages a PDF may have to be read without `pages`.
pub(crate) const MAX_PAGES_WITHOUT_RANGE: usize = 10;

/// The most bytes one stream may decode to while the document is loaded.
pub(crate) const LOAD_STREAM_BYTES: usize = 8 * 1024 * 1024;

/// The most bytes all object streams of a document may decode to
/// together: their objects stay in memory while the document is read.
pub(crate) const LOAD_BUDGET_BYTES: usize = 32 * 1024 * 1024;

/// The most bytes one page's content may decode to for its text to be
/// read. Parsed, a page's content takes about a hundred times its decoded
/// size (a page of 1 MiB peaked a process at 117 MB), so this keeps a page
/// near 60 MB; real pages of text hold tens of kilobytes.
pub(crate) const PAGE_CONTENT_BYTES: usize = 512 * 1024;

/// The most bytes the content of all pages one call reads may decode to.
pub(crate) const CALL_CONTENT_BYTES: usize = 8 * 1024 * 1024;

/// A page range, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageRange {
    pub first: u32,
    pub last: u32,
}

/// `"3"` or `"1-5"` (spaces around the parts allowed).
pub(crate) fn parse_pages(pages: &str) -> ToolResult<PageRange> {
    let bad = || thrown(ErrorCode::InvalidInput, messages::bad_pages(pages));
    let number = |part: &str| -> ToolResult<u32> {
        let part = part.trim();
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match part.parse::<u32>() {
            Ok(0) | Err(_) => Err(bad()),
            Ok(n) => Ok(n),
        }
    };
    let range = match pages.split_once('-') {
        Some((first, last)) => PageRange {
            first: number(first)?,
            last: number(last)?,
        },
        None => {
            let page = number(pages)?;
            PageRange {
                first: page,
                last: page,
            }
        }
    };
    if range.last < range.first {
        return Err(bad());
    }
    if range.last - range.first + 1 > MAX_PAGES_PER_CALL {
        return Err(thrown(
            ErrorCode::InvalidInput,
            messages::too_many_pages(pages),
        ));
    }
    Ok(range)
}

/// The budgets one read keeps to (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budgets {
    pub load_stream: usize,
    pub load_total: usize,
    pub page: usize,
    pub call: usize,
}

impl Budgets {
    /// The budgets of a Read.
    pub(crate) const READ: Budgets = Budgets {
        load_stream: LOAD_STREAM_BYTES,
        load_total: LOAD_BUDGET_BYTES,
        page: PAGE_CONTENT_BYTES,
        call: CALL_CONTENT_BYTES,
    };
}

thread_local! {
    /// What is left of the load budget while a document loads on this
    /// thread (lopdf's loading filter is a plain function, and lopdf loads
    /// on the calling thread: its parallel loading is not built); none
    /// once the budget was exceeded.
    static LOAD_LEFT: Cell<Option<usize>> = const { Cell::new(None) };
    /// The most one object stream may decode to, for the filter.
    static LOAD_STREAM: Cell<usize> = const { Cell::new(LOAD_STREAM_BYTES) };
}

/// lopdf's loading filter: charges each object stream's decoded size to
/// the load budget, and drops the streams past it (the load then fails as
/// too large). Other objects pass unchanged.
fn charge_object_streams(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Ok(stream) = object.as_stream()
        && stream.dict.has_type(b"ObjStm")
    {
        let left = LOAD_LEFT.with(Cell::get)?;
        match stream.decompressed_content_with_limit(left.min(LOAD_STREAM.with(Cell::get))) {
            Ok(decoded) => LOAD_LEFT.with(|cell| cell.set(Some(left - decoded.len().min(left)))),
            Err(lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. })) => {
                LOAD_LEFT.with(|cell| cell.set(None));
                return None;
            }
            // lopdf reports (or skips) a stream it cannot decode itself.
            Err(_) => {}
        }
    }
    // The loader keeps the object it passed in for objects read from the
    // file, and the one returned for objects of object streams.
    Some((id, object.clone()))
}

/// Loads `bytes` within the load budgets; `Ok(None)` when they are
/// exceeded.
fn load(bytes: &[u8], budgets: Budgets) -> lopdf::Result<Option<Document>> {
    LOAD_LEFT.with(|cell| cell.set(Some(budgets.load_total)));
    LOAD_STREAM.with(|cell| cell.set(budgets.load_stream));
    let options = LoadOptions {
        max_decompressed_size: Some(budgets.load_stream),
        filter: Some(charge_object_streams),
        ..LoadOptions::default()
    };
    let loaded = Document::load_mem_with_options(bytes, options);
    let within = LOAD_LEFT.with(Cell::take).is_some();
    match loaded {
        Err(lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. })) => Ok(None),
        Ok(_) if !within => Ok(None),
        other => other.map(Some),
    }
}

/// How one page went.
enum PageText {
    Read(String),
    /// Its content decodes to more than [`PAGE_CONTENT_BYTES`].
    OverPageBudget,
    /// The call's budget was spent before it.
    OverCallBudget,
}

/// The text of the PDF's pages: all of them (when there are at most ten),
/// or those `pages` names. At most `max_output` bytes of text; a call
/// cancelled meanwhile stops between pages.
pub(crate) fn read_pdf(
    bytes: &[u8],
    raw: &str,
    pages: Option<&str>,
    cancel: &AtomicBool,
    max_output: usize,
) -> ToolResult<Reply> {
    read_pdf_within(bytes, raw, pages, cancel, max_output, Budgets::READ)
}

/// [`read_pdf`] within `budgets`.
pub(crate) fn read_pdf_within(
    bytes: &[u8],
    raw: &str,
    pages: Option<&str>,
    cancel: &AtomicBool,
    max_output: usize,
    budgets: Budgets,
) -> ToolResult<Reply> {
    let range = pages.map(parse_pages).transpose()?;
    let unreadable = |why: String| thrown(ErrorCode::IsBinary, messages::pdf_unreadable(raw, &why));
    let size = bytes.len() as u64;
    let document = load(bytes, budgets)
        .map_err(|err| unreadable(err.to_string()))?
        .ok_or_else(|| {
            thrown(
                ErrorCode::TooLarge,
                messages::pdf_over_load_budget(raw, size, budgets.load_total as u64),
            )
        })?;
    let page_ids = document.get_pages();
    let count = page_ids.len();
    let (chosen, heading): (Vec<u32>, String) = match (range, pages) {
        (Some(range), Some(pages)) => {
            if range.first as usize > count {
                return Err(thrown(
                    ErrorCode::InvalidInput,
                    messages::pdf_page_missing(pages, count),
                ));
            }
            let chosen: Vec<u32> = page_ids
                .keys()
                .copied()
                .filter(|n| (range.first..=range.last).contains(n))
                .collect();
            let heading = messages::pdf_pages_read(chosen.len(), raw, size);
            (chosen, heading)
        }
        _ => {
            if count > MAX_PAGES_WITHOUT_RANGE {
                return Err(thrown(ErrorCode::TooLarge, messages::pdf_too_long(count)));
            }
            (
                page_ids.keys().copied().collect(),
                messages::pdf_read(raw, size),
            )
        }
    };
    let mut out = heading;
    let mut call_left = budgets.call;
    for number in chosen {
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        let page = match page_ids.get(&number) {
            Some(&id) => page_text(&document, number, id, budgets.page, &mut call_left)
                .map_err(|err| unreadable(err.to_string()))?,
            None => continue,
        };
        out.push_str(&format!("\n\n--- Page {number} ---\n"));
        match page {
            PageText::Read(text) if text.trim().is_empty() => out.push_str(messages::PDF_NO_TEXT),
            PageText::Read(text) => out.push_str(text.trim()),
            PageText::OverPageBudget => {
                out.push_str(&messages::pdf_page_over_budget(budgets.page as u64));
            }
            PageText::OverCallBudget => {
                out.push_str(&messages::pdf_call_over_budget(budgets.call as u64));
            }
        }
        if out.len() > max_output {
            let keep = agent_tools_text::truncate_utf8(&out, max_output.saturating_sub(200)).len();
            out.truncate(keep);
            out.push_str(&messages::pdf_output_cut(number));
            break;
        }
    }
    Ok(Reply::items(vec![Content::Text(out)]))
}

/// The text of page `number`, within the page's budget and what is left
/// of the call's (which the page's decoded content is charged to).
fn page_text(
    document: &Document,
    number: u32,
    id: ObjectId,
    page_budget: usize,
    call_left: &mut usize,
) -> lopdf::Result<PageText> {
    let over = |err: &lopdf::Error| {
        matches!(
            err,
            lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. })
        )
    };
    if *call_left == 0 {
        return Ok(PageText::OverCallBudget);
    }
    // Decoded once to learn its size (bounded), before lopdf parses it.
    let limit = page_budget.min(*call_left);
    let decoded = match document.get_page_content_with_limit(id, limit) {
        Ok(content) => content.len(),
        Err(err) if over(&err) && limit < page_budget => {
            *call_left = 0;
            return Ok(PageText::OverCallBudget);
        }
        Err(err) if over(&err) => return Ok(PageText::OverPageBudget),
        Err(err) => return Err(err),
    };
    *call_left = call_left.saturating_sub(decoded);
    match document.extract_text_with_limit(&[number], page_budget) {
        Ok(text) => Ok(PageText::Read(text)),
        // A font's character map over the budget, say.
        Err(err) if over(&err) => Ok(PageText::OverPageBudget),
        Err(err) => Err(err),
    }
}

/// The error of a read stopped because its call was cancelled.
fn cancelled() -> ToolError {
    ToolError::cancelled("call cancelled")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use lopdf::content::{Content as PageContent, Operation};
    use lopdf::{Document, Object, Stream, dictionary};

    /// [`super::read_pdf`] of a call never cancelled, with the default
    /// output budget.
    fn read_pdf(bytes: &[u8], raw: &str, pages: Option<&str>) -> ToolResult<Reply> {
        super::read_pdf(bytes, raw, pages, &AtomicBool::new(false), 256 * 1024)
    }

    /// A PDF of one page per entry: the text drawn on it, or nothing (a
    /// page without a text layer).
    pub(crate) fn make_pdf(pages: &[Option<&str>]) -> Vec<u8> {
        let contents: Vec<Vec<u8>> = pages
            .iter()
            .map(|text| {
                let operations = match text {
                    Some(text) => vec![
                        Operation::new("BT", vec![]),
                        Operation::new("Tf", vec!["F1".into(), 24.into()]),
                        Operation::new("Td", vec![100.into(), 600.into()]),
                        Operation::new("Tj", vec![Object::string_literal(*text)]),
                        Operation::new("ET", vec![]),
                    ],
                    None => vec![
                        Operation::new("re", vec![10.into(), 10.into(), 50.into(), 50.into()]),
                        Operation::new("f", vec![]),
                    ],
                };
                PageContent { operations }.encode().unwrap_or_default()
            })
            .collect();
        make_pdf_of(&contents, false)
    }

    /// A PDF of one page per content stream given (compressed), its
    /// objects in object streams when `packed`.
    pub(crate) fn make_pdf_of(contents: &[Vec<u8>], packed: bool) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font",
            "Subtype" => "Type1",
            "BaseFont" => "Courier",
        });
        let resources_id = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font_id },
        });
        let mut kids = Vec::new();
        for content in contents {
            let mut stream = Stream::new(dictionary! {}, content.clone());
            stream.compress().unwrap();
            let content_id = doc.add_object(stream);
            let page_id = doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
            });
            kids.push(page_id.into());
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => kids,
                "Count" => count,
                "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            }),
        );
        let catalog_id = doc.add_object(dictionary! {
            "Type" => "Catalog",
            "Pages" => pages_id,
        });
        doc.trailer.set("Root", catalog_id);
        let mut bytes = Vec::new();
        if packed {
            doc.save_modern(&mut bytes).unwrap();
        } else {
            doc.save_to(&mut bytes).unwrap();
        }
        bytes
    }

    /// The review's page: text drawn `count` times, 7 bytes a time.
    fn many_tj(count: usize) -> Vec<u8> {
        let mut raw = b"BT /F1 1 Tf ".to_vec();
        for _ in 0..count {
            raw.extend_from_slice(b"(A) Tj\n");
        }
        raw.extend_from_slice(b"ET");
        raw
    }

    /// The review's PDF: 21 MB of content compressed to some 30 KB. Parsed
    /// whole, it took 1.8 GB and 2 s.
    fn bomb() -> Vec<u8> {
        make_pdf_of(&[many_tj(3_000_000), many_tj(2)], false)
    }

    #[test]
    fn a_page_whose_content_inflates_past_its_budget_is_named_not_read() {
        let bytes = bomb();
        assert!(bytes.len() < 100_000, "{}", bytes.len());
        let started = std::time::Instant::now();
        let reply = read_pdf(&bytes, "/w/bomb.pdf", None).unwrap();
        let text = reply.content[0].as_text().unwrap();
        assert!(
            text.contains(&format!(
                "--- Page 1 ---\n{}",
                messages::pdf_page_over_budget(PAGE_CONTENT_BYTES as u64)
            )),
            "{text}"
        );
        assert!(text.contains("--- Page 2 ---\nAA"), "{text}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    /// Measured in a child (see [`crate::peak`]): reads the review's PDF
    /// and a page just under the page budget (7 bytes a drawing).
    #[test]
    fn pdf_reads_for_measuring() {
        if !crate::peak::measuring("pdf::tests::pdf_reads_for_measuring") {
            return;
        }
        let bomb = bomb();
        let full = make_pdf_of(&[many_tj(PAGE_CONTENT_BYTES / 7 - 10)], false);
        crate::peak::start();
        assert!(read_pdf(&bomb, "/w/bomb.pdf", None).is_ok());
        let text = read_pdf(&full, "/w/full.pdf", None).unwrap().content[0]
            .as_text()
            .unwrap()
            .to_owned();
        assert!(text.contains("--- Page 1 ---\nAAAA"), "{}", &text[..200]);
        crate::peak::report();
    }

    #[test]
    fn pdf_reads_stay_within_their_memory_budget() {
        let peak = crate::peak::peak_of_test("pdf::tests::pdf_reads_for_measuring");
        assert!(peak < 128 << 20, "peak resident set {peak} bytes");
    }

    #[test]
    fn the_pages_past_the_calls_budget_are_named_not_read() {
        let budgets = Budgets {
            page: 64 * 1024,
            call: 100 * 1024,
            ..Budgets::READ
        };
        // 7 bytes a drawing: three pages of some 35 KB each.
        let bytes = make_pdf_of(&[many_tj(5000), many_tj(5000), many_tj(5000)], false);
        let never = AtomicBool::new(false);
        let reply = read_pdf_within(&bytes, "/w/p.pdf", None, &never, 1 << 20, budgets).unwrap();
        let text = reply.content[0].as_text().unwrap();
        let note = messages::pdf_call_over_budget(budgets.call as u64);
        assert!(text.contains(&format!("--- Page 3 ---\n{note}")), "{text}");
        assert!(!text.contains(&format!("--- Page 2 ---\n{note}")), "{text}");
        // The answer is cut at its own budget, saying where.
        let reply = read_pdf_within(&bytes, "/w/p.pdf", None, &never, 1000, budgets).unwrap();
        let text = reply.content[0].as_text().unwrap();
        assert!(text.len() <= 1000, "{}", text.len());
        assert!(text.ends_with(&messages::pdf_output_cut(1)), "{text}");
    }

    #[test]
    fn object_streams_past_the_load_budget_make_the_pdf_too_large() {
        let pages: Vec<Vec<u8>> = (0..40).map(|_| many_tj(2)).collect();
        let bytes = make_pdf_of(&pages, true);
        let never = AtomicBool::new(false);
        assert!(
            read_pdf_within(
                &bytes,
                "/w/o.pdf",
                Some("1"),
                &never,
                1 << 20,
                Budgets::READ
            )
            .is_ok()
        );
        let budgets = Budgets {
            load_total: 1000,
            ..Budgets::READ
        };
        let err =
            read_pdf_within(&bytes, "/w/o.pdf", Some("1"), &never, 1 << 20, budgets).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TooLarge);
        assert!(
            err.message().contains("over the limit of one read"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn a_cancelled_read_stops_between_pages() {
        let bytes = make_pdf(&[Some("one"), Some("two")]);
        let cancelled = AtomicBool::new(true);
        let err = super::read_pdf(&bytes, "/w/c.pdf", None, &cancelled, 1 << 20).unwrap_err();
        assert!(err.is_cancelled(), "{err:?}");
    }

    #[test]
    fn page_ranges_parse_and_bad_ones_get_claude_codes_words() {
        assert_eq!(parse_pages("3").unwrap(), PageRange { first: 3, last: 3 });
        assert_eq!(
            parse_pages(" 1 - 5 ").unwrap(),
            PageRange { first: 1, last: 5 }
        );
        for bad in ["", "0", "a", "5-1", "1-", "-3", "1-2-3", "1.5"] {
            assert_eq!(
                parse_pages(bad).unwrap_err().message(),
                format!(
                    "Invalid pages parameter: \"{bad}\". Use formats like \"1-5\", \"3\", or \"10-20\". Pages are 1-indexed."
                ),
                "{bad}"
            );
        }
        assert_eq!(
            parse_pages("1-21").unwrap_err().message(),
            "Page range \"1-21\" exceeds maximum of 20 pages per request. Please use a smaller range."
        );
        assert!(parse_pages("1-20").is_ok());
    }

    #[test]
    fn pages_come_back_as_text_and_a_page_without_text_says_so() {
        let bytes = make_pdf(&[Some("Hello PDF"), None]);
        let reply = read_pdf(&bytes, "/w/doc.pdf", None).unwrap();
        let text = reply.content[0].as_text().unwrap().to_owned();
        assert!(
            text.starts_with(&format!(
                "PDF file read: /w/doc.pdf ({})",
                crate::format_size(bytes.len() as u64)
            )),
            "{text}"
        );
        assert!(text.contains("--- Page 1 ---\nHello PDF"), "{text}");
        assert!(
            text.contains(&format!("--- Page 2 ---\n{}", messages::PDF_NO_TEXT)),
            "{text}"
        );
        let reply = read_pdf(&bytes, "/w/doc.pdf", Some("2")).unwrap();
        let text = reply.content[0].as_text().unwrap();
        assert!(
            text.starts_with("PDF pages extracted: 1 page(s) from /w/doc.pdf ("),
            "{text}"
        );
        assert!(!text.contains("Hello"), "{text}");
        assert_eq!(
            read_pdf(&bytes, "/w/doc.pdf", Some("5-6"))
                .unwrap_err()
                .message(),
            "Page range \"5-6\" is past the end of the document, which has 2 pages."
        );
    }

    #[test]
    fn a_long_pdf_needs_pages_and_garbage_is_refused() {
        let many: Vec<Option<&str>> = (0..11).map(|_| Some("x")).collect();
        let bytes = make_pdf(&many);
        assert_eq!(
            read_pdf(&bytes, "/w/long.pdf", None).unwrap_err().message(),
            "This PDF has 11 pages, which is too many to read at once. Use the pages parameter to read specific page ranges (e.g., pages: \"1-5\"). Maximum 20 pages per request."
        );
        assert!(read_pdf(&bytes, "/w/long.pdf", Some("10-11")).is_ok());
        let err = read_pdf(b"not a pdf", "/w/x.pdf", None).unwrap_err();
        assert!(
            err.message()
                .starts_with("/w/x.pdf could not be read as a PDF: "),
            "{}",
            err.message()
        );
    }
}
