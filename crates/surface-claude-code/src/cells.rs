//! Reading a notebook's cells as they are parsed, without its JSON tree.
//!
//! A notebook parsed into a `serde_json::Value` takes some twenty times its
//! size (a 16 MiB file of empty cells took more than 1 GB with the copies
//! made to render it). Here the JSON is walked with visitors that keep
//! only what Read shows: the notebook's language, and one cell at a time
//! (its id, type, source and the outputs shown), rendered at once; a cell
//! past the answer's budget is counted, not kept. Strings are held at most
//! once, so memory stays within the file's size plus the answer's.
//!
//! Like Jupyter, the reading is lenient: a value of another shape than
//! expected (a number for a source, a string for a cell) reads as absent.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What is read from a JSON object; any other value reads as `Out::default()`.
trait OnMap<'de> {
    type Out: Default;
    fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error>;
}

/// Reads a value with `M` when it is an object, skips it otherwise.
struct Lenient<M>(M);

impl<'de, M: OnMap<'de>> DeserializeSeed<'de> for Lenient<M> {
    type Value = M::Out;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<M::Out, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, M: OnMap<'de>> Visitor<'de> for Lenient<M> {
    type Value = M::Out;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<M::Out, A::Error> {
        self.0.map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<M::Out, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(M::Out::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<M::Out, E> {
        Ok(M::Out::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<M::Out, E> {
        Ok(M::Out::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<M::Out, E> {
        Ok(M::Out::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<M::Out, E> {
        Ok(M::Out::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<M::Out, E> {
        Ok(M::Out::default())
    }

    fn visit_unit<E>(self) -> Result<M::Out, E> {
        Ok(M::Out::default())
    }
}

/// A string value; anything else reads as `None`.
struct Str;

impl<'de> DeserializeSeed<'de> for Str {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer
            .deserialize_any(Text { joined: false })
            .map(|text| text.1.then_some(text.0))
    }
}

/// A text: a string, or (when `joined`) a list whose strings are joined,
/// as Jupyter writes multi-line text. Anything else reads as empty. The
/// flag says whether the value had the text's shape.
struct Text {
    joined: bool,
}

impl<'de> DeserializeSeed<'de> for Text {
    type Value = (String, bool);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = (String, bool);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or a list of strings")
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok((text.to_owned(), true))
    }

    fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
        Ok((text, true))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut joined = String::new();
        while let Some(part) = seq.next_element_seed(Text { joined: false })? {
            if self.joined {
                joined.push_str(&part.0);
            }
        }
        Ok((joined, self.joined))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((String::new(), false))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok((String::new(), false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok((String::new(), false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok((String::new(), false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok((String::new(), false))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((String::new(), false))
    }
}

/// Reads the next value of `map` as a joined text.
fn joined_text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<String, A::Error> {
    Ok(map.next_value_seed(Text { joined: true })?.0)
}

/// The value of key `wanted` of an object, when it is a string.
struct StrAt(&'static str);

impl<'de> OnMap<'de> for StrAt {
    type Out = Option<String>;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.0 {
                found = map.next_value_seed(Str)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The notebook's language from its `metadata`: `language_info.name`, else
/// `kernelspec.language`.
struct Language;

impl<'de> OnMap<'de> for Language {
    type Out = Option<String>;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let (mut info, mut kernel) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "language_info" => info = map.next_value_seed(Lenient(StrAt("name")))?,
                "kernelspec" => kernel = map.next_value_seed(Lenient(StrAt("language")))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(info.or(kernel))
    }
}

/// The root object, for its language (the cells are skipped).
struct Root;

impl<'de> OnMap<'de> for Root {
    type Out = Option<String>;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut language = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "metadata" {
                language = map.next_value_seed(Lenient(Language))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(language)
    }
}

/// One cell as Read shows it.
#[derive(Debug, Default)]
pub(crate) struct Cell {
    pub id: Option<String>,
    pub cell_type: Option<String>,
    pub source: String,
    pub outputs: Vec<Output>,
}

/// One output of a cell, as far as Read shows it.
#[derive(Debug, Default)]
pub(crate) struct Output {
    pub output_type: Option<String>,
    pub text: String,
    pub ename: Option<String>,
    pub evalue: Option<String>,
    pub plain: String,
    pub png: Option<String>,
    pub jpeg: Option<String>,
}

impl<'de> OnMap<'de> for Cell {
    type Out = Cell;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cell, A::Error> {
        let mut cell = Cell::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => cell.id = map.next_value_seed(Str)?,
                "cell_type" => cell.cell_type = map.next_value_seed(Str)?,
                "source" => cell.source = joined_text(&mut map)?,
                "outputs" => cell.outputs = map.next_value_seed(Outputs)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(cell)
    }
}

/// A cell's outputs (a list of objects; anything else reads as none).
struct Outputs;

impl<'de> DeserializeSeed<'de> for Outputs {
    type Value = Vec<Output>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(Items(Output::default))
    }
}

/// The `data` of an output: its plain text and its PNG or JPEG image.
struct Data;

impl<'de> OnMap<'de> for Data {
    type Out = (String, Option<String>, Option<String>);

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = Self::Out::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "text/plain" => data.0 = joined_text(&mut map)?,
                "image/png" => data.1 = Some(joined_text(&mut map)?),
                "image/jpeg" => data.2 = Some(joined_text(&mut map)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(data)
    }
}

impl<'de> OnMap<'de> for Output {
    type Out = Output;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Output, A::Error> {
        let mut output = Output::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "output_type" => output.output_type = map.next_value_seed(Str)?,
                "text" => output.text = joined_text(&mut map)?,
                "ename" => output.ename = map.next_value_seed(Str)?,
                "evalue" => output.evalue = map.next_value_seed(Str)?,
                "data" => {
                    (output.plain, output.png, output.jpeg) = map.next_value_seed(Lenient(Data))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(output)
    }
}

/// A list whose items are read with the reader `make` gives, kept in a
/// vector; anything but a list reads as empty.
struct Items<F>(F);

impl<'de, T, F> Visitor<'de> for Items<F>
where
    T: OnMap<'de, Out = T> + Default,
    F: Fn() -> T,
{
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Lenient((self.0)()))? {
            items.push(item);
        }
        Ok(items)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Vec::new())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_str<E>(self, _: &str) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E>(self) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }
}

/// The cells of the root object, each handed to `each` with its index as
/// soon as it is read and then dropped.
struct Cells<F>(F);

impl<'de, F: FnMut(usize, Cell)> OnMap<'de> for Cells<F> {
    type Out = ();

    fn map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "cells" {
                map.next_value_seed(EachCell(&mut self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `cells` list, one cell at a time.
struct EachCell<'f, F>(&'f mut F);

impl<'de, F: FnMut(usize, Cell)> DeserializeSeed<'de> for EachCell<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(usize, Cell)> Visitor<'de> for EachCell<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of cells")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(cell) = seq.next_element_seed(Lenient(Cell::default()))? {
            (self.0)(index, cell);
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The notebook's language (`None` when it does not say), read without
/// keeping its cells.
pub(crate) fn language(bytes: &[u8]) -> serde_json::Result<Option<String>> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let language = Lenient(Root).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(language)
}

/// Hands each cell of the notebook to `each` with its index, in order, as
/// it is read.
pub(crate) fn each_cell(bytes: &[u8], each: impl FnMut(usize, Cell)) -> serde_json::Result<()> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    Lenient(Cells(each)).deserialize(&mut deserializer)?;
    deserializer.end()
}
