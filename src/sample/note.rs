//! A trial's notes, each with a kind, so every screen can choose which to show without
//! reading their words, and say a note that many trials wrote once: a caveat (a fallback, a
//! throttle, a rate not kept, workers kept from their CPUs) changes how the figures read and is
//! shown everywhere; a note about the engine working as designed (io_uring spinning for
//! completions) is kept in the JSON and shown with `--verbose`. [`Merged`] turns the notes of
//! many trials into one line per note with the number of trials that wrote it.
//!
//! A caveat is stored and printed in JSON as the plain string every older iolab wrote, so old
//! records read unchanged and scripts reading `notes` as strings keep working; a note of any
//! other kind is an object with its `kind`, its `text` and its figures.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One note of a trial: what it says and what kind of note it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Stored", into = "Stored")]
pub struct Note {
    /// The sentence a reader sees.
    pub text: String,
    /// What the note is about, which decides where it is shown.
    pub kind: NoteKind,
}

/// What a note is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoteKind {
    /// Something that changes how the figures read: every screen shows it.
    #[default]
    Caveat,
    /// io_uring polled for completions before sleeping (`--wait auto`, `--wait spin`): `found`
    /// of `waits` waits found a completion within the spin. The engine working as designed;
    /// it matters only to a reader of the CPU figures, which include the spin.
    Spun {
        /// Waits that found a completion while spinning.
        found: u64,
        /// Every wait of the trial.
        waits: u64,
        /// `--wait auto`: timed comparisons of spinning with sleeping made while it ran.
        #[serde(default, skip_serializing_if = "is_zero")]
        compared: u64,
        /// Of `compared`, those where spinning completed IOs faster.
        #[serde(default, skip_serializing_if = "is_zero")]
        spin_won: u64,
    },
    /// The workers were kept from their CPUs (another process had them) for `share_ppm`
    /// millionths of their time or IOs: the tail from the percentile that leaves out may be
    /// the machine's as much as the device's. A caveat about the figures: shown everywhere.
    CpuWait {
        /// The share kept waiting, in parts per million.
        share_ppm: u64,
    },
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl NoteKind {
    /// The figures of two notes of the same kind together: spins' waits and comparisons
    /// summed, the worse CPU wait; `self` as it is for any other pair.
    pub fn pool(self, other: NoteKind) -> NoteKind {
        match (self, other) {
            (
                NoteKind::Spun {
                    found,
                    waits,
                    compared,
                    spin_won,
                },
                NoteKind::Spun {
                    found: f,
                    waits: w,
                    compared: c,
                    spin_won: s,
                },
            ) => NoteKind::Spun {
                found: found + f,
                waits: waits + w,
                compared: compared + c,
                spin_won: spin_won + s,
            },
            (NoteKind::CpuWait { share_ppm: a }, NoteKind::CpuWait { share_ppm: b }) => {
                NoteKind::CpuWait {
                    share_ppm: a.max(b),
                }
            }
            (pooled, _) => pooled,
        }
    }

    /// Whether the note says the engine worked as designed (kept out of the default screen:
    /// `--verbose` and the JSON carry it) rather than something the figures depend on.
    pub fn as_designed(self) -> bool {
        matches!(self, NoteKind::Spun { .. })
    }
}

/// How the spin note begins.
pub const SPUN_TEXT: &str = "io_uring waited for completions by spinning";
/// What the spin note tells the reader to do about it.
const SPUN_ADVICE: &str = "CPU time includes the spin; --wait block sleeps instead";
/// How the note on workers that waited for a CPU begins.
pub const CPU_WAIT_TEXT: &str = "workers waited for a CPU";

impl Note {
    /// A caveat: a note every screen shows.
    pub fn caveat(text: impl Into<String>) -> Note {
        Note {
            text: text.into(),
            kind: NoteKind::Caveat,
        }
    }

    /// The note of a trial whose io_uring waits spun: `found` of `waits` found a completion
    /// within the spin; `--wait auto` compared spinning with sleeping `compared` times and
    /// spinning won `spin_won` of them.
    pub fn spun(found: u64, waits: u64, compared: u64, spin_won: u64) -> Note {
        let kind = NoteKind::Spun {
            found,
            waits,
            compared,
            spin_won,
        };
        Note {
            text: spun_text("", kind),
            kind,
        }
    }

    /// The note of a trial whose workers were kept from their CPUs for `share` (0..1) of their
    /// time or IOs, `how` saying what the scheduler counted.
    pub fn cpu_wait(how: &str, share: f64) -> Note {
        Note {
            text: format!(
                "{CPU_WAIT_TEXT}: {how} (another process had their CPU): latencies from p{} up \
                 may include that wait, not only the device's",
                tail_from(share)
            ),
            kind: NoteKind::CpuWait {
                share_ppm: (share.clamp(0.0, 1.0) * 1e6).round() as u64,
            },
        }
    }
}

