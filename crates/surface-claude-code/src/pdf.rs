//! PDFs for `Read`: the text of their pages, extracted with lopdf.

use agent_tools::{Content, ErrorCode, Reply, ToolResult};

use crate::messages::{self, thrown};

/// The most pages one call reads.
pub(crate) const MAX_PAGES_PER_CALL: u32 = 20;

/// The most pages a PDF may have to be read without `pages`.
pub(crate) const MAX_PAGES_WITHOUT_RANGE: usize = 10;

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

/// The text of the PDF's pages: all of them (when there are at most ten),
/// or those `pages` names.
pub(crate) fn read_pdf(bytes: &[u8], raw: &str, pages: Option<&str>) -> ToolResult<Reply> {
    let range = pages.map(parse_pages).transpose()?;
    let unreadable = |why: String| thrown(ErrorCode::IsBinary, messages::pdf_unreadable(raw, &why));
    let document = lopdf::Document::load_mem(bytes).map_err(|err| unreadable(err.to_string()))?;
    let numbers: Vec<u32> = document.get_pages().keys().copied().collect();
    let count = numbers.len();
    let size = bytes.len() as u64;
    let (chosen, heading): (Vec<u32>, String) = match (range, pages) {
        (Some(range), Some(pages)) => {
            if range.first as usize > count {
                return Err(thrown(
                    ErrorCode::InvalidInput,
                    messages::pdf_page_missing(pages, count),
                ));
            }
            let chosen: Vec<u32> = numbers
                .iter()
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
            (numbers, messages::pdf_read(raw, size))
        }
    };
    let mut out = heading;
    for number in chosen {
        let text = document
            .extract_text(&[number])
            .map_err(|err| unreadable(err.to_string()))?;
        out.push_str(&format!("\n\n--- Page {number} ---\n"));
        let text = text.trim();
        if text.is_empty() {
            out.push_str(messages::PDF_NO_TEXT);
        } else {
            out.push_str(text);
        }
    }
    Ok(Reply::items(vec![Content::Text(out)]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use lopdf::content::{Content as PageContent, Operation};
    use lopdf::{Document, Object, Stream, dictionary};

    /// A PDF of one page per entry: the text drawn on it, or nothing (a
    /// page without a text layer).
    pub(crate) fn make_pdf(pages: &[Option<&str>]) -> Vec<u8> {
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
        for text in pages {
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
            let content = PageContent { operations };
            let content_id = doc.add_object(Stream::new(
                dictionary! {},
                content.encode().unwrap_or_default(),
            ));
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
        doc.save_to(&mut bytes).unwrap();
        bytes
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
