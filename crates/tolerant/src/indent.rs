//! Indentation: measuring it, checking that the caller's block and a block of
//! the file are indented alike up to the unit and the depth, and carrying
//! new_string's lines into the file's indentation.

/// Columns a tab counts for when indentation is measured. Only ratios of
/// indentation matter, so any width works as long as both sides use it.
const TAB_COLUMNS: usize = 4;

/// The leading spaces and tabs of `line`.
pub(crate) fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Width of an indentation in columns.
pub(crate) fn columns(indent: &str) -> usize {
    indent
        .bytes()
        .map(|b| if b == b'\t' { TAB_COLUMNS } else { 1 })
        .sum()
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The indentation unit of some lines, in columns: the most frequent step
/// from one non-blank line to a deeper next one. With it, whether the first
/// indented line starts with a tab.
pub(crate) fn unit_of<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<(usize, bool)> {
    let mut steps = [0usize; 17];
    let mut previous: Option<usize> = None;
    let mut tabs: Option<bool> = None;
    for line in lines {
        if is_blank(line) {
            continue;
        }
        let indent = indent_of(line);
        if tabs.is_none() && !indent.is_empty() {
            tabs = Some(indent.starts_with('\t'));
        }
        let width = columns(indent);
        if let Some(before) = previous
            && width > before
            && width - before < steps.len()
        {
            steps[width - before] += 1;
        }
        previous = Some(width);
    }
    let (unit, count) = steps
        .iter()
        .enumerate()
        .max_by_key(|&(step, count)| (*count, std::cmp::Reverse(step)))?;
    (*count > 0).then_some((unit, tabs.unwrap_or(false)))
}

/// How the caller's indentation maps onto the file's: the caller's base
/// depth becomes the file block's, and every further column of the caller's
/// becomes `num / den` columns of the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndentMap {
    old_base: usize,
    file_base: usize,
    num: usize,
    den: usize,
    tabs: bool,
    /// Caller's indent strings seen on matched lines and the file's for them,
    /// reused as they are so odd alignments survive byte for byte.
    pairs: Vec<(String, String)>,
    /// old_string had no indentation at all where the file has some: the
    /// caller's lines say nothing of depth, and each new line takes the
    /// depth of the file line it sits by.
    pub flat: bool,
    /// The depths did not scale by one ratio, only kept their order.
    uneven: bool,
}

impl IndentMap {
    /// The map, when the non-blank lines of `old` and `file` (as many of
    /// each) are indented alike up to a unit and a base depth. `new` and
    /// `file_unit` (the file's unit and whether it indents with tabs) are
    /// consulted only when old_string's lines are all at one depth.
    pub(crate) fn fit(
        old: &[&str],
        file: &[&str],
        new: &[&str],
        file_unit: impl FnOnce() -> Option<(usize, bool)>,
    ) -> Option<IndentMap> {
        let pairs: Vec<(&str, &str)> = old
            .iter()
            .zip(file)
            .filter(|(o, f)| !is_blank(o) && !is_blank(f))
            .map(|(o, f)| (indent_of(o), indent_of(f)))
            .collect();
        let old_base = pairs.iter().map(|(o, _)| columns(o)).min()?;
        let file_base = pairs.iter().map(|(_, f)| columns(f)).min()?;
        let relative: Vec<(usize, usize)> = pairs
            .iter()
            .map(|(o, f)| (columns(o) - old_base, columns(f) - file_base))
            .collect();
        let mut tabs = pairs.iter().any(|(_, f)| f.contains('\t'));
        let (num, den) = match relative.iter().find(|(o, _)| *o > 0) {
            Some(&(o, f)) => {
                if f == 0 {
                    return None;
                }
                let g = gcd(o, f);
                (f / g, o / g)
            }
            None if relative.iter().any(|&(_, f)| f > 0) => {
                // old_string was written without any indentation (every
                // line flush left) where the file's block has depths.
                if old_base == 0 && pairs.iter().all(|(o, _)| o.is_empty()) {
                    return Some(IndentMap {
                        old_base,
                        file_base,
                        num: 1,
                        den: 1,
                        tabs,
                        pairs: Vec::new(),
                        flat: true,
                        uneven: false,
                    });
                }
                return None;
            }
            None => {
                // One depth only: the units come from new_string and the file.
                let caller = unit_of(old.iter().chain(new).copied());
                let file = if file_base == 0 || !tabs {
                    file_unit()
                } else {
                    None
                };
                if file_base == 0
                    && let Some((_, file_tabs)) = file
                {
                    tabs = file_tabs;
                }
                match (caller, file) {
                    (Some((c, _)), Some((f, _))) => {
                        let g = gcd(c, f);
                        (f / g, c / g)
                    }
                    _ => (1, 1),
                }
            }
        };
        // The depths must keep their order (deeper stays deeper, equal stays
        // equal); they should scale by one ratio, and where they do not
        // each depth seen is mapped on its own.
        let uneven = relative.iter().any(|&(o, f)| f * den != o * num);
        if uneven {
            let keeps_order = relative
                .iter()
                .all(|&(o1, f1)| relative.iter().all(|&(o2, f2)| o1.cmp(&o2) == f1.cmp(&f2)));
            if !keeps_order {
                return None;
            }
        }
        let mut seen: Vec<(String, String)> = Vec::new();
        for (o, f) in pairs {
            if !seen.iter().any(|(so, _)| so == o) {
                seen.push((o.to_string(), f.to_string()));
            }
        }
        Some(IndentMap {
            old_base,
            file_base,
            num,
            den,
            tabs,
            pairs: seen,
            flat: false,
            uneven,
        })
    }

