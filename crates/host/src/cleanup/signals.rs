//! Terminating signals turned into a request to stop.
//!
//! SIGHUP, SIGINT, SIGTERM and SIGQUIT (and SIGPIPE while a test runs,
//! see [`catch_sigpipe`]) do not kill the process: the handler only
//! stores the signal in atomics (async-signal-safe), every test loop polls
//! [`should_stop`], the test returns early and its guards undo what it
//! changed in normal context. The command then exits with 128 + the
//! signal's number ([`stopped_status`]), as a shell reports a process the
//! signal killed. A third signal ends the process at once with that
//! status (for a test stuck in the kernel); what it leaves is in the state
//! record, and the next run restores it.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
/// The first signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static COUNT: AtomicU32 = AtomicU32::new(0);

/// The signals that end a run early, with its cleanup.
pub const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGQUIT];

/// Signals after which the process ends without waiting for the cleanup.
const IMPATIENT_AFTER: u32 = 3;

pub const IMPATIENT_MESSAGE: &str = "smpsim: third signal: exiting without cleanup; the next host run restores what this one changed\n";

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
    if COUNT.fetch_add(1, Ordering::SeqCst) + 1 >= IMPATIENT_AFTER {
        let msg = IMPATIENT_MESSAGE.as_bytes();
        // SAFETY: write and _exit are async-signal-safe; the buffer is static.
        unsafe {
            libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
            libc::_exit(128 + sig);
        }
    }
}

/// Installs the stop handler for `sig` unless the signal is ignored (a run
/// under `nohup` keeps ignoring SIGHUP); returns the action it replaced.
fn catch(sig: libc::c_int) -> Option<libc::sigaction> {
    // SAFETY: sigaction with valid pointers; the handler only touches
    // atomics and calls _exit.
    unsafe {
        let mut prev: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut prev);
        if prev.sa_sigaction == libc::SIG_IGN {
            return None;
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
        Some(prev)
    }
}

/// Routes SIGHUP, SIGINT, SIGTERM and SIGQUIT to the stop flag.
pub fn install_signal_handlers() {
    for sig in STOP_SIGNALS {
        catch(sig);
    }
}

/// Has a signal asked us to stop?
pub fn should_stop() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that asked us to stop, if one did.
pub fn stop_signal() -> Option<libc::c_int> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// The exit status of a command a signal stopped: 128 + its number
/// (129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 141 SIGPIPE, 143 SIGTERM).
pub fn stopped_status() -> i32 {
    128 + stop_signal().unwrap_or(libc::SIGINT)
}

/// The signal's name, for messages.
pub fn signal_name(sig: libc::c_int) -> String {
    match sig {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// While alive, SIGPIPE stops the run like the other signals (a reader
/// of our output that goes away mid-test must not skip the cleanup); on
/// drop, the disposition before comes back, so output written after the
/// test dies quietly on a closed pipe as before.
pub struct SigpipeCaught(Option<libc::sigaction>);

pub fn catch_sigpipe() -> SigpipeCaught {
    SigpipeCaught(catch(libc::SIGPIPE))
}

impl Drop for SigpipeCaught {
    fn drop(&mut self) {
        if let Some(prev) = &self.0 {
            // SAFETY: restoring the action `catch` saved.
            unsafe { libc::sigaction(libc::SIGPIPE, prev, std::ptr::null_mut()) };
        }
    }
}
