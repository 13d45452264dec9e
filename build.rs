//! With `--features dynamic` the `trlvr` binary links trlvr (and std) as shared
//! libraries; an rpath lets it find them when run directly, not only under `cargo run`.
fn main() {
    commit();
    println!("cargo:rerun-if-env-changed=CARGO_FEATURE_DYNAMIC");
    if std::env::var_os("CARGO_FEATURE_DYNAMIC").is_none() {
        return;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = std::process::Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    println!(
        "cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN:$ORIGIN/deps:{sysroot}/lib:{sysroot}/lib/rustlib/{target}/lib"
    );
}

/// The commit the binary is built from, for the reports a study writes (`-dirty` when the
/// tree had uncommitted changes to tracked files at build time).
fn commit() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(hash) = git(&["rev-parse", "HEAD"]) {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        println!("cargo:rustc-env=TRLVR_COMMIT={hash}{}", if dirty { "-dirty" } else { "" });
    }
    // A new commit, a staged change or an edited source builds this again.
    for path in [".git/HEAD", ".git/index", "src"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
