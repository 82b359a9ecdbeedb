use smpsim_kernel::testkit::*;

#[test]
fn global_mutex_runs_and_conserves_cpu_time() {
    let spec = global_mutex_bench(16, 1_000, 20_000, 50_000_000);
    let r = smpsim_kernel::simulate(&spec);
    let acquired = r.counter("acquired").unwrap().count;
    let lock = r.lock("global").unwrap();
    eprintln!("acquired {acquired} events {} lock {:?}", r.stats.events, lock);
    for cpu in &r.cpus {
        assert_eq!(cpu.times.total(), spec.duration, "cpu {} {:?}", cpu.cpu, cpu.times);
    }
    assert!(acquired > 1000);
}
