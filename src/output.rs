//! What commands print, the same way for every command: the aligned text table of the
//! terminal renderers, and the one list of output formats (`--format`). Below every stage, so
//! a renderer anywhere (a report, the multi-host table, `iolab list`) draws its table with it.

/// Renders rows as an aligned text table: the first `left` columns left-aligned, the rest
/// right-aligned, two spaces between columns.
pub fn text_table(head: &[String], rows: &[Vec<String>], left: usize) -> String {
    let ncol = head.len();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate().take(ncol) {
            let pad = w[i] - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if i < left {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(head, &mut out);
    let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    line(&rule, &mut out);
    for r in rows {
        line(r, &mut out);
    }
    out
}

/// The output formats commands offer with `--format`: one list for every command, each command
/// accepting the ones it can print (its flag is parsed with [`Format::only`], so `--help` lists
/// those and a format it cannot print is refused as a usage error).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns for a terminal.
    #[value(alias = "table")]
    Text,
    /// Markdown tables, for a wiki or a blog post.
    Md,
    /// JSON with every figure, for scripts.
    Json,
    /// One line per figure, for spreadsheets and scripts.
    Csv,
    /// One self-contained HTML file.
    Html,
}

impl Format {
    /// A `--format` parser that accepts only `these`.
    pub fn only(these: &'static [Format]) -> impl clap::builder::TypedValueParser<Value = Format> {
        use clap::ValueEnum as _;
        use clap::builder::TypedValueParser as _;
        clap::builder::PossibleValuesParser::new(these.iter().filter_map(Format::to_possible_value))
            .try_map(|s| Format::from_str(&s, false))
    }

    /// The refusal of this format by `iolab <command>`, which renders the formats `has`: one
    /// line naming `--format` and those formats, never the document in another format.
    pub fn unsupported(self, command: &'static str, has: &'static [Format]) -> Unsupported {
        Unsupported {
            asked: self,
            command,
            has,
        }
    }

    /// The name `--format` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Md => "md",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
        }
    }
}

/// A format a command cannot render, refused in one line (a usage error, exit 2) instead of
/// rendering another: `--format csv: iolab report renders html, md`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--format {}: iolab {command} renders {}", asked.name(), names(has))]
pub struct Unsupported {
    /// The format asked for.
    pub asked: Format,
    /// The command, as typed after `iolab`.
    pub command: &'static str,
    /// The formats it renders.
    pub has: &'static [Format],
}

/// Format names joined for a message: `html, md`.
fn names(has: &[Format]) -> String {
    has.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}
