//! Columns as editors show them (characters) and as LSP counts them by
//! default (UTF-16 code units).

/// The character column (from 0) of UTF-16 offset `utf16` in `line`; past
/// the end, the line's length.
pub fn utf16_to_char_column(line: &str, utf16: u32) -> u32 {
    let mut units = 0u32;
    let mut chars = 0u32;
    for c in line.chars() {
        if units >= utf16 {
            break;
        }
        units += c.len_utf16() as u32;
        chars += 1;
    }
    chars
}

/// The UTF-16 offset of character column `chars` (from 0) in `line`.
pub fn char_to_utf16_column(line: &str, chars: u32) -> u32 {
    line.chars()
        .take(chars as usize)
        .map(|c| c.len_utf16() as u32)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_both_ways() {
        let line = "a😀b é";
        assert_eq!(char_to_utf16_column(line, 2), 3);
        assert_eq!(utf16_to_char_column(line, 3), 2);
        assert_eq!(utf16_to_char_column(line, 0), 0);
        assert_eq!(utf16_to_char_column(line, 99), 5);
        assert_eq!(char_to_utf16_column(line, 99), 6);
    }
}
