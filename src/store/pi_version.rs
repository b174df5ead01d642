//! Which Pi release bonsai follows: the `--pi-version` flag, then `$BONSAI_PI_VERSION`, then
//! `bonsai.piVersion` in Pi's settings, then the Pi the user runs (the `pi` on PATH, read from
//! its package's `package.json`), else the newest release bonsai knows. Decided once per
//! process (by the CLI or the TUI); every session the store loads is read as it.

use crate::engine::load::pi_version::PiVersion;
use crate::engine::settings::Settings;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The release followed, where that came from, and a note when it is not the one asked for
/// (an unknown version mapped to the nearest below, or none found).
#[derive(Debug, Clone, PartialEq)]
pub struct Followed {
    pub version: PiVersion,
    /// `--pi-version`, `BONSAI_PI_VERSION`, `bonsai.piVersion`, `pi on PATH (…)`, or
    /// `newest known`.
    pub source: String,
    pub note: Option<String>,
}

static FOLLOWED: OnceLock<Followed> = OnceLock::new();

/// A flag, variable or setting whose value is not a Pi version.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChoiceError {
    /// `given_in` (the flag, the variable or the setting) holds text that is no version.
    #[error("{given_in}: {version}")]
    NotAVersion {
        given_in: String,
        version: crate::engine::load::pi_version::NotAVersion,
    },
    /// `bonsai.piVersion` is not text.
    #[error("bonsai.piVersion is {0}: expected a version like \"1.5.2\"")]
    SettingNotText(serde_json::Value),
}

/// Decide the release to follow. `Err` names a flag, variable or setting whose value is not a
/// version.
pub fn decide(flag: Option<&str>, settings: &Settings) -> Result<Followed, ChoiceError> {
    let from = |text: &str, source: String| -> Result<Followed, ChoiceError> {
        match PiVersion::nearest(text) {
            Ok((version, note)) => Ok(Followed { version, source, note }),
            Err(version) => Err(ChoiceError::NotAVersion {
                given_in: source,
                version,
            }),
        }
    };
    if let Some(f) = flag {
        return from(f, "--pi-version".into());
    }
    if let Some(v) = std::env::var("BONSAI_PI_VERSION").ok().filter(|v| !v.trim().is_empty()) {
        return from(&v, "BONSAI_PI_VERSION".into());
    }
    if let Some(v) = settings.pi_version_setting() {
        return match v {
            Ok(text) => from(&text, "bonsai.piVersion".into()),
            Err(value) => Err(ChoiceError::SettingNotText(value)),
        };
    }
    match pi_on_path() {
        Some((path, Some(version))) => from(&version, format!("pi on PATH ({})", path.display())),
        Some((path, None)) => Ok(Followed {
            version: PiVersion::NEWEST,
            source: "newest known".into(),
            note: Some(format!(
                "cannot tell which Pi {} is (no package.json of Pi's found beside it); following {}, the newest bonsai knows",
                path.display(),
                PiVersion::NEWEST
            )),
        }),
        None => Ok(Followed {
            version: PiVersion::NEWEST,
            source: "newest known".into(),
            note: Some(format!(
                "no `pi` on PATH and no bonsai.piVersion setting: following Pi {}, the newest bonsai knows (--pi-version or BONSAI_PI_VERSION picks another)",
                PiVersion::NEWEST
            )),
        }),
    }
}

/// Follow `f` for the rest of this process (the first call wins).
pub fn set(f: Followed) {
    let _ = FOLLOWED.set(f);
}

/// What was decided, if the CLI or the TUI has.
pub fn decided() -> Option<&'static Followed> {
    FOLLOWED.get()
}

/// The release sessions are read as: the decided one; for library use that decided nothing,
/// `$BONSAI_PI_VERSION` when it names one, else the engine's default (0.87.1).
pub fn followed() -> PiVersion {
    if let Some(f) = FOLLOWED.get() {
        return f.version;
    }
    std::env::var("BONSAI_PI_VERSION")
        .ok()
        .and_then(|v| PiVersion::nearest(&v).ok())
        .map(|(v, _)| v)
        .unwrap_or_default()
}

/// The `pi` program on PATH and the version of the Pi package it runs, when it can be told:
/// the link is followed to Pi's script, and the folders above it are searched for the
/// `package.json` of `@earendil-works/pi-coding-agent`.
pub fn pi_on_path() -> Option<(PathBuf, Option<String>)> {
    let path = std::env::var_os("PATH")?;
    let exe = std::env::split_paths(&path)
        .map(|d| d.join("pi"))
        .find(|p| p.is_file())?;
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    Some((exe, package_version(&real)))
}

/// A `package.json`'s text when it is a regular file, opened without waiting on a FIFO.
fn read_package_json(p: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    Some(text)
}

fn package_version(script: &Path) -> Option<String> {
    for dir in script.ancestors().skip(1).take(8) {
        let Some(text) = read_package_json(&dir.join("package.json")) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if v.get("name").and_then(|n| n.as_str()) == Some("@earendil-works/pi-coding-agent") {
            return v.get("version").and_then(|x| x.as_str()).map(String::from);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_of_pis_package_is_found_above_its_script() {
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("node_modules/@earendil-works/pi-coding-agent");
        std::fs::create_dir_all(pkg.join("dist/bundle")).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name": "@earendil-works/pi-coding-agent", "version": "1.5.2"}"#,
        )
        .unwrap();
        // A package.json of something else on the way up is not Pi's.
        std::fs::write(
            pkg.join("dist/package.json"),
            r#"{"name": "other", "version": "9.9.9"}"#,
        )
        .unwrap();
        std::fs::write(pkg.join("dist/bundle/cli.js"), "").unwrap();
        assert_eq!(
            package_version(&pkg.join("dist/bundle/cli.js")).as_deref(),
            Some("1.5.2")
        );
        assert_eq!(package_version(&d.path().join("elsewhere/cli.js")), None);
    }
}
