//! `degrade`, `rebuild`, `failures`: which members the lab fails after the healthy runs, and
//! whether the stack can lose them.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Section};
use crate::spec::SpecError;
use crate::stack::Stack;

/// The failure plan of a layout.
pub(super) struct Failures;

impl Section for Failures {
    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        // `degrade = false` is harmless on a dir layout; `rebuild` is refused in `early`.
        [
            ("degrade", raw.degrade.unwrap_or(false)),
            ("failures", raw.failures.is_some()),
            ("during_rebuild", raw.during_rebuild.unwrap_or(false)),
        ]
        .into_iter()
        .find_map(|(k, set)| set.then_some(k))
    }

    fn early(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        draft.degrade = raw.degrade.unwrap_or(false);
        draft.rebuild = raw.rebuild.unwrap_or(false);
        if draft.rebuild && !draft.degrade {
            return Err(cx.err(
                "rebuild",
                "rebuild",
                "a rebuild needs a failed member first; set degrade = true",
            ));
        }
        draft.during_rebuild = raw.during_rebuild.unwrap_or(false);
        if draft.during_rebuild && !draft.rebuild {
            return Err(cx.err(
                "during_rebuild",
                "during_rebuild",
                "the workloads can run during a rebuild only when there is one; set rebuild = true (and degrade = true)",
            ));
        }
        Ok(())
    }

    fn check(
        &self,
        cx: &Cx,
        raw: &RawLayout,
        stack: &Stack,
        draft: &mut Draft,
    ) -> Result<(), SpecError> {
        if draft.degrade && !stack.survives_one_failure() {
            return Err(cx.err(
                "degrade",
                "degrade",
                format!(
                    "{} cannot lose a member; degrade needs a redundant level (btrfs raid1/raid10/raid5/raid6 data and metadata, md 1/4/5/6/10)",
                    stack.describe()
                ),
            ));
        }
        draft.failures = match raw.failures {
            None | Some(1) => 1,
            Some(2) => {
                if !draft.degrade {
                    return Err(cx.err(
                        "failures",
                        "failures",
                        "a second failure needs the first; set degrade = true",
                    ));
                }
                if stack.tolerated_failures() < 2 {
                    return Err(cx.err(
                        "failures",
                        "failures",
                        format!(
                            "{} survives only {} failure; failures = 2 needs btrfs raid6, raid1c3 or raid1c4 for data and metadata, md raid6, or md raid1 with 3 members",
                            stack.describe(),
                            stack.tolerated_failures()
                        ),
                    ));
                }
                2
            }
            Some(_) => {
                return Err(cx.err(
                    "failures",
                    "failures",
                    "must be 1 or 2 (how many members fail)",
                ));
            }
        };
        Ok(())
    }
}
