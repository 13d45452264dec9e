//! With `--features dynamic` the `trlvr` binary links trlvr (and std) as shared
//! libraries; an rpath lets it find them when run directly, not only under `cargo run`.
fn main() {
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
