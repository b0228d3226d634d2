//! The layers under each member: `integrity = { algorithm = "crc32c", journal =
//! true }` (dm-integrity on each disk) and `luks = { cipher = "aes-xts-plain64", key_size =
//! 512 }` (LUKS2 on each disk, over dm-integrity when both are set), made on every member,
//! spare and replacement before the RAID layer pools them.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::stack::member::{
    IntegrityAlgorithm, IntegrityOptions, LUKS_KEY_SIZES, LuksOptions, MemberLayer,
};
use crate::stack::{Layer, Stack};

/// The cipher LUKS uses unless the spec names one.
pub(super) const DEFAULT_CIPHER: &str = "aes-xts-plain64";

/// dm-integrity under each member.
pub(super) struct Integrity;

/// LUKS under each member.
pub(super) struct Luks;

impl Section for Integrity {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.integrity.is_some().then_some("integrity")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        let Some(i) = &raw.integrity else {
            return Ok(());
        };
        let algorithm = match &i.algorithm {
            None => IntegrityAlgorithm::Crc32c,
            Some(a) => IntegrityAlgorithm::parse(a).ok_or_else(|| {
                let all: Vec<&str> = IntegrityAlgorithm::ALL.iter().map(|a| a.name()).collect();
                cx.err(
                    "algorithm",
                    "integrity.algorithm",
                    format!("unknown algorithm '{a}' (use {})", all.join(", ")),
                )
            })?,
        };
        draft.add(Layer::Member(MemberLayer::Integrity(IntegrityOptions {
            algorithm,
            journal: i.journal.unwrap_or(true),
        })));
        Ok(())
    }
}

impl Section for Luks {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.luks.is_some().then_some("luks")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        let Some(l) = &raw.luks else {
            return Ok(());
        };
        let cipher = match &l.cipher {
            None => DEFAULT_CIPHER.to_string(),
            Some(c) if c.trim().is_empty() || c.contains(char::is_whitespace) => {
                return Err(cx.err(
                    "cipher",
                    "luks.cipher",
                    format!(
                        "'{c}' is not a cipher; use a dm-crypt cipher such as {DEFAULT_CIPHER}"
                    ),
                ));
            }
            Some(c) => c.clone(),
        };
        let key_size = match l.key_size {
            None => 512,
            Some(k) if LUKS_KEY_SIZES.iter().any(|&s| i64::from(s) == k) => k as u32,
            Some(k) => {
                return Err(cx.err(
                    "key_size",
                    "luks.key_size",
                    format!("{k} is not a key size the lab uses; set 256 or 512 (bits)"),
                ));
            }
        };
        draft.add(Layer::Member(MemberLayer::Luks(LuksOptions {
            cipher,
            key_size,
        })));
        Ok(())
    }

    fn check(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        _stack: &Stack,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        if raw.luks.is_some() && raw.powercut.is_some() {
            // The key file lives in the lab's private directory and goes with the session the
            // power cut ends; the second boot has none to open the members with.
            return Err(cx.err(
                "powercut",
                "powercut",
                "a layout with luks cannot be power-cut yet (its key file does not outlive the cut); drop powercut or luks",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "integrity_tests.rs"]
mod tests;
