//! `--verify` on real files: a clean run finds nothing; bytes corrupted between a write run and a
//! read run are reported as exactly those blocks; an old copy put back is a lost write; a block
//! copied to another offset is a misdirected write.

mod common;

use common::*;
use std::os::unix::fs::FileExt;

const BS: u64 = 4096;

fn setup() -> (tempfile::TempDir, String, String) {
    let d = disk_tmpdir("iolab-verify-test");
    let f = d.path().join("data.img");
    std::fs::File::create(&f).unwrap();
    let st = d.path().join("data.state");
    (
        d,
        f.to_str().unwrap().to_string(),
        st.to_str().unwrap().to_string(),
    )
}

fn write_pass(f: &str, st: &str) {
    Iolab::new()
        .args([
            "run",
            f,
            "--pattern",
            "write",
            "--bs",
            "4k",
            "--qd",
            "8",
            "--size",
            "1MiB",
            "--io-size",
            "1MiB",
            "--repeat",
            "1",
            "--verify",
            "write",
            "--verify-state",
            st,
        ])
        .run()
        .success();
}

fn read_pass(f: &str, st: &str) -> (i32, serde_json::Value, String) {
    let (code, so, se) = Iolab::new()
        .args([
            "run",
            f,
            "--pattern",
            "read",
            "--bs",
            "4k",
            "--qd",
            "8",
            "--size",
            "1MiB",
            "--io-size",
            "1MiB",
            "--repeat",
            "1",
            "--verify",
            "read",
            "--verify-state",
            st,
            "--json",
        ])
        .run()
        .parts();
    (code, json(&so), se)
}

/// (offset, kind) of every mismatch in the final read-back pass.
fn mismatches(j: &serde_json::Value) -> Vec<(u64, String)> {
    let ws = j["run"]["workloads"].as_array().unwrap();
    let pass = ws
        .iter()
        .find(|w| {
            w["workload"]["name"]
                .as_str()
                .unwrap()
                .ends_with(":verify-read")
        })
        .expect("a verify-read pass");
    let v = &pass["trials"][0]["verify"];
    let mut out: Vec<(u64, String)> = v["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["offset"].as_u64().unwrap(),
                m["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_clean_run_reports_no_mismatches() {
    let d = disk_tmpdir("iolab-verify-test");
    let j = Iolab::new()
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--pattern",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "16",
            "--threads",
            "2",
            "--size",
            "8MiB",
            "--io-size",
            "16MiB",
            "--repeat",
            "1",
            "--verify",
            "--json",
        ])
        .run()
        .success()
        .json();
    let names: Vec<&str> = j["run"]["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["workload"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names[0].ends_with(":verify-fill") && names[2].ends_with(":verify-read"),
        "{names:?}"
    );
    let v = &j["run"]["workloads"][2]["trials"][0]["verify"];
    assert_eq!(v["blocks_checked"], 2048);
    assert_eq!(v["corrupt"], 0);
    assert_eq!(v["lost_writes"], 0);
    assert!(
        j["run"]["workloads"][1]["trials"][0]["verify"]["blocks_checked"]
            .as_u64()
            .unwrap()
            > 0,
        "mixed reads checked inline"
    );
}

#[test]
fn corrupted_bytes_are_reported_as_exactly_those_blocks() {
    let (_d, f, st) = setup();
    write_pass(&f, &st);
    let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
    file.write_all_at(&[0xAA, 0x55, 0xAA], 3 * BS + 1000)
        .unwrap();
    file.write_all_at(&[0], 10 * BS + 4095).unwrap();
    file.sync_all().unwrap();
    let (code, j, se) = read_pass(&f, &st);
    assert_eq!(code, 1, "{se}");
    assert!(se.contains("2 bad blocks"), "{se}");
    assert_eq!(
        mismatches(&j),
        vec![
            (3 * BS, "corrupt".to_string()),
            (10 * BS, "corrupt".to_string())
        ]
    );
}

#[test]
fn an_old_copy_is_a_lost_write_and_a_moved_block_is_misdirected() {
    let (_d, f, st) = setup();
    write_pass(&f, &st);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&f)
        .unwrap();
    let mut old = vec![0u8; BS as usize];
    file.read_exact_at(&mut old, 7 * BS).unwrap();
    // A second write run continues the generations of the first.
    write_pass(&f, &st);
    file.write_all_at(&old, 7 * BS).unwrap();
    let mut twelve = vec![0u8; BS as usize];
    file.read_exact_at(&mut twelve, 12 * BS).unwrap();
    file.write_all_at(&twelve, 20 * BS).unwrap();
    file.sync_all().unwrap();
    let (code, j, se) = read_pass(&f, &st);
    assert_eq!(code, 1, "{se}");
    assert_eq!(
        mismatches(&j),
        vec![
            (7 * BS, "lost_write".to_string()),
            (20 * BS, "misdirected".to_string())
        ]
    );
}

#[test]
fn verify_modes_need_a_state_file_and_big_enough_blocks() {
    let (_d, f, _st) = setup();
    Iolab::new()
        .args(["run", &f, "--pattern", "write", "--verify", "write"])
        .run()
        .code(2)
        .stderr_has("--verify-state");
    Iolab::new()
        .args(["run", &f, "--pattern", "write", "--verify", "sideways"])
        .run()
        .code(2);
    Iolab::new()
        .args([
            "run",
            &f,
            "--pattern",
            "write",
            "--bs",
            "256",
            "--buffered",
            "--size",
            "64k",
            "--verify",
        ])
        .run()
        .code(1)
        .stderr_has("at least 512 bytes");
}
