use smpsim_kernel::testkit::*;
use smpsim_kernel::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let percpu = args.get(1).map(|s| s == "percpu").unwrap_or(false);
    let ms: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut m = smpsim_machine::preset("amd-turin-384").unwrap().unwrap();
    let ncpu = m.nr_cpus() as u32;
    let mut s = spec(m.clone(), ms * 1_000_000);
    s.warmup = 20_000_000;
    s.knobs.tg_walk_cost = 150;
    let g = mutex(&mut s, "membarrier_ipi_mutex", true, false);
    let p = mutex(&mut s, "membarrier_cpu_mutexes", true, true);
    let ok = counter(&mut s, "ok");
    let h = histogram(&mut s, "sentinel");
    s.cgroups.push(CgroupDecl {
        name: "base".into(),
        parent: None,
        bandwidth: Some(Bandwidth {
            quota: 1_000_000,
            period: 5_000_000,
        }),
        generated_descendants: 12000,
    });
    let lock = if percpu {
        ObjRef {
            object: p,
            index: Some(Expr::Var(0)),
        }
    } else {
        ObjRef {
            object: g,
            index: None,
        }
    };
    let ops = vec![
        Op::SyscallEnter,
        Op::Work(Dist::Const(60)),
        Op::MutexLock(lock.clone()),
        Op::Work(Dist::Const(100)),
        Op::JumpUnless(Cond::CpuCurrSharesMm(Expr::Var(0)), 6),
        Op::SmpCallFunctionSingle {
            cpu: Expr::Var(0),
            func: Dist::Const(50),
            wait: true,
        },
        Op::MutexUnlock(lock),
        Op::Work(Dist::Const(20)),
        Op::SyscallExit,
        Op::Count(ok),
        Op::Work(Dist::Const(20)),
        Op::Jump(0),
    ];
    s.task_groups.push(TaskGroupDecl {
        name: "hammer".into(),
        placement: (0..25 * ncpu).map(|k| k % ncpu).collect(),
        policy: Policy::Normal,
        cgroup: None,
        mm: 0,
        program: Program {
            ops,
            slots: 1,
            init: vec![(
                0,
                Expr::Bin(
                    BinOp::Div,
                    Box::new(Expr::TaskIndex),
                    Box::new(Expr::Const(25)),
                ),
            )],
        },
    });
    s.task_groups.push(TaskGroupDecl {
        name: "burner".into(),
        placement: (0..50 * ncpu).map(|k| k / 50).collect(),
        policy: Policy::Normal,
        cgroup: Some(0),
        mm: 0,
        program: Program {
            ops: vec![Op::Work(Dist::Const(1_000_000)), Op::Jump(0)],
            slots: 0,
            init: vec![],
        },
    });
    s.task_groups.push(TaskGroupDecl {
        name: "sentinel".into(),
        placement: vec![0],
        policy: Policy::Fifo(20),
        cgroup: None,
        mm: 0,
        program: Program {
            ops: vec![
                Op::Sleep {
                    dist: Dist::Const(500_000),
                    overshoot: Some(h),
                },
                Op::Jump(0),
            ],
            slots: 0,
            init: vec![],
        },
    });
    let _ = &mut m;
    let t = std::time::Instant::now();
    let r = simulate(&s);
    let w = t.elapsed().as_secs_f64();
    println!(
        "percpu={percpu} ok/s={:.0} events={} stale={} wall={:.2}s ev/s={:.2}M",
        r.counters[0].rate,
        r.stats.events,
        r.stats.stale_events,
        w,
        r.stats.events as f64 / w / 1e6
    );
    println!("sentinel {:?}", r.histograms[0]);
    let tot = r.cpus.iter().fold([0u64; 5], |mut a, c| {
        a[0] += c.times.user;
        a[1] += c.times.sys;
        a[2] += c.times.spin;
        a[3] += c.times.irq;
        a[4] += c.times.idle;
        a
    });
    println!(
        "cpu user/sys/spin/irq/idle {:?}",
        tot.map(|x| x as f64 / (r.duration_ns as f64 * ncpu as f64))
    );
    println!(
        "max irq off {} max preempt off {}",
        r.cpus.iter().map(|c| c.max_irq_off_ns).max().unwrap(),
        r.cpus.iter().map(|c| c.max_preempt_off_ns).max().unwrap()
    );
    for l in &r.locks {
        println!("{:?}", l);
    }
    for g in &r.task_groups {
        println!("{} {:?}", g.name, g.total);
    }
    for f in &r.findings {
        println!("{:?}", f);
    }
    println!("{:?}", r.cfs_bandwidth);
}
