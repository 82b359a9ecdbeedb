//! Runs one host test in its own process, for the signal tests:
//! `smpsim-host-test-helper TEST [--seconds S] [--cgroup CxD] [--reps N]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = smpsim_host::Options {
        allow_hotplug: true,
        ..Default::default()
    };
    let test = args.first().cloned().unwrap_or_default();
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "--seconds" => opts.seconds = args[i + 1].parse().unwrap_or(3.0),
            "--reps" => opts.reps = args[i + 1].parse().unwrap_or(5),
            "--cgroup" => {
                if let Some((c, d)) = args[i + 1].split_once('x') {
                    opts.cgroup = (c.parse().unwrap_or(0), d.parse().unwrap_or(0));
                }
            }
            _ => {}
        }
        i += 2;
    }
    match smpsim_host::run(&test, &opts) {
        Ok(r) if r.stopped_early => {
            println!("{}: {} rates, stopped early", r.test, r.rates.len());
            // As `smpsim host run`: 128 + the signal's number.
            std::process::exit(smpsim_host::cleanup::stopped_status());
        }
        Ok(r) => println!("{}: {} rates", r.test, r.rates.len()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