    /// The map that changes nothing.
    pub(crate) fn identity() -> IndentMap {
        IndentMap {
            old_base: 0,
            file_base: 0,
            num: 1,
            den: 1,
            tabs: false,
            pairs: Vec::new(),
            flat: false,
            uneven: false,
        }
    }

    /// True when every caller's indent is the file's already.
    pub(crate) fn is_identity(&self) -> bool {
        !self.flat
            && self.old_base == self.file_base
            && self.num == self.den
            && self.pairs.iter().all(|(o, f)| o == f)
    }

    /// `line` of new_string with its indentation in the file's terms.
    pub(crate) fn apply(&self, line: &str) -> String {
        if is_blank(line) || self.pairs.is_empty() {
            return line.to_string();
        }
        let indent = indent_of(line);
        let rest = &line[indent.len()..];
        if let Some((_, file)) = self.pairs.iter().find(|(o, _)| o == indent) {
            return format!("{file}{rest}");
        }
        let relative = columns(indent) as isize - self.old_base as isize;
        let scaled = (relative * self.num as isize).div_euclid(self.den as isize);
        let width = (self.file_base as isize + scaled).max(0) as usize;
        let mut out = if self.tabs {
            let mut out = "\t".repeat(width / TAB_COLUMNS);
            out.push_str(&" ".repeat(width % TAB_COLUMNS));
            out
        } else {
            " ".repeat(width)
        };
        out.push_str(rest);
        out
    }

    /// Says how the caller's indentation differed, when it did.
    pub(crate) fn describe(&self) -> Option<String> {
        if self.is_identity() {
            return None;
        }
        if self.flat {
            return Some(
                "old_string has no indentation where the file's lines are indented; new lines take the depth of the file's lines beside them".to_string(),
            );
        }
        let kind = |tabs: bool| if tabs { "tabs" } else { "spaces" };
        let caller_tabs = self.pairs.iter().any(|(o, _)| o.contains('\t'));
        let mut parts = Vec::new();
        if caller_tabs != self.tabs
            && self
                .pairs
                .iter()
                .any(|(o, f)| !o.is_empty() && !f.is_empty())
        {
            parts.push(format!(
                "old_string indents with {} where the file uses {}",
                kind(caller_tabs),
                kind(self.tabs)
            ));
        } else if self.uneven {
            parts.push(
                "old_string's depths differ from the file's (mapped depth by depth)".to_string(),
            );
        } else if self.num != self.den {
            parts.push(format!(
                "old_string's indentation steps are {}/{} of the file's",
                self.den, self.num
            ));
        }
        if self.old_base != self.file_base {
            parts.push(format!(
                "its base indentation is {} columns where the file's block has {}",
                self.old_base, self.file_base
            ));
        }
        if parts.is_empty() {
            parts.push("its indentation differs from the file's".to_string());
        }
        Some(parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(old: &[&str], file: &[&str], new: &[&str]) -> Option<IndentMap> {
        IndentMap::fit(old, file, new, || Some((4, false)))
    }

    #[test]
    fn two_spaces_onto_four() {
        let map = fit(&["if a:", "  b()"], &["    if a:", "        b()"], &[]).unwrap();
        assert_eq!(map.apply("if a:"), "    if a:");
        assert_eq!(map.apply("  c()"), "        c()");
        assert_eq!(map.apply("    d()"), "            d()");
        assert_eq!(map.apply(""), "");
    }

    #[test]
    fn spaces_onto_tabs_and_back() {
        let map = fit(
            &["    if a {", "        b();", "    }"],
            &["\tif a {", "\t\tb();", "\t}"],
            &[],
        )
        .unwrap();
        assert_eq!(map.apply("        c();"), "\t\tc();");
        assert_eq!(map.apply("            d();"), "\t\t\td();");
        let map = fit(&["\tx", "\t\ty"], &["  x", "    y"], &[]).unwrap();
        assert_eq!(map.apply("\t\t\tz"), "      z");
    }

    #[test]
    fn a_different_structure_does_not_fit() {
        assert!(fit(&["a", "  b"], &["a", "b"], &[]).is_none());
        // Deeper in the file where old_string is flat: only when old_string
        // has no indentation at all.
        assert!(fit(&["a", "b"], &["a", "  b"], &[]).is_some_and(|m| m.flat));
        assert!(fit(&["  a", "  b"], &["a", "  b"], &[]).is_none());
    }

    #[test]
    fn uneven_depths_map_one_by_one_and_flat_lines_are_recognised() {
        let map = fit(
            &["- a:", "  b:", "      c"],
            &["  - a:", "    b:", "      c"],
            &[],
        )
        .unwrap();
        assert_eq!(map.apply("      d"), "      d");
        assert_eq!(map.apply("  e:"), "    e:");
        assert!(fit(&["a", "  b", "    c"], &["a", "    b", "  c"], &[]).is_none());
        let map = fit(&["x = [", "1,", "2,"], &["x = [", "    1,", "    2,"], &[]).unwrap();
        assert!(map.flat);
    }

    #[test]
    fn one_depth_takes_units_from_new_and_file() {
        // The caller writes 2-space steps, the file uses 4.
        let map = fit(&["x = 1"], &["    x = 1"], &["if x:", "  y()"]).unwrap();
        assert_eq!(map.apply("if x:"), "    if x:");
        assert_eq!(map.apply("  y()"), "        y()");
    }

    #[test]
    fn units_are_measured() {
        assert_eq!(unit_of(["a", "  b", "    c", "  d"]), Some((2, false)));
        assert_eq!(unit_of(["a", "\tb"]), Some((4, true)));
        assert_eq!(unit_of(["a", "b"]), None);
    }
}