/// The spin note's sentence for pooled figures, `trials` (" in 3 trials", or nothing) after
/// its first words.
fn spun_text(trials: &str, kind: NoteKind) -> String {
    let NoteKind::Spun {
        found,
        waits,
        compared,
        spin_won,
    } = kind
    else {
        return String::new();
    };
    let learned = if compared > 0 {
        format!(
            "; spinning completed IOs faster in {spin_won} of {compared} timed comparisons with sleeping"
        )
    } else {
        String::new()
    };
    format!(
        "{SPUN_TEXT}{trials} ({} of {waits} waits found one within 200 us{learned}): {SPUN_ADVICE}",
        percent(found, waits)
    )
}

/// The percentile from which a tail can hold waits that `share` of the IOs met (to 0.1).
fn tail_from(share: f64) -> f64 {
    (1000.0 * (1.0 - share.clamp(0.0, 1.0))).floor() / 10.0
}

impl From<String> for Note {
    fn from(text: String) -> Note {
        Note::caveat(text)
    }
}

impl From<&str> for Note {
    fn from(text: &str) -> Note {
        Note::caveat(text)
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `found` of `all` as a whole percentage.
fn percent(found: u64, all: u64) -> String {
    format!("{:.0}%", 100.0 * found as f64 / all.max(1) as f64)
}

/// Notes of many trials, each said once: a caveat by its words, with the number of trials
/// that wrote it; a note with figures by its kind, its figures pooled over the trials (the
/// spins' waits summed, the worst CPU wait). The order is the order they first came in.
#[derive(Debug, Default)]
pub struct Merged {
    groups: Vec<Group>,
}

/// One line of [`Merged`].
#[derive(Debug)]
struct Group {
    /// The first note of the group (its words, for a caveat or a group of one).
    first: Note,
    /// Trials that wrote it (0: the run said it, not a trial).
    trials: u32,
    /// The figures pooled over the group.
    pooled: NoteKind,
}

impl Merged {
    /// The notes of `trials` that `keep` chooses, merged.
    pub fn of<'a>(
        trials: impl IntoIterator<Item = &'a super::TrialSample>,
        keep: impl Fn(&Note) -> bool,
    ) -> Merged {
        let mut m = Merged::default();
        for t in trials {
            for n in t.notes.iter().filter(|n| keep(n)) {
                m.add(n, 1);
            }
        }
        m
    }

    /// Adds `note`, written by `trials` trials (0: the run said it, not a trial). True when it
    /// is the first of its line (for a screen that prints notes as they come).
    pub fn add(&mut self, note: &Note, trials: u32) -> bool {
        let same = |g: &&mut Group| match (g.first.kind, note.kind) {
            (NoteKind::Caveat, NoteKind::Caveat) => g.first.text == note.text,
            (a, b) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
        };
        let Some(g) = self.groups.iter_mut().find(same) else {
            self.groups.push(Group {
                first: note.clone(),
                trials,
                pooled: note.kind,
            });
            return true;
        };
        g.trials += trials;
        g.pooled = g.pooled.pool(note.kind);
        false
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// One line per note, saying how many trials wrote it when more than one did.
    pub fn lines(&self) -> Vec<String> {
        self.groups.iter().map(Group::line).collect()
    }
}

impl Group {
    fn line(&self) -> String {
        let n = self.trials;
        let in_trials = format!(" in {n} trial{}", if n == 1 { "" } else { "s" });
        match self.pooled {
            kind @ NoteKind::Spun { .. } => spun_text(&in_trials, kind),
            NoteKind::CpuWait { share_ppm } if n > 1 => {
                let share = share_ppm as f64 / 1e6;
                format!(
                    "{CPU_WAIT_TEXT}{in_trials} (another process had their CPU; at worst {:.1}% \
                     of their time or IOs): latencies from p{} up may include that wait, not \
                     only the device's",
                    100.0 * share,
                    tail_from(share)
                )
            }
            _ if n > 1 => format!("{} (in {n} trials)", self.first.text),
            _ => self.first.text.clone(),
        }
    }
}

/// The notes about the engine working as designed among `trials`, merged: one line per kind
/// with the number of trials that wrote it and the figures over all of them (what
/// `--verbose` prints under a run or a lab, in place of one line per trial).
pub fn as_designed_lines<'a>(
    trials: impl IntoIterator<Item = &'a super::TrialSample>,
) -> Vec<String> {
    Merged::of(trials, |n| n.kind.as_designed()).lines()
}

/// A note as stored and printed in JSON: a caveat as a plain string (the shape every older
/// iolab wrote), another kind as an object with its text and figures, and an object of a kind
/// a newer iolab wrote read as a caveat (shown, never dropped).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Stored {
    Plain(String),
    Kinded {
        text: String,
        #[serde(flatten)]
        kind: NoteKind,
    },
    Unknown {
        text: String,
    },
}

