//! Models by Hugging Face id (`org/name`, `org/name@revision`), found in the local Hugging
//! Face cache where `huggingface-cli download` / `hf download` and transformers put them:
//! `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`; inside it
//! `models--org--name/snapshots/<commit>/`, the commit read from `refs/<revision>`
//! (`main` by default) or given as a commit hash. The model is that folder (a `config.json`
//! in it) or its one `.gguf` file. With the `hub-download` feature a model missing from
//! the cache is downloaded into it first (the `hf-hub` crate, the layout `hf download`
//! writes), unless `HF_HUB_OFFLINE` is set; without it nothing is downloaded here.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The hub cache folder this process would use.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("HF_HUB_CACHE")
        .or_else(|| var("HF_HOME").map(|home| home.join("hub")))
        .or_else(|| var("XDG_CACHE_HOME").map(|cache| cache.join("huggingface/hub")))
        .or_else(|| var("HOME").map(|home| home.join(".cache/huggingface/hub")))
}

/// Whether `spec` reads as a hub id: `org/name` (or `org/name@revision`), each part of
/// letters, digits, `-`, `_` and `.`, and not a path that exists.
pub fn is_hub_id(spec: &str) -> bool {
    let id = spec.split_once('@').map_or(spec, |(id, _)| id);
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    matches!(id.split_once('/'), Some((org, name)) if part(org) && part(name)) && !Path::new(spec).exists()
}

/// The snapshot folder of hub id `spec` in the cache `cache`.
///
/// # Errors
/// [`Error::Hub`] naming the folder looked in and how to fill it, when the model,
/// the revision or its snapshot is not there.
pub fn resolve_in(cache: &Path, spec: &str) -> Result<PathBuf> {
    let (id, revision) = spec.split_once('@').unwrap_or((spec, "main"));
    let repo = cache.join(format!("models--{}", id.replace('/', "--")));
    let missing = |what: String| {
        Error::Hub(format!(
            "{what}; download it into the Hugging Face cache first (`hf download {id}`, or \
             `huggingface-cli download {id}`; HF_HOME / HF_HUB_CACHE choose the cache{})",
            if cfg!(feature = "hub-download") { "" } else { "; or build trlvr with --features hub-download" }
        ))
    };
    if !repo.is_dir() {
        return Err(missing(format!(
            "{id} is not a local path, and not in the Hugging Face cache {}",
            cache.display()
        )));
    }
    let is_commit = revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit());
    let commit = if is_commit {
        revision.to_string()
    } else {
        let reference = repo.join("refs").join(revision);
        std::fs::read_to_string(&reference)
            .map_err(|_| missing(format!("{id} has no revision {revision:?} in {}", repo.display())))?
            .trim()
            .to_string()
    };
    let snapshot = repo.join("snapshots").join(&commit);
    if snapshot.join("config.json").is_file() {
        return Ok(snapshot);
    }
    // A GGUF repository: one `.gguf` file in the snapshot is the model.
    let ggufs: Vec<PathBuf> = std::fs::read_dir(&snapshot)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    match ggufs.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(missing(format!(
            "{id} at {revision} ({commit}): no config.json nor .gguf file in {}",
            snapshot.display()
        ))),
        _ => Err(Error::Hub(format!(
            "{id} at {revision}: {} .gguf files in {}; name one by its path",
            ggufs.len(),
            snapshot.display()
        ))),
    }
}

/// [`resolve_in`] the cache this process would use ([`cache_dir`]); with the
/// `hub-download` feature, a model missing there is first downloaded from `$HF_ENDPOINT`
/// (default `https://huggingface.co`, token from `$HF_TOKEN`) unless `$HF_HUB_OFFLINE` is set.
///
/// # Errors
/// As [`resolve_in`]; also when no cache folder can be named (no `HOME`), and with
/// `hub-download` when the download fails.
pub fn resolve(spec: &str) -> Result<PathBuf> {
    let cache = cache_dir().ok_or_else(|| {
        Error::Hub(format!("{spec}: no Hugging Face cache folder (set HF_HOME or HF_HUB_CACHE)"))
    })?;
    #[cfg(feature = "hub-download")]
    if resolve_in(&cache, spec).is_err() && !offline() {
        let endpoint = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
        download(&cache, &endpoint, spec, std::env::var("HF_TOKEN").ok())?;
    }
    resolve_in(&cache, spec)
}

/// `HF_HUB_OFFLINE` set to anything but `0`/`false`/empty, as huggingface_hub reads it.
#[cfg(feature = "hub-download")]
fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .is_ok_and(|v| !matches!(v.trim().to_lowercase().as_str(), "" | "0" | "false"))
}

