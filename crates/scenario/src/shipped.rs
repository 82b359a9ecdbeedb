//! The library of kernel paths smpsim ships (`scenarios/lib/`), compiled
//! into the program so that any scenario can include a file of it by name,
//! `include = ["lib:futex.toml"]`, wherever the scenario lives: a scenario
//! reads no file outside its own directory tree (`access`), and the shipped
//! library is part of smpsim, not a file it reads. Errors in it point at
//! `scenarios/lib/NAME`. A test keeps this table equal to the directory.

/// How an `include` names a shipped file.
pub const PREFIX: &str = "lib:";

/// Every file of `scenarios/lib/`, by name, with its text.
pub const FILES: &[(&str, &str)] = &[
    (
        "epoll.toml",
        include_str!("../../../scenarios/lib/epoll.toml"),
    ),
    (
        "eventfd.toml",
        include_str!("../../../scenarios/lib/eventfd.toml"),
    ),
    (
        "fault.toml",
        include_str!("../../../scenarios/lib/fault.toml"),
    ),
    (
        "flock.toml",
        include_str!("../../../scenarios/lib/flock.toml"),
    ),
    (
        "fork.toml",
        include_str!("../../../scenarios/lib/fork.toml"),
    ),
    (
        "futex.toml",
        include_str!("../../../scenarios/lib/futex.toml"),
    ),
    (
        "hotplug.toml",
        include_str!("../../../scenarios/lib/hotplug.toml"),
    ),
    (
        "membarrier.toml",
        include_str!("../../../scenarios/lib/membarrier.toml"),
    ),
    ("mm.toml", include_str!("../../../scenarios/lib/mm.toml")),
    (
        "munmap.toml",
        include_str!("../../../scenarios/lib/munmap.toml"),
    ),
    (
        "pipe.toml",
        include_str!("../../../scenarios/lib/pipe.toml"),
    ),
    ("rcu.toml", include_str!("../../../scenarios/lib/rcu.toml")),
    (
        "sched.toml",
        include_str!("../../../scenarios/lib/sched.toml"),
    ),
    ("sem.toml", include_str!("../../../scenarios/lib/sem.toml")),
    (
        "signal.toml",
        include_str!("../../../scenarios/lib/signal.toml"),
    ),
    (
        "syscall.toml",
        include_str!("../../../scenarios/lib/syscall.toml"),
    ),
    (
        "unix.toml",
        include_str!("../../../scenarios/lib/unix.toml"),
    ),
];

/// The shipped file `name` (`futex.toml`): the path errors show, and its text.
pub fn get(name: &str) -> Option<(String, &'static str)> {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| (format!("scenarios/lib/{n}"), *text))
}

/// The names of the shipped files.
pub fn names() -> Vec<&'static str> {
    FILES.iter().map(|(n, _)| *n).collect()
}
