//! The module graph is one-way. Every `crate::` and `super::` path in `src/` (in
//! `use` lines and in code alike, test modules included) is mapped to the file and the
//! top-level module it names, and the test fails, naming the file and the path, when
//!
//! - a module imports one that comes later in the stage order, or one that is not in it;
//! - files import each other, two of them or around a longer circle.
//!
//! The order is the order of the `mod` lines of `src/lib.rs`, bottom first; the same order is
//! written in `docs/architecture.md`, and the test holds the two together. Paths a module
//! names through its own children (`mod x; pub use x::Y;`) are not imports and are not read.
//!
//! The checks themselves are shown failing on small fixtures at the end of this file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A source file: its path under `src/` (`layout/stack.rs`) and its text.
struct Source {
    path: String,
    text: String,
}

/// One import: the file it is in, the path as written (`crate::lab::Phase`), the file it
/// names, and the top-level modules of both (`None`: the crate root).
#[derive(Clone, Debug)]
struct Import {
    from: String,
    written: String,
    to: String,
    from_top: Option<String>,
    to_top: Option<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_sources(dir: &Path, base: &Path, out: &mut Vec<Source>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect::<Vec<PathBuf>>();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_sources(&p, base, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            let path = p
                .strip_prefix(base)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            out.push(Source { path, text });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading Rust as tokens: comments, strings and characters left out.

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The end of a string starting at `i` (`"..."`, `r#"..."#`, with `b` prefixes), if one does.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if j < b.len() && b[j] == b'r' {
        let mut k = j + 1;
        while k < b.len() && b[k] == b'#' {
            k += 1;
        }
        if k < b.len() && b[k] == b'"' {
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', k - j - 1))
                .collect();
            let body = k + 1;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            return Some(end);
        }
        return None;
    }
    if j < b.len() && b[j] == b'"' {
        let mut k = j + 1;
        while k < b.len() && b[k] != b'"' {
            k += if b[k] == b'\\' { 2 } else { 1 };
        }
        return Some((k + 1).min(b.len()));
    }
    None
}

/// The end of a character literal at `i` (`'x'`, `'\n'`, `'\u{1F600}'`); `None` for a lifetime.
fn skip_char(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&b'\\') {
        let close = b.get(i + 3..)?.iter().position(|&c| c == b'\'')?;
        return Some(i + 3 + close + 1);
    }
    // One UTF-8 character, then the closing quote.
    let s = std::str::from_utf8(&b[i + 1..(i + 6).min(b.len())])
        .unwrap_or_else(|e| std::str::from_utf8(&b[i + 1..i + 1 + e.valid_up_to()]).unwrap_or(""));
    let c = s.chars().next()?;
    let after = i + 1 + c.len_utf8();
    (b.get(after) == Some(&b'\'')).then_some(after + 1)
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn tokens(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            i = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
        } else if b[i..].starts_with(b"/*") {
            i = skip_block_comment(b, i);
        } else if let Some(end) = (c == b'"' || c == b'r' || c == b'b')
            .then(|| skip_string(b, i))
            .flatten()
            .filter(|_| i == 0 || !is_ident_byte(b[i - 1]))
        {
            i = end;
        } else if c == b'\'' {
            match skip_char(b, i) {
                Some(end) => i = end,
                None => i += 1, // a lifetime: its name follows as an identifier
            }
        } else if is_ident_byte(c) {
            let start = i;
            while i < b.len() && is_ident_byte(b[i]) {
                i += 1;
            }
            out.push(Tok::Ident(text[start..i].to_string()));
        } else if b[i..].starts_with(b"::") {
            out.push(Tok::Path);
            i += 2;
        } else {
            if !c.is_ascii_whitespace() {
                out.push(Tok::Punct(c as char));
            }
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// From paths to files.

/// The module path of a file: `layout/stack.rs` and `layout/stack/mod.rs` are `layout::stack`;
/// `lib.rs` is the crate root.
fn module_of(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Every module path and the file it lives in, `#[path = "..."] mod x;` followed.
fn module_files(sources: &[Source]) -> BTreeMap<Vec<String>, String> {
    let mut by_module: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut moved = BTreeMap::new();
    for s in sources {
        // `#[path = "file.rs"] mod name;`: strings are not tokens, so read the text.
        for (at, _) in s.text.match_indices("#[path = \"") {
            let rest = &s.text[at + 10..];
            let Some(q) = rest.find('"') else { continue };
            let file = &rest[..q];
            let after = rest[q..].trim_start_matches(|c: char| c != 'm');
            let name: String = after
                .strip_prefix("mod ")
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                continue;
            }
            let dir = Path::new(&s.path).parent().unwrap_or(Path::new(""));
            let target = dir.join(file).to_string_lossy().into_owned();
            let mut m = module_of(&s.path);
            m.push(name);
            moved.insert(target, m);
        }
    }
    for s in sources {
        let m = moved
            .get(&s.path)
            .cloned()
            .unwrap_or_else(|| module_of(&s.path));
        by_module.insert(m, s.path.clone());
    }
    by_module
}

/// The paths of a use tree starting at `t[i]` (after `crate::` or the `super::`s), each with
/// its segments; returns them and where the tree ends.
fn use_tree(t: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        match t.get(i) {
            Some(Tok::Ident(s)) => {
                segs.push(s.clone());
                i += 1;
                if t.get(i) == Some(&Tok::Path) {
                    i += 1;
                    continue;
                }
                if t.get(i) == Some(&Tok::Ident("as".into())) {
                    i += 2;
                }
                out.push(segs);
                return i;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match t.get(i) {
                        Some(Tok::Punct('}')) | None => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        _ => i = use_tree(t, i, &segs, out),
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                out.push(segs);
                return i + 1;
            }
            _ => {
                out.push(segs);
                return i;
            }
        }
    }
}

/// Every `crate::` and `super::` path of a file, resolved to absolute module paths, with the
/// text each was written as.
fn paths_of(s: &Source, module: &[String]) -> Vec<(String, Vec<String>)> {
    let t = tokens(&s.text);
    let mut out = Vec::new();
    // Inline modules (`mod tests { ... }`): their depth, to resolve `super::` inside them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        match &t[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Punct('{'))) =
                    (t.get(i + 1), t.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(kw)
                if (kw == "crate" || kw == "super") && t.get(i + 1) == Some(&Tok::Path) =>
            {
                if i > 0 && t[i - 1] == Tok::Punct('$') {
                    i += 1;
                    continue;
                }
                let here: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(n, _)| n.clone()))
                    .collect();
                let mut base = if kw == "crate" {
                    Vec::new()
                } else {
                    here[..here.len().saturating_sub(1)].to_vec()
                };
                let mut j = i + 2;
                let mut written = format!("{kw}::");
                while let (Some(Tok::Ident(s)), Some(Tok::Path)) = (t.get(j), t.get(j + 1)) {
                    if s != "super" {
                        break;
                    }
                    base.pop();
                    written.push_str("super::");
                    j += 2;
                }
                let mut found = Vec::new();
                let end = use_tree(&t, j, &base, &mut found);
                for segs in found {
                    let tail = segs[base.len()..].join("::");
                    out.push((format!("{written}{tail}"), segs));
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The imports of every file, each resolved to the file it names (the longest module prefix
/// that is a file). Paths into the crate root (`lib.rs`) are left out.
fn imports(sources: &[Source]) -> Vec<Import> {
    let files = module_files(sources);
    let module_by_file: BTreeMap<&str, &Vec<String>> =
        files.iter().map(|(m, f)| (f.as_str(), m)).collect();
    let mut out = Vec::new();
    for s in sources {
        let module = module_by_file[s.path.as_str()];
        for (written, segs) in paths_of(s, module) {
            let Some((to_module, to)) = (1..=segs.len())
                .rev()
                .find_map(|n| files.get_key_value(&segs[..n]))
            else {
                continue;
            };
            if *to != s.path {
                out.push(Import {
                    from: s.path.clone(),
                    written,
                    to: to.clone(),
                    from_top: module.first().cloned(),
                    to_top: to_module.first().cloned(),
                });
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The two rules.

/// The stage order: the top-level `mod` lines of `lib.rs`, in order.
fn order_of_lib(lib: &str) -> Vec<String> {
    let t = tokens(lib);
    let mut out = Vec::new();
    let mut depth = 0;
    for (i, tok) in t.iter().enumerate() {
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Ident(m) if m == "mod" && depth == 0 => {
                if let (Some(Tok::Ident(name)), Some(Tok::Punct(';'))) =
                    (t.get(i + 1), t.get(i + 2))
                {
                    out.push(name.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// Every import against the order, one line each: the file, the path, why.
fn against_the_order(imports: &[Import], order: &[String]) -> Vec<String> {
    let rank = |m: &str| order.iter().position(|o| o == m);
    let mut out = BTreeSet::new();
    for im in imports {
        let (Some(a), Some(b)) = (im.from_top.as_deref(), im.to_top.as_deref()) else {
            continue;
        };
        if a == b {
            continue;
        }
        match (rank(a), rank(b)) {
            (Some(ra), Some(rb)) if rb > ra => {
                out.insert(format!(
                    "src/{} imports {} ({b} comes after {a} in the order of src/lib.rs)",
                    im.from, im.written
                ));
            }
            (None, _) => {
                out.insert(format!(
                    "module {a} (src/{}) is not in the order of src/lib.rs",
                    im.from
                ));
            }
            (_, None) => {
                out.insert(format!(
                    "module {b} (src/{}) is not in the order of src/lib.rs",
                    im.to
                ));
            }
            _ => {}
        }
    }
    out.into_iter().collect()
}

/// Every set of files that import each other (strongly connected, two or more), with the
/// imports that tie them, one line each.
fn circles(imports: &[Import]) -> Vec<String> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for im in imports {
        graph.entry(&im.from).or_default().insert(&im.to);
        graph.entry(&im.to).or_default();
    }
    // Tarjan's algorithm, iterative enough for a crate of a few hundred files.
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, g: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for &w in &g[v] {
            if !s.index.contains_key(w) {
                visit(w, g, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort_unstable();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(v, &graph, &mut s);
        }
    }
    s.out
        .iter()
        .map(|comp| {
            let ties: BTreeSet<String> = imports
                .iter()
                .filter(|im| comp.contains(&im.from.as_str()) && comp.contains(&im.to.as_str()))
                .map(|im| format!("src/{} imports {}", im.from, im.written))
                .collect();
            format!(
                "files import each other: {} ({})",
                comp.iter()
                    .map(|f| format!("src/{f}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                ties.into_iter().collect::<Vec<_>>().join("; ")
            )
        })
        .collect()
}

fn check(sources: &[Source], order: &[String]) -> Vec<String> {
    let imports = imports(sources);
    let mut problems = against_the_order(&imports, order);
    problems.extend(circles(&imports));
    problems
}

fn crate_sources() -> (Vec<Source>, Vec<String>) {
    let src = root().join("src");
    let mut sources = Vec::new();
    read_sources(&src, &src, &mut sources);
    // The binary is a crate of its own: its `crate::` is not the library's.
    sources.retain(|s| s.path != "main.rs");
    let lib = sources
        .iter()
        .find(|s| s.path == "lib.rs")
        .expect("src/lib.rs");
    let order = order_of_lib(&lib.text);
    (sources, order)
}

// ---------------------------------------------------------------------------------------------
// A layer in one place.

/// A storage layer's type names, and the files that may name them: its own files and the
/// registries that list every layer. A name anywhere else is a place a new layer would have to
/// be added by hand. Held for the layers built on the one-layer design (the layers under each
/// member and the writecache); the older layers still spread further (docs/architecture.md).
struct LayerFiles {
    layer: &'static str,
    names: &'static [&'static str],
    own: &'static [&'static str],
}

/// The registries: the layer kinds (what the build stage knows of each layer: availability,
/// VM needs, steps) and the spec's sections (the spec stage sits below the layout stage, so its
/// list cannot be read from the layer kinds).
const REGISTRIES: [&str; 2] = ["layout/registry.rs", "spec/lab/layout.rs"];

/// Where the raw spec's fields live (one per section, as serde reads a layout table): the
/// one place besides the registries a new section is added to.
const RAW_SPEC: &str = "spec/lab/raw.rs";

const MEMBER_LAYER_FILES: [&str; 5] = [
    "spec/lab/integrity.rs",
    "spec/lab/integrity_tests.rs",
    "stack/member.rs",
    "layout/member.rs",
    "layout/session/member.rs",
];

const LAYER_FILES: [LayerFiles; 3] = [
    LayerFiles {
        layer: "dm-integrity",
        names: &[
            "Integrity",
            "IntegrityOptions",
            "IntegrityAlgorithm",
            "IntegrityGeometry",
            "RawIntegrity",
        ],
        own: &MEMBER_LAYER_FILES,
    },
    LayerFiles {
        layer: "luks",
        names: &["Luks", "LuksOptions", "RawLuks"],
        own: &MEMBER_LAYER_FILES,
    },
    LayerFiles {
        layer: "writecache",
        names: &["Writecache"],
        own: &[
            "spec/lab/cache.rs",
            "spec/lab/cache_tests.rs",
            "stack/cache.rs",
            "layout/cache.rs",
            "layout/session/cache.rs",
        ],
    },
];

/// Each file outside `own`, the registries and the raw spec that names one of `names` in
/// code (comments and strings left out), with the name.
fn named_outside(sources: &[Source], names: &[&str], own: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources {
        let p = s.path.as_str();
        if own.contains(&p) || REGISTRIES.contains(&p) || p == RAW_SPEC {
            continue;
        }
        let found: BTreeSet<String> = tokens(&s.text)
            .into_iter()
            .filter_map(|t| match t {
                Tok::Ident(i) if names.contains(&i.as_str()) => Some(i),
                _ => None,
            })
            .collect();
        for n in found {
            out.push(format!("src/{p}: {n}"));
        }
    }
    out
}

/// dm-integrity, LUKS and the writecache are named only in their own files and the
/// registries: a walker, a report or a planner that matched on them would be named here.
#[test]
fn a_layers_types_are_named_only_in_its_own_files_and_the_registries() {
    let (sources, _) = crate_sources();
    for l in &LAYER_FILES {
        for f in l.own {
            assert!(
                sources.iter().any(|s| s.path == *f),
                "{}: src/{f} does not exist (moved? update LAYER_FILES)",
                l.layer
            );
        }
        let outside = named_outside(&sources, l.names, l.own);
        assert!(
            outside.is_empty(),
            "{}'s types named outside its own files and the registries:\n{}",
            l.layer,
            outside.join("\n")
        );
    }
}

/// The session's walkers: build, assembly after a power cut, degrade, rebuild, scrub, re-tune
/// and the steps' trait. They take each layer's steps from the registry and name none.
const WALKERS: [&str; 6] = [
    "layout/session.rs",
    "layout/session/build.rs",
    "layout/session/assemble.rs",
    "layout/session/failure.rs",
    "layout/session/retune.rs",
    "layout/session/steps.rs",
];

/// Words that name one layer in code: the layer kinds' enums and options, and the layers' own
/// modules (`mdadm::`, `zfs::`, ...).
const LAYER_WORDS: [&str; 18] = [
    "RaidLayer",
    "FsKind",
    "MemberLayer",
    "CacheKind",
    "CacheOptions",
    "CacheFailure",
    "MdOptions",
    "MdLevel",
    "ZfsOptions",
    "VdevKind",
    "BtrfsProfile",
    "mdadm",
    "zfs",
    "btrfs",
    "lvm",
    "bcache",
    "integrity",
    "luks",
];

/// The one layer word a walker may say, and why: what degrading did carries the SSD cache's
/// failure (`cache.fail`) as its own type, because the stored record keeps it under that name
/// and records written by older binaries must read byte for byte.
const WALKER_ALLOWED: [(&str, &str); 2] = [
    ("layout/session/failure.rs", "CacheFailure"),
    ("layout/session/steps.rs", "CacheFailure"),
];

/// The walkers name no layer: a new layer is found through the registry, never by a walker
/// that matches it.
#[test]
fn the_sessions_walkers_name_no_layer() {
    let (sources, _) = crate_sources();
    let mut found = Vec::new();
    for w in WALKERS {
        let s = sources
            .iter()
            .find(|s| s.path == w)
            .unwrap_or_else(|| panic!("src/{w} does not exist (moved? update WALKERS)"));
        let toks = tokens(&s.text);
        // `mod btrfs;` declares a layer's file under the module; it matches nothing.
        let declared = |k: usize| k > 0 && matches!(&toks[k - 1], Tok::Ident(m) if m == "mod");
        let words: BTreeSet<String> = toks
            .iter()
            .enumerate()
            .filter_map(|(k, t)| match t {
                Tok::Ident(i) if LAYER_WORDS.contains(&i.as_str()) && !declared(k) => {
                    Some(i.clone())
                }
                _ => None,
            })
            .filter(|i| !WALKER_ALLOWED.contains(&(w, i.as_str())))
            .collect();
        found.extend(words.into_iter().map(|i| format!("src/{w}: {i}")));
    }
    assert!(
        found.is_empty(),
        "a walker names a layer (ask the layer's steps instead):\n{}",
        found.join("\n")
    );
}

/// The check sees a name in code and not in a comment or a string.
#[test]
fn a_layer_named_in_code_elsewhere_is_found() {
    let sources = fixture(&[
        ("stack/member.rs", "pub struct LuksOptions;\n"),
        (
            "report/text/lab.rs",
            "// LuksOptions in a comment\nconst S: &str = \"Luks\";\nfn f(_: LuksOptions) {}\n",
        ),
        ("report/html/setup.rs", "// Luks\nfn g() {}\n"),
    ]);
    assert_eq!(
        named_outside(&sources, &["Luks", "LuksOptions"], &["stack/member.rs"]),
        ["src/report/text/lab.rs: LuksOptions"]
    );
}

// ---------------------------------------------------------------------------------------------
// The crate.

/// No module imports a later stage, no files import each other.
#[test]
fn the_module_graph_is_one_way() {
    let (sources, order) = crate_sources();
    assert!(
        order.len() > 10,
        "the order read from src/lib.rs: {order:?}"
    );
    let imports = imports(&sources);
    assert!(
        imports.len() > 500,
        "only {} imports read: the reader is broken",
        imports.len()
    );
    let problems = check(&sources, &order);
    assert!(
        problems.is_empty(),
        "the module graph must be one-way (docs/architecture.md):\n  {}",
        problems.join("\n  ")
    );
}

/// The order in docs/architecture.md is the order of src/lib.rs.
#[test]
fn the_documented_order_is_the_order_of_lib_rs() {
    let (_, order) = crate_sources();
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs");
    let line = doc
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{} < ", order[0])))
        .unwrap_or_else(|| {
            panic!(
                "docs/architecture.md has no line `{} < ...` giving the stage order",
                order[0]
            )
        });
    let documented: Vec<String> = line.split('<').map(|m| m.trim().to_string()).collect();
    assert_eq!(
        documented, order,
        "docs/architecture.md and src/lib.rs give different orders"
    );
}

// ---------------------------------------------------------------------------------------------
// The checks on fixtures: each rule fails, naming the file and the path.

fn fixture(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(p, t)| Source {
            path: (*p).to_string(),
            text: (*t).to_string(),
        })
        .collect()
}

const LIB: &str = "pub mod low;\npub mod mid;\npub mod high;\n";

/// A back-import is named with its file and its path, whether it is a `use` line,
/// a group, a path in code or a `super::` climbing out of a folder.
#[test]
fn a_back_import_is_named_with_its_file_and_path() {
    let order = order_of_lib(LIB);
    assert_eq!(order, ["low", "mid", "high"]);
    let ok = fixture(&[
        ("lib.rs", LIB),
        ("low.rs", "pub struct L;\n"),
        ("mid/mod.rs", "pub mod part;\nuse crate::low::L;\n"),
        ("mid/part.rs", "use super::super::low::L;\npub struct P;\n"),
        ("high.rs", "use crate::{low::L, mid::part::P};\n"),
    ]);
    assert_eq!(check(&ok, &order), Vec::<String>::new());

    let back = fixture(&[
        ("lib.rs", LIB),
        (
            "low.rs",
            "// crate::high::H in a comment is no import\nconst S: &str = \"crate::high::H\";\nfn f() -> crate::high::H { todo!() }\n",
        ),
        ("mid/mod.rs", "pub mod part;\n"),
        ("mid/part.rs", "use super::super::{high::H, low};\n"),
        ("high.rs", "pub struct H;\n"),
    ]);
    assert_eq!(
        check(&back, &order),
        [
            "src/low.rs imports crate::high::H (high comes after low in the order of src/lib.rs)",
            "src/mid/part.rs imports super::super::high::H (high comes after mid in the order of src/lib.rs)",
        ]
    );
}

/// Two files of one folder that import each other fail, and so does a longer circle;
/// a module's own test module importing it does not count as a circle.
#[test]
fn files_that_import_each_other_are_named() {
    let order = order_of_lib("pub mod a;\n");
    let two = fixture(&[
        ("lib.rs", "pub mod a;\n"),
        ("a/mod.rs", "pub mod x;\npub mod y;\n"),
        (
            "a/x.rs",
            "use super::y::Y;\npub struct X;\n#[cfg(test)]\nmod tests {\n    use super::super::y::Y;\n}\n",
        ),
        (
            "a/y.rs",
            "pub struct Y;\npub fn f() -> super::x::X { todo!() }\n",
        ),
    ]);
    assert_eq!(
        check(&two, &order),
        [
            "files import each other: src/a/x.rs, src/a/y.rs (src/a/x.rs imports super::super::y::Y; src/a/x.rs imports super::y::Y; src/a/y.rs imports super::x::X)"
        ]
    );
    let three = fixture(&[
        ("lib.rs", "pub mod a;\n"),
        ("a/mod.rs", "pub mod x;\npub mod y;\npub mod z;\n"),
        ("a/x.rs", "use super::y::Y;\npub struct X;\n"),
        ("a/y.rs", "use crate::a::z::Z;\npub struct Y;\n"),
        ("a/z.rs", "use super::x::X;\npub struct Z;\n"),
    ]);
    let found = check(&three, &order);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("files import each other: src/a/x.rs, src/a/y.rs, src/a/z.rs"),
        "{found:?}"
    );
    let tested = fixture(&[
        ("lib.rs", "pub mod a;\n"),
        (
            "a.rs",
            "pub struct A;\n#[cfg(test)]\n#[path = \"a_tests.rs\"]\nmod tests;\n",
        ),
        ("a_tests.rs", "use super::A;\nuse crate::a::A as B;\n"),
    ]);
    assert_eq!(check(&tested, &order), Vec::<String>::new());
    let imports = imports(&tested);
    assert!(
        imports
            .iter()
            .any(|i| i.from == "a_tests.rs" && i.to == "a.rs"),
        "#[path] test modules resolve `super::` to their parent: {imports:?}"
    );
}

/// A module missing from the order is named, so a new module is placed on purpose.
#[test]
fn a_module_outside_the_order_is_named() {
    let order = order_of_lib("pub mod a;\n");
    let files = fixture(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a.rs", "pub struct A;\n"),
        ("b.rs", "use crate::a::A;\n"),
    ]);
    assert_eq!(
        check(&files, &order),
        ["module b (src/b.rs) is not in the order of src/lib.rs"]
    );
}
