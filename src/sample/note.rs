//! A trial's notes, each with a kind, so every screen can choose which to show without
//! reading their words: a caveat (a fallback, a throttle, a rate not kept) changes how the
//! figures read and is shown everywhere; a note about the engine working as designed (io_uring
//! spinning for completions at low depth) is kept in the JSON and shown with `--verbose`, one
//! merged line for all the trials that wrote it.
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
    /// io_uring polled for completions before sleeping (`--wait auto` at low depth, `--wait
    /// spin`): `found` of `waits` waits found a completion within the spin. The engine working
    /// as designed; it matters only to a reader of the CPU figures, which include the spin.
    Spun {
        /// Waits that found a completion while spinning.
        found: u64,
        /// Every wait of the trial.
        waits: u64,
    },
}

impl NoteKind {
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

impl Note {
    /// A caveat: a note every screen shows.
    pub fn caveat(text: impl Into<String>) -> Note {
        Note {
            text: text.into(),
            kind: NoteKind::Caveat,
        }
    }

    /// The note of a trial whose io_uring waits spun: `found` of `waits` found a completion
    /// within the spin.
    pub fn spun(found: u64, waits: u64) -> Note {
        Note {
            text: format!(
                "{SPUN_TEXT} ({} of {waits} waits found one within 200 us): {SPUN_ADVICE}",
                percent(found, waits)
            ),
            kind: NoteKind::Spun { found, waits },
        }
    }
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

/// The notes about the engine working as designed among `trials`, merged: one line per kind
/// with the number of trials that wrote it and the figures over all of them (what
/// `--verbose` prints under a run or a lab, in place of one line per trial).
pub fn as_designed_lines<'a>(
    trials: impl IntoIterator<Item = &'a super::TrialSample>,
) -> Vec<String> {
    let (mut trials_spun, mut found, mut waits) = (0u64, 0u64, 0u64);
    for t in trials {
        let mut spun = false;
        for n in &t.notes {
            if let NoteKind::Spun { found: f, waits: w } = n.kind {
                found += f;
                waits += w;
                spun = true;
            }
        }
        trials_spun += u64::from(spun);
    }
    if trials_spun == 0 {
        return Vec::new();
    }
    vec![format!(
        "{SPUN_TEXT} in {trials_spun} trial{} ({} of {waits} waits found one within 200 us): {SPUN_ADVICE}",
        if trials_spun == 1 { "" } else { "s" },
        percent(found, waits)
    )]
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

    #[test]
    fn a_caveat_is_a_plain_string_and_a_spin_note_an_object_with_its_figures() {
        let notes = vec![Note::caveat("ran buffered"), Note::spun(3, 4)];
        let json = serde_json::to_string(&notes).unwrap();
        assert_eq!(
            json,
            r#"["ran buffered",{"text":"io_uring waited for completions by spinning (75% of 4 waits found one within 200 us): CPU time includes the spin; --wait block sleeps instead","kind":"spun","found":3,"waits":4}]"#
        );
        let back: Vec<Note> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, notes);
        assert!(!back[0].kind.as_designed());
        assert!(back[1].kind.as_designed());
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
        let trial = |notes: Vec<Note>| super::super::TrialSample {
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
        };
        let trials = [
            trial(vec![Note::spun(10, 100)]),
            trial(vec![Note::caveat("x")]),
            trial(vec![Note::spun(90, 100), Note::caveat("y")]),
        ];
        assert_eq!(
            as_designed_lines(&trials),
            vec![
                "io_uring waited for completions by spinning in 2 trials (50% of 200 waits found one within 200 us): CPU time includes the spin; --wait block sleeps instead"
                    .to_string()
            ]
        );
        assert!(as_designed_lines(&trials[1..2]).is_empty());
    }
}
