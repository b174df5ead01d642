use clap::Parser;

/// Said under every panic report: a crash is bonsai's bug, and the user should know their file
/// is safe and where to send it.
const PANIC_ADVICE: &str = "This is a bug in bonsai, not a problem with your session. Please report it on the \
pi-bonsai issue tracker with the command you ran, the output above and `bonsai --version`; attach the \
session file if you can share it. A crash cannot corrupt a session: bonsai appends whole lines only, and \
if one was being written, `bonsai repair FILE` removes what was cut short.";

fn main() -> std::process::ExitCode {
    bonsai::ui::mark_process_start();
    // Output piped into `head` must end quietly, like any Unix tool.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Errors are printed as one line, so a backtrace captured for each (what RUST_BACKTRACE=1,
    // common on Rust users' machines, asks of eyre) only costs time and memory. Panics still
    // get theirs. Set before any thread exists; an explicit RUST_LIB_BACKTRACE wins.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the process is single-threaded here.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
    use std::io::IsTerminal;
    let plain = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) || !std::io::stderr().is_terminal();
    let hook = color_eyre::config::HookBuilder::default();
    let hook = if plain {
        hook.theme(color_eyre::config::Theme::new())
    } else {
        hook
    };
    let _ = hook.display_env_section(false).panic_section(PANIC_ADVICE).install();
    // Lets the test suite see a real panic report (there is no known panic to trigger).
    if std::env::var_os("BONSAI_CRASH_FOR_TEST").is_some() {
        panic!("crash requested by BONSAI_CRASH_FOR_TEST");
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(msg) = bonsai::cli::mistyped_command(&args) {
        bonsai::cli::out::stderr(&format!("bonsai: {msg}\n"));
        return std::process::ExitCode::from(2);
    }
    let cli = bonsai::cli::Cli::parse_from(args);
    match bonsai::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            bonsai::cli::out::stderr(&format!("bonsai: {e}\n"));
            std::process::ExitCode::FAILURE
        }
    }
}
