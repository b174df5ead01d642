//! Pinned sessions: bonsai's own file under Pi's agent directory
//! (`<agentDir>/bonsai/pins.json`, `{"pinned": [path, …]}`), never a session file. Written
//! whole through a temporary file and a rename, so a kill leaves the old list or the new one.

use std::path::{Path, PathBuf};

/// Where the pins are kept.
pub fn pins_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join("bonsai").join("pins.json")
}

/// The pinned session paths (none when the file is missing or unreadable).
pub fn load(agent_dir: &Path) -> Vec<PathBuf> {
    super::private::read(&pins_file(agent_dir))
        .ok()
        .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("pinned")?
                .as_array()
                .map(|a| a.iter().filter_map(|p| p.as_str().map(PathBuf::from)).collect())
        })
        .unwrap_or_default()
}

/// Pin `session` (or unpin it when it is pinned); returns the new list.
pub fn toggle(agent_dir: &Path, session: &Path) -> std::io::Result<Vec<PathBuf>> {
    // Under the file's lock: two bonsai pinning at once each keep the other's pin.
    super::private::locked(&pins_file(agent_dir), || {
        let mut pins = load(agent_dir);
        match pins.iter().position(|p| p == session) {
            Some(i) => {
                pins.remove(i);
            }
            None => pins.push(session.to_path_buf()),
        }
        save(agent_dir, &pins)?;
        Ok(pins)
    })?
}

fn save(agent_dir: &Path, pins: &[PathBuf]) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(&serde_json::json!({ "pinned": pins }))?;
    text.push('\n');
    super::private::write(&pins_file(agent_dir), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_toggle_and_persist_in_bonsais_own_file() {
        let d = tempfile::tempdir().unwrap();
        assert!(load(d.path()).is_empty());
        let a = PathBuf::from("/s/a.jsonl");
        let b = PathBuf::from("/s/b.jsonl");
        assert_eq!(toggle(d.path(), &a).unwrap(), vec![a.clone()]);
        assert_eq!(toggle(d.path(), &b).unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(load(d.path()), vec![a.clone(), b.clone()]);
        assert_eq!(toggle(d.path(), &a).unwrap(), vec![b.clone()]);
        assert!(pins_file(d.path()).starts_with(d.path().join("bonsai")));
        // Nothing else is left in the folder but the lock (the temporary file was renamed).
        let mut names: Vec<_> = std::fs::read_dir(d.path().join("bonsai"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                std::ffi::OsString::from(".pins.json.lock"),
                std::ffi::OsString::from("pins.json")
            ]
        );
    }
}
