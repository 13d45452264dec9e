//! Records the compiler version, which a dynamically loaded plugin must share with its
//! host (Rust has no stable ABI).
fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TRLVR_RUSTC_VERSION={}", version.trim());
    // What a plugin that runs tensor code must share with its host besides the compiler:
    // trlvr's version, its features (backends), the profile and the target.
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(str::to_lowercase))
        .collect();
    features.sort();
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    println!(
        "cargo:rustc-env=TRLVR_BUILD_ID={} {} [{}] {} {}",
        var("CARGO_PKG_VERSION"),
        version.trim(),
        features.join(","),
        var("PROFILE"),
        var("TARGET")
    );
    println!("cargo:rerun-if-env-changed=RUSTC");
}
