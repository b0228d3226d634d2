//! Records the git revision the binary was built from, so every stored run names its code.

fn git(args: &[&str]) -> Option<String> {
    std::process::Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=IOLAB_GIT_REV={rev}");
    // In a git worktree `.git` is a file: watching `.git/HEAD` (a path that does not exist)
    // would rerun this script, and rebuild the crate, on every cargo command. Ask git where
    // HEAD and the branch refs really are.
    let dir = git(&["rev-parse", "--absolute-git-dir"]).unwrap_or_else(|| ".git".into());
    let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| dir.clone());
    println!("cargo:rerun-if-changed={dir}/HEAD");
    // Only this checkout's branch (and the packed refs it may move into): watching all of
    // `refs/heads` rebuilt the crate in every worktree whenever any branch got a commit.
    // A branch that is only packed gets a loose ref on its next commit: then the directory
    // it will appear in is watched instead.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]).map(|r| format!("{common}/{r}"));
    let branch = match branch {
        Some(p) if !std::path::Path::new(&p).exists() => Some(format!("{common}/refs/heads")),
        b => b,
    };
    let watch = branch.into_iter().chain([format!("{common}/packed-refs")]);
    for path in watch {
        // A path that does not exist would rerun this script on every cargo command.
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
