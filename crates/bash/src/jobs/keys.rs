//! Named keys: what a terminal sends for them, and which of them a job
//! without a terminal takes (as signals to its process group).

use nix::sys::signal::Signal;

/// The key names a terminal job takes besides `C-a` ... `C-z`, for messages.
pub const KEY_NAMES: &str = "Enter, Tab, Escape, Backspace, Space, Delete, Insert, Up, Down, \
Left, Right, Home, End, PageUp, PageDown, F1..F12, C-a..C-z, C-\\, C-]";

/// The bytes a terminal sends for key `name` (case-insensitive; `C-x`,
/// `Ctrl-x` and `^X` name control keys). Arrow keys follow the terminal's
/// cursor mode (`application_cursor`, set by full-screen programs).
pub(crate) fn key_bytes(name: &str, application_cursor: bool) -> Option<Vec<u8>> {
    let lower = name.trim().to_ascii_lowercase();
    if let Some(byte) = control_byte(&lower) {
        return Some(vec![byte]);
    }
    let arrow = |c: char| {
        if application_cursor {
            format!("\x1bO{c}")
        } else {
            format!("\x1b[{c}")
        }
    };
    let seq: String = match lower.as_str() {
        "enter" | "return" => "\r".into(),
        "tab" => "\t".into(),
        "escape" | "esc" => "\x1b".into(),
        "backspace" => "\x7f".into(),
        "space" => " ".into(),
        "delete" | "del" => "\x1b[3~".into(),
        "insert" => "\x1b[2~".into(),
        "up" => arrow('A'),
        "down" => arrow('B'),
        "right" => arrow('C'),
        "left" => arrow('D'),
        "home" => "\x1b[H".into(),
        "end" => "\x1b[F".into(),
        "pageup" => "\x1b[5~".into(),
        "pagedown" => "\x1b[6~".into(),
        "f1" => "\x1bOP".into(),
        "f2" => "\x1bOQ".into(),
        "f3" => "\x1bOR".into(),
        "f4" => "\x1bOS".into(),
        "f5" => "\x1b[15~".into(),
        "f6" => "\x1b[17~".into(),
        "f7" => "\x1b[18~".into(),
        "f8" => "\x1b[19~".into(),
        "f9" => "\x1b[20~".into(),
        "f10" => "\x1b[21~".into(),
        "f11" => "\x1b[23~".into(),
        "f12" => "\x1b[24~".into(),
        _ => return None,
    };
    Some(seq.into_bytes())
}

fn control_byte(lower: &str) -> Option<u8> {
    let rest = lower
        .strip_prefix("c-")
        .or_else(|| lower.strip_prefix("ctrl-"))
        .or_else(|| lower.strip_prefix("ctrl+"))
        .or_else(|| lower.strip_prefix('^'))?;
    match rest.as_bytes() {
        [c @ b'a'..=b'z'] => Some(c & 0x1f),
        [b'\\'] => Some(0x1c),
        [b']'] => Some(0x1d),
        [b'@'] => Some(0x00),
        _ => None,
    }
}

/// The signal a job without a terminal gets for key `name`: Ctrl-C, Ctrl-\
/// and Ctrl-Z, as a terminal would send them to its foreground group.
pub(crate) fn key_signal(name: &str) -> Option<Signal> {
    match control_byte(&name.trim().to_ascii_lowercase())? {
        0x03 => Some(Signal::SIGINT),
        0x1c => Some(Signal::SIGQUIT),
        0x1a => Some(Signal::SIGTSTP),
        _ => None,
    }
}

/// The signal a terminal's line discipline sends for `byte` when it is
/// typed (in the default settings), for writes of raw control characters
/// to a job without a terminal.
pub(crate) fn byte_signal(byte: u8) -> Option<Signal> {
    match byte {
        0x03 => Some(Signal::SIGINT),
        0x1c => Some(Signal::SIGQUIT),
        0x1a => Some(Signal::SIGTSTP),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_what_a_terminal_sends() {
        assert_eq!(key_bytes("Enter", false).unwrap(), b"\r");
        assert_eq!(key_bytes("C-c", false).unwrap(), [3]);
        assert_eq!(key_bytes("Ctrl-D", false).unwrap(), [4]);
        assert_eq!(key_bytes("^Z", false).unwrap(), [26]);
        assert_eq!(key_bytes("C-\\", false).unwrap(), [0x1c]);
        assert_eq!(key_bytes("Up", false).unwrap(), b"\x1b[A");
        assert_eq!(key_bytes("up", true).unwrap(), b"\x1bOA");
        assert_eq!(key_bytes("F12", false).unwrap(), b"\x1b[24~");
        assert!(key_bytes("Hyper", false).is_none());
        assert!(key_bytes("C-1", false).is_none());
        assert_eq!(key_signal("C-c"), Some(Signal::SIGINT));
        assert_eq!(key_signal("C-\\"), Some(Signal::SIGQUIT));
        assert_eq!(key_signal("Enter"), None);
        assert_eq!(byte_signal(3), Some(Signal::SIGINT));
        assert_eq!(byte_signal(b'a'), None);
    }
}
