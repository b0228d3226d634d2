//! A writer for the `newc` cpio format the kernel unpacks as its initramfs: uncompressed,
//! because decompressing a gzip'd initramfs under software emulation costs seconds per boot.

use std::io::{self, Write};

/// Writes a newc archive entry by entry; [`Cpio::finish`] adds the trailer.
pub struct Cpio<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

const MODE_DIR: u32 = 0o040_000;
const MODE_FILE: u32 = 0o100_000;
const MODE_LINK: u32 = 0o120_000;
const MODE_CHAR: u32 = 0o020_000;

impl<W: Write> Cpio<W> {
    /// A new archive written to `out`.
    pub fn new(out: W) -> Cpio<W> {
        Cpio {
            out,
            ino: 1,
            written: 0,
        }
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4)) % 4;
        self.out.write_all(&[0u8; 3][..n as usize])?;
        self.written += n;
        Ok(())
    }

    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) -> io::Result<()> {
        let name = name.trim_start_matches('/');
        let size = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file over 4 GiB"))?;
        let namesize = u32::try_from(name.len() + 1)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))?;
        let nlink = if mode & MODE_DIR == MODE_DIR { 2 } else { 1 };
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev.0, rdev.1, namesize, 0
        );
        self.ino += 1;
        self.out.write_all(header.as_bytes())?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        self.written += header.len() as u64 + u64::from(namesize);
        self.pad()?;
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        self.pad()
    }

    /// A directory (parents must come first: the kernel does not make them).
    pub fn dir(&mut self, name: &str) -> io::Result<()> {
        self.entry(name, MODE_DIR | 0o755, (0, 0), &[])
    }

    /// A regular file with `perm` bits (0o755 for programs).
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        self.entry(name, MODE_FILE | perm, (0, 0), data)
    }

    /// A symbolic link `name` -> `target`.
    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.entry(name, MODE_LINK | 0o777, (0, 0), target.as_bytes())
    }

    /// A character device node (`/dev/console` must exist before `/init` runs).
    pub fn char_dev(&mut self, name: &str, major: u32, minor: u32) -> io::Result<()> {
        self.entry(name, MODE_CHAR | 0o600, (major, minor), &[])
    }

    /// Writes the trailer and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, (0, 0), &[])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_aligned_and_end_with_the_trailer() {
        let mut c = Cpio::new(Vec::new());
        c.dir("bin").unwrap();
        c.file("/bin/x", 0o755, b"hello").unwrap();
        c.symlink("bin/sh", "busybox").unwrap();
        c.char_dev("dev/console", 5, 1).unwrap();
        let v = c.finish().unwrap();
        assert_eq!(v.len() % 4, 0);
        assert!(v.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&v);
        assert!(text.contains("bin/x\0"));
        assert!(!text.contains("/bin/x"), "leading slashes are dropped");
        assert!(text.contains("hello"));
        assert!(text.contains("TRAILER!!!\0"));
        // The file header: mode 0o100755 and size 5.
        let i = text.find("bin/x").unwrap() - 110;
        assert_eq!(&text[i + 14..i + 22], "000081ed");
        assert_eq!(&text[i + 54..i + 62], "00000005");
        // The console node: rdev 5,1.
        let i = text.find("dev/console").unwrap() - 110;
        assert_eq!(&text[i + 78..i + 86], "00000005");
        assert_eq!(&text[i + 86..i + 94], "00000001");
    }
}