/// The files of a repository a model needs: every top-level `.json`, `.jinja`,
/// `.safetensors` and `.txt` file (config, tokenizer, chat template, shards and their
/// index, merges), or its one `.gguf` file when it has no safetensors; not other weight
/// formats nor the card.
#[cfg_attr(not(feature = "hub-download"), allow(dead_code))]
fn wanted(files: &[String]) -> std::result::Result<Vec<String>, String> {
    let has = |ext: &str| files.iter().any(|f| f.ends_with(ext));
    if has(".safetensors") {
        let keep = [".json", ".jinja", ".safetensors", ".txt"];
        let top = |f: &&String| !f.contains('/') && keep.iter().any(|e| f.ends_with(e));
        return Ok(files.iter().filter(top).cloned().collect());
    }
    let ggufs: Vec<String> = files.iter().filter(|f| f.ends_with(".gguf")).cloned().collect();
    match ggufs.len() {
        1 => Ok(ggufs),
        0 => Err("no .safetensors nor .gguf file".into()),
        n => Err(format!(
            "{n} .gguf files ({}); download the one you want with `hf download <id> <file>`",
            ggufs.join(", ")
        )),
    }
}

/// Downloads the model files of hub id `spec` ([`wanted`]) from `endpoint` into the hub
/// cache `cache`, in the layout `hf download` writes (blobs, the snapshot, the ref).
///
/// # Errors
/// [`Error::Hub`] naming the id and what failed.
#[cfg(feature = "hub-download")]
pub fn download(cache: &Path, endpoint: &str, spec: &str, token: Option<String>) -> Result<()> {
    use hf_hub::api::sync::ApiBuilder;
    use hf_hub::{Cache, Repo, RepoType};
    use std::io::IsTerminal;

    let (id, revision) = spec.split_once('@').unwrap_or((spec, "main"));
    let failed = |e: &dyn std::fmt::Display| Error::Hub(format!("downloading {spec} from {endpoint}: {e}"));
    // The token `hf auth login` saved beside the cache, unless one is given.
    let mut builder = ApiBuilder::from_cache(Cache::new(cache.to_path_buf()))
        .with_endpoint(endpoint.to_string())
        .with_progress(std::io::stderr().is_terminal());
    if token.is_some() {
        builder = builder.with_token(token);
    }
    let api = builder.build().map_err(|e| failed(&e))?;
    let repo = api.repo(Repo::with_revision(id.to_string(), RepoType::Model, revision.to_string()));
    let info = repo.info().map_err(|e| failed(&e))?;
    let files: Vec<String> = info.siblings.into_iter().map(|s| s.rfilename).collect();
    let chosen = wanted(&files).map_err(|e| failed(&e))?;
    eprintln!("downloading {spec} ({} files) from {endpoint} into {}", chosen.len(), cache.display());
    for file in &chosen {
        repo.download(file).map_err(|e| failed(&format!("{file}: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache with one model at two commits, `main` pointing at the second.
    fn cache() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trlvr-hub-{}", std::process::id()));
        let repo = dir.join("models--Org--tiny-model");
        for commit in ["a".repeat(40), "b".repeat(40)] {
            let snapshot = repo.join("snapshots").join(&commit);
            std::fs::create_dir_all(&snapshot).unwrap();
            std::fs::write(snapshot.join("config.json"), "{}").unwrap();
        }
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "b".repeat(40)).unwrap();
        dir
    }

    #[test]
    fn ids_resolve_to_the_snapshot_of_their_revision() {
        let dir = cache();
        let snapshots = dir.join("models--Org--tiny-model/snapshots");
        assert_eq!(resolve_in(&dir, "Org/tiny-model").unwrap(), snapshots.join("b".repeat(40)));
        let pinned = format!("Org/tiny-model@{}", "a".repeat(40));
        assert_eq!(resolve_in(&dir, &pinned).unwrap(), snapshots.join("a".repeat(40)));
        for (spec, says) in [
            ("Org/other", "not in the Hugging Face cache"),
            ("Org/tiny-model@v2", "no revision \"v2\""),
            (&format!("Org/tiny-model@{}", "c".repeat(40)), "no config.json nor .gguf"),
        ] {
            let e = resolve_in(&dir, spec).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("hf download"), "{spec}: {e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_org_slash_name_reads_as_an_id() {
        for spec in ["HuggingFaceTB/SmolLM2-135M-Instruct", "Qwen/Qwen3-4B-Instruct-2507@main"] {
            assert!(is_hub_id(spec), "{spec}");
        }
        for spec in ["runs/x/y", "./a/b", "/abs/path", "model.gguf", "~/m/n", "a/.b", "smollm2-135m", "a b/c"]
        {
            assert!(!is_hub_id(spec), "{spec}");
        }
        // A local folder of that shape is a path (the tests run in the crate's folder).
        assert!(Path::new("tests/fixtures").is_dir() && !is_hub_id("tests/fixtures"));
    }

    #[test]
    fn a_repository_s_model_files_are_chosen_by_format() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let shards = names(&[
            "config.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "merges.txt",
            "chat_template.jinja",
            "model.gguf",
            "README.md",
            "onnx/model.onnx",
            "onnx/config.json",
        ]);
        // The first six: not the GGUF beside the shards, the card, nor a subfolder's files.
        assert_eq!(wanted(&shards).unwrap(), shards[..6].to_vec());
        assert_eq!(wanted(&names(&["a.Q4.gguf", "README.md"])).unwrap(), names(&["a.Q4.gguf"]));
        assert!(wanted(&names(&["a.Q4.gguf", "a.Q8.gguf"])).unwrap_err().contains("2 .gguf files"));
        assert!(wanted(&names(&["pytorch_model.bin"])).unwrap_err().contains("no .safetensors"));
    }
}
