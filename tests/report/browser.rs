//! Headless Chromium for the browser test: screenshots, the DOM after a probe script ran, and
//! a small PNG reader (flate2 for the zlib stream) to tell a rendered page from a blank one.
#![allow(dead_code)]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The Chromium binary, when installed.
pub(crate) fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
            .ok()?;
        if o.status.success() {
            let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if !p.is_empty() {
                return Some(PathBuf::from(p));
            }
        }
    }
    None
}

/// The flags every invocation gets: headless, no sandbox (we are root), no GPU, no network
/// chatter, a fresh profile.
fn base(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=3000",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Runs a command with a deadline; Chromium sometimes lingers after its work is done.
fn run_with_timeout(mut c: Command, limit: Duration) -> (bool, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    c.stdout(std::fs::File::create(&out).expect("stdout file"));
    c.stderr(std::fs::File::create(&err).expect("stderr file"));
    let mut child = c.spawn().expect("spawn chromium");
    let start = std::time::Instant::now();
    let ok = loop {
        if let Some(st) = child.try_wait().expect("wait chromium") {
            break st.success();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        ok,
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default(),
    )
}

fn file_url(p: &Path) -> String {
    let abs = std::fs::canonicalize(p).expect("canonical path");
    format!("file://{}", abs.display())
}

/// Takes a screenshot of `page` at `w` x `h`; returns whether Chromium succeeded and its log
/// (console messages included).
pub(crate) fn screenshot(
    bin: &Path,
    page: &Path,
    png: &Path,
    w: u32,
    h: u32,
    dark: bool,
) -> (bool, String) {
    // Headless Chromium now and then ends a second after it starts without writing the
    // screenshot (seen once in the suite, its log ending mid-start-up): one more try, and
    // both logs when both fail. The page's own faults fail every try, so this hides none.
    let mut logs = String::new();
    for attempt in 1..=2 {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut c = base(bin, profile.path());
        if dark {
            // Makes `prefers-color-scheme` report dark.
            c.arg("--force-dark-mode");
        }
        c.args(["--enable-logging=stderr", "--v=0"]);
        c.arg(format!("--screenshot={}", png.display()));
        c.arg(format!("--window-size={w},{h}"));
        c.arg(file_url(page));
        let (ok, _, err) = run_with_timeout(c, Duration::from_secs(90));
        if ok && png.exists() {
            return (true, err);
        }
        logs.push_str(&format!("--- attempt {attempt}\n{err}\n"));
    }
    (false, logs)
}

/// The DOM after the page loaded and its scripts ran, in a 1280 px wide window (a laptop).
pub(crate) fn dump_dom(bin: &Path, page: &Path) -> (bool, String, String) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut c = base(bin, profile.path());
    c.args([
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2400",
    ]);
    c.arg("--dump-dom");
    c.arg(file_url(page));
    run_with_timeout(c, Duration::from_secs(90))
}

/// Console messages and script errors in Chromium's log.
pub(crate) fn console_problems(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
        })
        .map(str::to_string)
        .collect()
}

/// A decoded image: width, height and RGBA pixels.
pub(crate) struct Image {
    /// Pixels across.
    pub width: usize,
    /// Pixels down.
    pub height: usize,
    /// RGBA, row by row.
    pub rgba: Vec<u8>,
}

impl Image {
    /// The pixel at (x, y).
    pub(crate) fn px(&self, x: usize, y: usize) -> [u8; 4] {
        let i = (y * self.width + x) * 4;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let (a16, b16, c16) = (i16::from(a), i16::from(b), i16::from(c));
    let p = a16 + b16 - c16;
    let (pa, pb, pc) = ((p - a16).abs(), (p - b16).abs(), (p - c16).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes).
pub(crate) fn read_png(path: &Path) -> Result<Image, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    if data.len() < 8 || &data[..8] != b"\x89PNG\r\n\x1a\n" {
        return Err("not a PNG".into());
    }
    let mut pos = 8;
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    let mut idat = Vec::new();
    while pos + 8 <= data.len() {
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &data[pos + 4..pos + 8];
        let body = data.get(pos + 8..pos + 8 + len).ok_or("truncated chunk")?;
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                let (depth, colour, interlace) = (body[8], body[9], body[12]);
                if depth != 8 || interlace != 0 {
                    return Err(format!(
                        "unsupported PNG: depth {depth}, interlace {interlace}"
                    ));
                }
                channels = match colour {
                    2 => 3,
                    6 => 4,
                    c => return Err(format!("unsupported PNG colour type {c}")),
                };
            }
            b"IDAT" => idat.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .map_err(|e| format!("bad zlib stream: {e}"))?;
    let stride = width * channels;
    if raw.len() < height * (stride + 1) {
        return Err("short image data".into());
    }
    let mut prev = vec![0u8; stride];
    let mut rgba = Vec::with_capacity(width * height * 4);
    for y in 0..height {
        let row = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let (filter, src) = (row[0], &row[1..]);
        let mut cur = vec![0u8; stride];
        for x in 0..stride {
            let a = if x >= channels { cur[x - channels] } else { 0 };
            let b = prev[x];
            let c = if x >= channels { prev[x - channels] } else { 0 };
            cur[x] = src[x].wrapping_add(match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => u16::midpoint(u16::from(a), u16::from(b)) as u8,
                4 => paeth(a, b, c),
                f => return Err(format!("bad filter {f}")),
            });
        }
        for px in cur.chunks(channels) {
            rgba.extend_from_slice(&[px[0], px[1], px[2], if channels == 4 { px[3] } else { 255 }]);
        }
        prev = cur;
    }
    Ok(Image {
        width,
        height,
        rgba,
    })
}

/// Pixels within `tol` of an RGB colour.
pub(crate) fn count_near(img: &Image, rgb: [u8; 3], tol: i32) -> usize {
    img.rgba
        .chunks(4)
        .filter(|p| (0..3).all(|i| (i32::from(p[i]) - i32::from(rgb[i])).abs() <= tol))
        .count()
}

/// Share of pixels that differ from the top-left (background) pixel.
pub(crate) fn ink_fraction(img: &Image) -> f64 {
    let bg = img.px(0, 0);
    let n = img.rgba.chunks(4).filter(|p| p[..3] != bg[..3]).count();
    n as f64 / (img.width * img.height).max(1) as f64
}

/// Number of distinct colours (quantized to 5 bits per channel).
pub(crate) fn distinct_colours(img: &Image) -> usize {
    let mut seen = std::collections::HashSet::new();
    for p in img.rgba.chunks(4) {
        seen.insert((p[0] >> 3, p[1] >> 3, p[2] >> 3));
    }
    seen.len()
}