impl From<Stored> for Note {
    fn from(s: Stored) -> Note {
        match s {
            Stored::Plain(text) | Stored::Unknown { text } => Note::caveat(text),
            Stored::Kinded { text, kind } => Note { text, kind },
        }
    }
}

impl From<Note> for Stored {
    fn from(n: Note) -> Stored {
        match n.kind {
            NoteKind::Caveat => Stored::Plain(n.text),
            kind => Stored::Kinded { text: n.text, kind },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(notes: Vec<Note>) -> super::super::TrialSample {
        super::super::TrialSample {
            workload: "w".into(),
            trial: 1,
            started_unix_ms: 0,
            elapsed_ns: 1,
            ops: Vec::new(),
            series: Vec::new(),
            accounting: super::super::IoAccounting::default(),
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            notes,
            verify: None,
            open_loop: None,
        }
    }

    #[test]
    fn a_caveat_is_a_plain_string_and_other_notes_objects_with_their_figures() {
        let notes = vec![
            Note::caveat("ran buffered"),
            Note::spun(3, 4, 0, 0),
            Note::spun(3, 4, 5, 2),
            Note::cpu_wait("preempted 9 times during 300 IOs", 0.03),
        ];
        let json = serde_json::to_string(&notes).unwrap();
        assert_eq!(
            json,
            r#"["ran buffered",{"text":"io_uring waited for completions by spinning (75% of 4 waits found one within 200 us): CPU time includes the spin; --wait block sleeps instead","kind":"spun","found":3,"waits":4},{"text":"io_uring waited for completions by spinning (75% of 4 waits found one within 200 us; spinning completed IOs faster in 2 of 5 timed comparisons with sleeping): CPU time includes the spin; --wait block sleeps instead","kind":"spun","found":3,"waits":4,"compared":5,"spin_won":2},{"text":"workers waited for a CPU: preempted 9 times during 300 IOs (another process had their CPU): latencies from p97 up may include that wait, not only the device's","kind":"cpu_wait","share_ppm":30000}]"#
        );
        let back: Vec<Note> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, notes);
        assert!(!back[0].kind.as_designed());
        assert!(back[1].kind.as_designed());
        assert!(!back[3].kind.as_designed(), "a CPU wait changes the tail");
    }

    #[test]
    fn older_strings_and_kinds_from_a_newer_iolab_read_as_caveats() {
        let back: Vec<Note> = serde_json::from_str(
            r#"["io_uring waited for completions by spinning (50% of 2 waits)",{"text":"t","kind":"future","x":1}]"#,
        )
        .unwrap();
        assert_eq!(back[0].kind, NoteKind::Caveat, "no kind is read from words");
        assert_eq!(back[1], Note::caveat("t"));
    }

    #[test]
    fn spin_notes_of_many_trials_are_one_line_with_their_count_and_pooled_share() {
        let trials = [
            trial(vec![Note::spun(10, 100, 4, 1)]),
            trial(vec![Note::caveat("x")]),
            trial(vec![Note::spun(90, 100, 6, 5), Note::caveat("y")]),
        ];
        assert_eq!(
            as_designed_lines(&trials),
            vec![
                "io_uring waited for completions by spinning in 2 trials (50% of 200 waits found one within 200 us; spinning completed IOs faster in 6 of 10 timed comparisons with sleeping): CPU time includes the spin; --wait block sleeps instead"
                    .to_string()
            ]
        );
        assert!(as_designed_lines(&trials[1..2]).is_empty());
    }

    #[test]
    fn caveats_and_cpu_waits_of_many_trials_are_one_line_each_with_their_count() {
        let wait = |share: f64| Note::cpu_wait(&format!("{share} in the run queue"), share);
        let trials = [
            trial(vec![Note::caveat("ran buffered"), wait(0.02)]),
            trial(vec![Note::caveat("ran buffered"), wait(0.051)]),
            trial(vec![Note::caveat("ran buffered"), wait(0.01)]),
            trial(vec![Note::caveat("other")]),
        ];
        let lines = Merged::of(&trials, |n| !n.kind.as_designed()).lines();
        assert_eq!(
            lines,
            [
                "ran buffered (in 3 trials)",
                "workers waited for a CPU in 3 trials (another process had their CPU; at worst 5.1% of their time or IOs): latencies from p94.9 up may include that wait, not only the device's",
                "other",
            ]
        );
        // A CPU wait of one trial keeps its own words (what the scheduler counted).
        let one = Merged::of(&trials[..1], |_| true).lines();
        assert_eq!(one[1], wait(0.02).text);
        // A note the run said (no trial) is said once, without a count.
        let mut m = Merged::default();
        assert!(m.add(&Note::caveat("noisy"), 0));
        assert!(!m.add(&Note::caveat("noisy"), 0));
        assert_eq!(m.lines(), ["noisy"]);
    }
}
