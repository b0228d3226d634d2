//! CSV quoting, shared by every CSV iolab writes (exports, comparisons) so a label with a comma
//! or a quote comes out the same everywhere.

/// One CSV field: quoted (with quotes doubled) only when it holds a comma, quote or line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn fields_with_commas_quotes_and_newlines_are_quoted() {
        assert_eq!(csv_field("raid6"), "raid6");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }
}
