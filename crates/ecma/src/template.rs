//! Replacement templates of regex edits: `\1`-`\9` and `$1`-`$9` insert a
//! capture group, `\0`, `$0` and `$&` the whole match, `$$` a dollar sign.
//! Everything else is literal (a `\` or `$` before any other character
//! stays as written). A group that exists but took no part in the match
//! inserts nothing, as in JavaScript.

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A group (0 = the whole match), with the reference as written.
    Group(usize, String),
}

/// A parsed replacement template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text`; never fails (what is not a reference is literal).
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let next = chars.peek().copied();
            let group = match (c, next) {
                ('$', Some('$')) => {
                    chars.next();
                    literal.push('$');
                    continue;
                }
                ('$', Some('&')) => Some((0, "$&".to_string())),
                ('$' | '\\', Some(d @ '0'..='9')) => {
                    Some((d as usize - '0' as usize, format!("{c}{d}")))
                }
                _ => None,
            };
            match group {
                Some((index, written)) => {
                    chars.next();
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Group(index, written));
                }
                None => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Template { parts }
    }

    /// Whether it inserts group `index` (0: the whole match).
    pub fn reads(&self, index: usize) -> bool {
        self.parts
            .iter()
            .any(|part| matches!(part, Part::Group(group, _) if *group == index))
    }

    /// The highest group referred to, with the reference as written.
    pub fn highest_group(&self) -> Option<(usize, &str)> {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Group(index, written) => Some((*index, written.as_str())),
                Part::Literal(_) => None,
            })
            .max_by_key(|(index, _)| *index)
    }

    /// Appends the template expanded for `found` (a match in `text`).
    pub fn expand_into(&self, found: &super::Found, text: &str, out: &mut String) {
        for part in &self.parts {
            match part {
                Part::Literal(literal) => out.push_str(literal),
                Part::Group(index, _) => {
                    if let Some(range) = found.group(*index) {
                        out.push_str(&text[range]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(pattern: &str, template: &str, text: &str) -> String {
        let regex = super::super::EcmaRegex::new(pattern, false).unwrap();
        let found = regex.regress_matches(text).remove(0);
        let mut out = String::new();
        Template::parse(template).expand_into(&found, text, &mut out);
        out
    }

    #[test]
    fn expands_both_reference_styles_and_the_whole_match() {
        assert_eq!(expand("(a)(b)", r"\2\1", "ab"), "ba");
        assert_eq!(expand("(a)(b)", "$2$1", "ab"), "ba");
        assert_eq!(expand("ab", r"[\0|$0|$&]", "ab"), "[ab|ab|ab]");
        assert_eq!(expand("a", "$$1 costs $$", "a"), "$1 costs $");
        assert_eq!(expand("(a)|(b)", "[$2]", "a"), "[]");
        assert_eq!(expand("a", r"\n $x \q $", "a"), r"\n $x \q $");
    }

    #[test]
    fn names_the_highest_group() {
        assert_eq!(
            Template::parse(r"\1 and $3").highest_group(),
            Some((3, "$3"))
        );
        assert_eq!(Template::parse("$$1").highest_group(), None);
        assert_eq!(Template::parse("$&").highest_group(), Some((0, "$&")));
    }
}
