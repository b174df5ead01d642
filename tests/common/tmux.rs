//! A tmux server of its own per test: keys in (send-keys), screens out (capture-pane).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    pub name: String,
}

impl Tmux {
    pub fn start(w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            if std::env::var("CI").is_ok() {
                panic!("tmux is required in CI");
            }
            eprintln!("tmux not installed; smoke test skipped");
            return None;
        }
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "bonsai-smoke-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let ok = Command::new("tmux")
            .args([
                "-L",
                &name,
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                "sh",
            ])
            .env("TERM", "xterm-256color")
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Some(Tmux { name })
    }
    /// Start this build's bonsai on `file` with `home` as HOME; the shell prints EXITED:<code>
    /// when it ends.
    pub fn open_bonsai(&self, home: &Path, file: &Path) {
        let bin = env!("CARGO_BIN_EXE_bonsai");
        self.send(&[
            &format!("HOME={} {bin} {}; echo EXITED:$?", home.display(), file.display()),
            "Enter",
        ]);
    }
    /// Start this build's bonsai with no argument in `project` with `home` as HOME (it opens
    /// the project's newest session, as a user typing `bonsai` there).
    pub fn open_bonsai_in(&self, home: &Path, project: &Path) {
        let bin = env!("CARGO_BIN_EXE_bonsai");
        self.send(&[
            &format!(
                "cd {} && HOME={} {bin}; echo EXITED:$?",
                project.display(),
                home.display()
            ),
            "Enter",
        ]);
    }
    pub fn send(&self, keys: &[&str]) {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.name, "send-keys", "-t", &self.name]);
        c.args(keys);
        assert!(c.status().unwrap().success());
    }
    /// Send a lone Escape and wait until `closes` (a text of the view it closes) is gone from a
    /// settled screen. A key sent before the app has read the ESC on its own arrives in the
    /// same read and a terminal takes the pair for Alt+key (CI caught Esc, q as Alt+q on a
    /// loaded machine after a fixed 300 ms pause), so the next key waits for the proof.
    pub fn escape_closing(&self, closes: &str) -> String {
        self.send(&["Escape"]);
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if !screen.contains(closes) {
                std::thread::sleep(Duration::from_millis(40));
                let again = self.capture();
                if again == screen {
                    return again;
                }
                continue;
            }
            if start.elapsed() > Duration::from_secs(10) {
                panic!("Escape did not close {closes:?}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    pub fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.name, "capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }
    pub fn wait_for(&self, what: &str) -> String {
        self.wait_for_all(&[what])
    }
    /// The first screen holding any one of `what` (a frame that may be skipped, or the next).
    #[allow(dead_code)]
    pub fn wait_for_any(&self, what: &[&str]) -> String {
        self.poll(what, Instant::now(), |screen| what.iter().any(|w| screen.contains(w)))
    }
    /// The first settled screen holding every one of `what`: the same on two captures 40 ms
    /// apart, because tmux can be captured between the chunks of one frame (CI caught the
    /// detail pane of a new frame above the picker's old rows). A screen that keeps changing
    /// while it holds them is taken after a second.
    pub fn wait_for_all(&self, what: &[&str]) -> String {
        let start = Instant::now();
        let mut held_since: Option<Instant> = None;
        loop {
            let screen = self.wait_for_all_now(what, start);
            let since = *held_since.get_or_insert_with(Instant::now);
            std::thread::sleep(Duration::from_millis(40));
            let again = self.capture();
            if again == screen || (since.elapsed() > Duration::from_secs(1) && what.iter().all(|w| again.contains(w))) {
                return again;
            }
        }
    }
    /// The first screen holding every one of `what`, settled or not: for a frame that is
    /// shown only for a moment (a big session's loading frame).
    pub fn wait_for_all_now(&self, what: &[&str], start: Instant) -> String {
        self.poll(what, start, |screen| what.iter().all(|w| screen.contains(w)))
    }
    /// The first screen `done` takes, captured every 50 ms for up to 10 s from `start`.
    fn poll(&self, what: &[&str], start: Instant, done: impl Fn(&str) -> bool) -> String {
        loop {
            let screen = self.capture();
            if done(&screen) {
                return screen;
            }
            if start.elapsed() > Duration::from_secs(10) {
                panic!("timed out waiting for {what:?}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.name, "kill-server"]).status();
    }
}
