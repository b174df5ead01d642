//! Resuming a session in Pi from bonsai (`P`): the picker's selection, a search hit's session,
//! or the open session. How bonsai hands over depends on where it runs (see [`Handover`]).

use super::App;
use crate::store::resume::PiRun;
use crate::ui::component::{Handover, Terminal};
use std::path::Path;

impl App {
    /// Ask the event loop to run Pi on `path`, from the session's own folder.
    pub(super) fn resume_in_pi(&mut self, path: &Path) {
        // The folder Pi runs in: from the listing or the open session (the update reads no
        // file; every session P can be pressed on is one of them).
        let listed = self
            .parts
            .picker
            .as_ref()
            .and_then(|p| p.sessions.iter().find(|s| s.path == path))
            .map(|s| s.cwd.clone());
        let cwd = listed.or_else(|| {
            (self.doc.path.as_deref() == Some(path))
                .then(|| self.doc.session.header.cwd.clone())
                .flatten()
        });
        let run = PiRun::for_session(path, cwd.as_deref(), &self.setup.settings, &self.outside.cwd);
        let handover = match (&self.outside.pi_switch_file, self.outside.resume_ends_bonsai) {
            (Some(f), _) => Handover::SwitchPi(f.clone()),
            (None, true) => Handover::End,
            (None, false) => Handover::Return,
        };
        self.effects.push(Terminal::ResumeInPi { run, handover });
    }

    /// The picker on every project's sessions, only those `query` matched, for `bonsai
    /// resume`: P resumes the one chosen (and ends bonsai).
    pub(crate) fn open_picker_to_resume(&mut self, query: &str, matched: Vec<std::path::PathBuf>) {
        self.outside.resume_ends_bonsai = true;
        self.open_picker_listing(true);
        if let Some(p) = &mut self.parts.picker {
            p.only = Some((query.to_string(), matched));
        }
        self.log.status = Some(format!(
            "sessions matching \"{query}\": P resumes one in Pi, enter opens it in bonsai"
        ));
    }

    /// How many sessions the open picker lists (benchmarks check the listing arrived).
    pub fn picker_listed(&self) -> Option<usize> {
        self.parts.picker.as_ref().map(|p| p.sessions.len())
    }

    /// Back from Pi: say how it ended; the listing is read again (Pi wrote to a session), and
    /// the open session follows what Pi appended as it does while Pi runs.
    pub(super) fn pi_exited(&mut self, said: String) {
        self.log.status = Some(said);
        if let Some(all) = self.parts.picker.as_ref().map(|p| p.all) {
            self.start_listing(all);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ui::action::Action;
    use crate::ui::app::tests::temp_copy;
    use crate::ui::component::{Handover, Terminal};
    use crate::ui::tests::app_for;
    use crate::ui::tests::shift;

    #[test]
    fn p_hands_the_open_session_to_pi_from_its_folder() {
        let (_d, p) = temp_copy("split-turn.jsonl");
        let mut a = app_for(&p);
        a.handle_key(shift('P'));
        let effects = a.take_effects();
        let [Terminal::ResumeInPi { run, handover }] = &effects[..] else {
            panic!("{effects:?}")
        };
        assert_eq!(*handover, Handover::Return);
        assert_eq!(
            run.argv[run.argv.len() - 2..],
            ["--session".to_string(), p.to_string_lossy().to_string()]
        );
        // The fixture's cwd (/home/user/projects/ledger) is not on this machine: said.
        assert!(run.notes.iter().any(|n| n.contains("is gone")), "{:?}", run.notes);
        // Inside Pi's /bonsai, the package switches Pi instead.
        a.outside.pi_switch_file = Some("/tmp/switch".into());
        a.handle_key(shift('P'));
        assert!(
            matches!(&a.take_effects()[..], [Terminal::ResumeInPi { handover: Handover::SwitchPi(f), .. }] if f.ends_with("switch"))
        );
        a.update(Action::PiExited("Pi exited (status 0)".into()));
        assert_eq!(a.log.status.as_deref(), Some("Pi exited (status 0)"));
    }
}
